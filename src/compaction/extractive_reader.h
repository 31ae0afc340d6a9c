// The extractive compactor's reader: one pass over a transcript into an Extract, what the
// transcript says as clean (unescaped, unbounded) items and an artifact ledger, before any
// ranking or budget.
//
// Contract of ReadTranscript(transcript):
// - System messages are never read. A first message that is a summary (extractive_carried.h),
//   and any later carried summary a client embedded, is carried: its rules and choices join
//   this run's, the first gives the task.
// - User messages (ReadUserText, content/user_text.h: client notices skipped, project
//   instructions kept apart) give the first request and the later ones, the unanswered one,
//   the user's rules (outside code fences and code-like lines) and the steps; greetings and
//   nudges are no requests, a pointer message joins the next request.
// - Assistant messages give decisions (a choice stated again moves to its latest place), the
//   question awaiting the user, the latest progress, and the next steps of the last one.
// - Tool calls (blocks, projected "[called tool: NAME INPUT]" placeholders, and SWE-agent's
//   fenced commands) are matched to their results by id, else in order; each result feeds the
//   ledger (extractive_calls.h, extractive_tool_output.h), the user's answers to a question
//   tool, a task source's rules, sub-agents' reports. A call without a result is an open call.
// - Salience (compaction/salience.h) observes every text with the weight of its place.
// - Linear in the transcript's size; no recursion beyond the validated nesting of results.
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "compaction/extractive_carried.h"
#include "compaction/extractive_ledger.h"
#include "compaction/salience.h"
#include "harness/content/message.h"

namespace harness::extractive_detail {

struct Dated {
  std::string text;
  std::size_t at = 0;  // message index
};

// One user request and what the assistant said at its end: a subtask and what it established.
struct Step {
  std::string request;
  std::size_t at = 0;
  // The assistant's last two texts of the step, oldest first, without the sentences that say
  // nothing (IsFiller: lead-ins, hedges, a few words), cut to a bound.
  std::vector<std::string> answers;
  // When the last answer is a list: the lead of each item (ListPoints), for a step told shorter
  // than its answer.
  std::vector<std::string> points;
  std::size_t answered_at = 0;  // the message of the last answer
};

struct Extract {
  std::optional<CarriedSummary> carried;  // the summary the transcript starts with
  std::optional<Dated> first_request;
  std::vector<Dated> later_requests;
  std::string pointer;               // a pointer message seen before the first real request
  std::string fallback_goal;         // any user words at all
  std::string project_instructions;  // the latest AGENTS.md a client read to the model
  std::vector<std::string> constraints;
  std::vector<Dated> decisions;  // a choice stated again moves to its latest place
  std::optional<Dated> unanswered;
  std::vector<std::string> next_steps;
  std::string awaiting;  // the assistant's question, when it spoke last
  std::string latest_progress;
  std::size_t latest_progress_at = 0;  // its message
  std::vector<std::string> open_calls;
  Ledger ledger;
  SalienceLedger salience;
  std::vector<Step> steps;
  std::vector<Dated> reports;  // what sub-agents reported back, the newest last
};

Extract ReadTranscript(const Transcript& transcript);

}  // namespace harness::extractive_detail
