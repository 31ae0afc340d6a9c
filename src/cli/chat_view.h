// The view of `harness chat`: what is printed from the loop's events (ChatView), what is still in
// flight (Outstanding, which the piped chat waits on between lines and the progress indicator
// shows), what orders a streamed answer after the events before its model call
// (ShownBeforeCall), and what /context and /history print from a snapshot of the loop.
//
// Contract:
// - ChatView::Show(event) prints the lines of an event of its loop (event_lines.h, with the
//   outcome of a /compact as its reply's line, a failed turn's hint, a proposal and what to do
//   with it) and updates the outstanding work; events of other loops print nothing.
// - ChatView::Follow runs until stopped or the subscription closes (a lagged one says so on
//   standard error and ends the outstanding work); a model call waiting in ShownBeforeCall
//   returns once every event published before it was shown.
// - ShowContext: the latest measurement (or the count of a loaded --history before any turn),
//   and what a compaction now would summarize and keep; ShowHistory: one line a message,
//   marked [pinned], [kept with a pin] or [masked].
// Thread safety: Outstanding and ShownBeforeCall may be used from any thread; a ChatView from
// one thread at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "chat_console.h"
#include "compaction_progress.h"
#include "event_lines.h"
#include "harness/runtime/session.h"

namespace harness::cli {

// What is still in flight, learned from the events; the piped chat waits on it between lines
// and the progress indicator shows it.
class Outstanding {
 public:
  std::mutex& mutex() { return mutex_; }
  // The caller holds mutex(): registering under the lock that event handling takes means no
  // reply can be handled before its command is known.
  void AddInputLocked(const Uuid& id) { inputs_.insert(id); }
  void AddCompactLocked(const Uuid& id) { compacts_.insert(id); }
  bool IsOurCompactLocked(const Uuid& id) const {
    return compacts_.count(id) != 0 || awaiting_.count(id) != 0;
  }
  // A proposal names these commands: they wait for the person, not the runtime, so scripted
  // input goes on (the next line is the /approve or /discard).
  void ProposedLocked(const std::vector<Uuid>& waiters) {
    for (const Uuid& id : waiters) {
      if (compacts_.erase(id) != 0)
        awaiting_.insert(id);
    }
  }

  void InputTaken(const Uuid& id) { inputs_.erase(id); }
  // A decision is on its way: the commands wait for their replies again (each proposal's command
  // is answered, whatever the decision meets: it commits, is rejected, or expired meanwhile).
  void DecidingLocked() {
    compacts_.insert(awaiting_.begin(), awaiting_.end());
    awaiting_.clear();
  }
  void CompactAnswered(const Uuid& id) {
    compacts_.erase(id);
    awaiting_.erase(id);
  }
  void TurnRunning(bool running) { turn_running_ = running; }
  void Compacting(bool compacting) { compacting_ = compacting; }
  // The loop exited, the session faulted or the events stopped: nothing more will arrive.
  void Ended() { ended_ = true; }

  // Call after every change, without the lock.
  void Changed() { changed_.notify_all(); }

  std::string_view ActivityLocked() const {
    if (compacting_)
      return "compacting";
    if (ended_)
      return "";
    if (inputs_.empty() && compacts_.empty() && !turn_running_)
      return awaiting_.empty() ? "" : "waiting for /approve or /discard";
    return "thinking";
  }

  void WaitQuiet() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] {
      return ended_ || (inputs_.empty() && compacts_.empty() && !turn_running_);
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<Uuid> inputs_;
  std::set<Uuid> compacts_;
  std::set<Uuid> awaiting_;  // our compacts whose proposal waits for /approve or /discard
  bool turn_running_ = false;
  bool compacting_ = false;
  bool ended_ = false;
};

// What keeps a streamed answer after the events that came before its model call (a pressure
// change, a compaction's lines): before each call the caller asks the printer thread, which
// shows the events, to show every event already published, and waits until it has. The
// answer's pieces are written by the calling thread; the events that end the call are published
// after it returns, so they follow its pieces.
class ShownBeforeCall {
 public:
  // Printer side. A token stopped when a caller is waiting (now or later) or `Wake` is called.
  std::stop_token Arm() {
    std::lock_guard lock(mutex_);
    wake_ = std::stop_source();
    if (requested_ > done_)
      wake_.request_stop();
    return wake_.get_token();
  }
  void Wake() {
    std::lock_guard lock(mutex_);
    wake_.request_stop();
  }
  // What the waiting callers asked for; pass it to Shown after showing every queued event.
  std::uint64_t Requested() {
    std::lock_guard lock(mutex_);
    return requested_;
  }
  void Shown(std::uint64_t requested) {
    {
      std::lock_guard lock(mutex_);
      done_ = std::max(done_, requested);
    }
    shown_.notify_all();
  }
  // The printer is gone: nobody waits for it any more.
  void End() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    shown_.notify_all();
  }

