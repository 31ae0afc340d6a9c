// ExtractiveCompactor: the offline compactor of docs/spec/decisions.md D6, the default where no
// provider is configured.
//
// Contract of Compact(input, stop), in order:
//   0. `stop` already requested -> kCanceled; input.Validate() fails -> kInputInvalid.
//   1. Deterministic (the same input gives the same bytes), no network, no model. It reads the
//      projected transcript (text blocks; "[called tool: NAME INPUT]" placeholders with the
//      call's JSON input, possibly cut by the projection's cap; tool messages with their
//      tool_use_id); unprojected tool_use / tool_result blocks are understood too. System
//      messages are never read (configuration, possibly private). It writes what a
//      continuation of an agent run needs:
//     goal        the first real request of the user, verbatim (white space collapsed), then
//                 "Later: …" for each later request or correction in order. A message that
//                 only points at a file ("@prompt.md do this") is joined to the next real
//                 request ("@prompt.md do this — …"), or is the goal when none follows;
//                 "continue", "keep going", greetings and thanks are never requests. Client
//                 injections (<system-reminder>, "Caveat: …", "<command-…>") are not the
//                 user's words. A fixed sentence when the user said nothing;
//     constraints the user's rule sentences ("must", "never", "don't", "always", "only",
//                 "without", "keep", "avoid", "make sure", "should", "have to", "no new", "at
//                 most", "instead of", "ask me", … or starting with "use", "prefer", "stick
//                 to", "stay", "leave", "no"), from user messages only, never from code fences,
//                 indented or code-like lines, tracebacks and log lines; and the user's answers
//                 through a question tool (AskUserQuestion, ask_followup_question, …) as
//                 "User answered: …";
//     decisions   the assistant's sentences that choose or conclude ("I'll …", "we will",
//                 "let's …", "decided", "rather than", "the issue is", "the fix is", "root
//                 cause", "turns out", …) but not exploration ("let me", "let's look",
//                 "I'll start by", "I'll check", "to understand", …) or questions; a choice
//                 stated again moves to its latest place;
//     state       an artifact ledger from tool calls and their results: files edited,
//                 created, deleted and read (from Read/Write/Edit/MultiEdit file_path,
//                 str_replace_editor command + path, apply_patch and diff headers, shell
//                 commands: cat/head/tail/sed -n read, sed -i/perl -i edit, "> f"/tee/touch/cp
//                 create, rm delete, cd joins relative paths, SWE-agent open/create/edit), a
//                 file's latest change only counting when its call did not fail; the last test
//                 run (pytest, unittest, Google Test, ctest, cargo, go test, jest: counts and
//                 failing names); each command whose last run failed, with its exit status and
//                 last error line; the latest todo list (TodoWrite, update_plan,
//                 task_tracker); errors of other tools; the commands that succeeded; and the
//                 assistant's latest statement ("Latest progress: …"). Tool output wrappers
//                 are stripped first (ANSI escapes, "OBSERVATION:", "<response clipped>",
//                 <NOTE> and <system-reminder> spans, OpenHands' working-directory and
//                 exit-code lines, Codex's {"output", "metadata"} envelope). A fixed sentence
//                 when there is nothing;
//     open items  the user's last request when no assistant text follows it, failing tests,
//                 the assistant's last stated next steps (an explicit "next step", "Next, I'll",
//                 "still need", …, or an "I'll …" / "let me …" no tool call followed), open
//                 todo items, the question the
//                 assistant asked last, tool calls without a result in the head.
//   A transcript whose first message is a summary (a user message of one text block that
//   ParseSummary accepts: the previous compaction's) carries it forward section by section: its
//   first goal item stays the goal, the rest of its goal and every new request are "Later: …"
//   (carried first), its constraints and decisions come before the new ones, its state items
//   are "Earlier: …" after the new span's tests, files and progress, its open items "Earlier:
//   …" at the end of the open items; prefixes never stack (docs/compactors.md).
// - Every piece of text is cleaned (invalid UTF-8 -> U+FFFD, characters XML forbids and runs of
//   white space -> one space) and XML-escaped (`<`, `>`, `&`). The answer fills
//   max_summary_tokens by the counter the usage reports, ceil(envelope bytes / 4), in a fixed
//   priority: the goal's first request, the state's lead (files edited, else created, else the
//   latest progress), the unanswered request, every constraint, the later requests newest
//   first, the test run and failing tests, the other files, the latest progress, failed
//   commands, next steps, todo items, open calls, the older steps and requests, failed
//   commands that only look at files, errors fixed on the way, decisions newest first, then
//   the rest of the ledger, and last the reason the agent gave for each edit told ("Edit of
//   a.py: … (The off-by-one is in the loop bound.)"), appended to its edit's item only in the
//   room left and only when no chosen item says it already. Each item has its own cap
//   (2400 bytes for the goal's first request, 200 to 1200 for the others); items are taken
//   whole while they fit, the first that does not is cut to the room left ("…") and ends the
//   selection. Each distinct piece is told once: an item whose words a chosen one holds is
//   passed over, and a rule or a choice is told in its own section, not again inside a
//   request, a step or the progress. Sections keep their own order (goal and constraints
//   chronological, decisions chronological, state by priority). The summary never exceeds
//   48 KiB. When the budget leaves no
//   room for a goal and a state of a few words, the answer is kInvalidSummary{token_limit}.
// - It answers through the same path as a model: it encodes the envelope
//   (EncodeSummaryEnvelope) with the input's identity, reports usage output_tokens =
//   ceil(envelope bytes / 4), and runs ValidateCompactionResponse on it (output byte limit
//   64 KiB, the model compactor's default); only a validated output is returned. For a valid
//   input the only failure is token_limit — unless the identity itself is absurdly long (a
//   model key of tens of KiB), which is byte_limit.
// - Secrets: a line, command, path or value is left out whole when it assigns a
//   credential-like name (a word containing key, token, secret, password, passwd, pwd,
//   credential, auth, cookie or session followed by '=' or ':' and a value, or a
//   "--token VALUE"-style flag), holds a well-known token shape ("sk-…", "ghp_…", "gho_…",
//   "github_pat_…", "glpat-…", "xoxb-…", "AKIA…", "AIza…", "Bearer …", "Basic …"), a password
//   in a URL ("https://user:pass@host"), or lies in a "-----BEGIN … -----END" block.
//   Mentioning a secret ("never log the API key") is not one.
// - Cost: linear in the transcript's size; on a 250-message, 152k-token agent transcript about
//   5 ms and 1.4 MiB (release build; bench/compaction_bench.cc, docs/benchmarks.md).
// Thread safety: stateless; Compact may be called concurrently.
#pragma once

#include "harness/compaction/compactor.h"

namespace harness {

class ExtractiveCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
};

}  // namespace harness
