// CompactionProgress: what `harness compact` and `harness chat` show while a model compactor
// works, so that a person waiting on a slow summarizer sees it move (docs/cli.md, "Progress").
//
// Contract:
// - Sink() counts the pieces of text the compactor's model streams; a piece is about one token
//   (providers stream a token or a few per event), so the count is shown as "~N tokens".
// - In place (the output is a terminal that takes escapes, terminal_text.h RewritesInPlace):
//   from the attempt's start to its end one line, "compacting with openai/gpt-4o-mini: 12.3 s,
//   ~340 tokens streamed, chunk 2 of 3" (the chunk once the first chunk is summarized): Status().
// - Otherwise one line per stage: "compacting with X: started", "compacting with X: chunk 1 of
//   3 summarized after 4.1 s, ~120 tokens streamed", "compacting with X: done after 12.3 s, ~340
//   tokens streamed": what Stage(event) returns.
// - Stage(event) takes the loop's events: CompactionStarted starts, CompactionChunkSummarized is
//   a stage, CompactionCommitted, CompactionRejected and CompactionProposed end.
// - Output kStandardError (`harness compact`): Show(event) is Stage with its line written on
//   standard error, and in place the line is drawn there, rewritten every 200 ms, erased before
//   any other output (Print) and when the attempt ends. Output kHost (`harness chat`): nothing is
//   written; the owner prints Stage's lines and draws Status() (ChatConsole::SetStatus).
// Proof: tests/e2e/compact_cli_test.cc (AModelCompactionShowsItsStagesOnStandardError),
// tests/e2e/chat_tmux_test.cc (ACompactionAtATerminalShowsOneLineRewrittenInPlace,
// AChatCompactionAtATerminalShowsTheProgressLine), tests/e2e/chat_cli_test.cc
// (APipedChatShowsAModelCompactionsStages).
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "harness/core/env.h"
#include "harness/event/event.h"
#include "harness/inference/client.h"

namespace harness::cli {

class CompactionProgress {
 public:
  enum class Output : std::uint8_t {
    kStandardError,  // writes and draws on standard error itself
    kHost,           // writes nothing: the owner shows Stage's lines and Status()
  };

  // `compactor`: the name shown ("openai/gpt-4o-mini"); `env`: the clock, outlives this.
  CompactionProgress(std::string compactor, bool in_place, const Env& env,
                     Output output = Output::kStandardError);
  ~CompactionProgress();
  CompactionProgress(const CompactionProgress&) = delete;
  CompactionProgress& operator=(const CompactionProgress&) = delete;

  TextDeltaSink Sink();
  // The stage line `event` makes (without a newline), shown one line per stage; none in place.
  std::optional<std::string> Stage(const Event& event);
  // Stage, its line written on standard error (the in-place line erased at the attempt's end).
  void Show(const Event& event);
  // The in-place line while an attempt runs; none between attempts.
  std::optional<std::string> Status() const;
  // Runs `print` with the in-place line erased (it is drawn again at the next tick).
  void Print(const std::function<void()>& print);

 private:
  std::string StatusLocked(std::chrono::steady_clock::time_point now) const;
  std::optional<std::string> StageLocked(const Event& event);
  void EraseLocked();
  void Tick(std::stop_token stop);

  const std::string compactor_;
  const bool in_place_;
  const Env& env_;
  std::shared_ptr<std::atomic<std::uint64_t>> pieces_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::optional<std::chrono::steady_clock::time_point> started_;  // while an attempt runs
  std::optional<std::pair<std::uint32_t, std::uint32_t>> chunk_;  // summarized so far, of n
  bool drawn_ = false;
  std::jthread ticker_;  // last: stopped and joined first
};

// "openai:gpt-4o-mini" -> "openai/gpt-4o-mini", "scripted:/a/b.json" -> "scripted/b.json" (the
// model key MakeModelClient gives it, model_factory.h); anything else as it is.
std::string CompactorDisplayName(std::string_view spec);

}  // namespace harness::cli