  // Caller side: returns once the events published before the call are shown, the printer has
  // ended, or `stop` is requested (the call then ends canceled on its own).
  void AwaitShown(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    const std::uint64_t ticket = ++requested_;
    wake_.request_stop();
    shown_.wait(lock, stop, [&] { return ended_ || done_ >= ticket; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any shown_;
  std::stop_source wake_;
  std::uint64_t requested_ = 0;
  std::uint64_t done_ = 0;
  bool ended_ = false;
};

// Turns the loop's events into chat output. Called from one thread at a time.
class ChatView {
 public:
  // `provider`, `compactor_provider`: whose variables a failure's hint names (failure_text.h).
  // `progress`: a model compactor's (null for the offline one); it outlives the view.
  ChatView(ChatConsole& console, Outstanding& outstanding, Uuid loop,
           const CompactionPolicy& policy, std::string provider, std::string compactor_provider,
           CompactionProgress* progress)
      : console_(console),
        outstanding_(outstanding),
        loop_(loop),
        policy_(policy),
        provider_(std::move(provider)),
        compactor_provider_(std::move(compactor_provider)),
        progress_(progress) {}

  // Whether the latest turn failed; read once the events are all shown.
  bool last_turn_failed() const { return last_turn_failed_; }

  // A resumed loop: what the events before the subscription would have told.
  void Seed(const LoopSnapshot& snapshot);

  // One event's lines, if it is of the loop.
  void Show(const Event& event);
  // Shows the loop's events until `stop` is requested or the subscription closes, and answers
  // the model calls waiting in `shown` for the events before them. Run on a thread of its own.
  void Follow(std::stop_token stop, Subscription& events, ShownBeforeCall& shown);
  // Shows what the subscription still holds (after the session was suspended).
  void ShowQueued(Subscription& events);

 private:
  std::vector<std::string> Handle(const Event& event);

  std::vector<std::string> Lines(const Event& event);

  // A masking or unmasking (docs/masking.md), with the context before and after it.
  std::string MaskLine(std::string_view what, std::size_t count, const ContextBasis& basis,
                       const ContextMeasurement& post);

  // The proposal (docs/preview.md), and what the person may do with it.
  std::vector<std::string> ProposalLinesOf(const CompactionProposed& e);

  std::vector<std::string> Committed(const MessageCommitted& e);

  ChatConsole& console_;
  Outstanding& outstanding_;
  const Uuid loop_;
  LineContext context_;           // messages_before: history_ before the event shown
  HistoryCount history_;          // the loop's history size as the events tell it
  std::string answer_;            // the turn's latest assistant text
  bool answer_streamed_ = false;  // it was shown as it streamed
  std::string outcome_;           // the last commit, for the reply that answers a /compact
  std::optional<CoverageReport> rejected_coverage_;  // of the last rejection, for its reply
  const CompactionPolicy& policy_;  // the loop's: a commit that did not pay names its targets
  const std::string provider_;
  const std::string compactor_provider_;
  CompactionProgress* const progress_;
  bool last_turn_failed_ = false;
};

// What --history loaded, counted with the loop's counter before any turn.
struct LoadedCount {
  std::size_t messages = 0;
  TokenCount tokens = 0;
  TokenCount input_limit = 0;
  CountQuality quality = CountQuality::kUnknown;
};

// /context: the latest measurement, and what a compaction now would keep (the compaction
// module's own tail selection, the same call the runtime makes).
void ShowContext(ChatConsole& console, const LoopSnapshot& snapshot, const CompactionPolicy& policy,
                 CountQuality quality, TokenCount window, const std::optional<LoadedCount>& loaded);

// A pinned message is marked "[pinned]"; a message the last commit kept only because it belongs
// to a pinned step "[kept with a pin]" (docs/pins.md).
void ShowHistory(ChatConsole& console, const LoopSnapshot& snapshot);

}  // namespace harness::cli
