// Session's command routing: each control finds its loop under the registry lock, journals its
// intent where it has one, and posts it to the loop's actor (runtime/loop.h), which decides.
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/runtime/session.h"
#include "runtime/loop.h"
#include "runtime/session_core.h"
#include "runtime/session_probe.h"

namespace harness {

using runtime_detail::Journalable;
using runtime_detail::LoopActor;
using runtime_detail::SessionCore;
using runtime_detail::SystemPromptProblem;

namespace {

// The registry checks every command shares (after the fault latch): not found, exited.
Result<std::shared_ptr<LoopActor>, SessionError> FindLoop(SessionCore& core, const Uuid& loop) {
  auto it = core.loops.find(loop);
  if (loop.IsZero() || it == core.loops.end()) {
    return Fail(SessionError{SessionErrorKind::kLoopNotFound, ""});
  }
  return it->second;
}

// Hands `post` loop `loop`'s actor once it is found, `unfit` finds nothing against it and it is
// not exiting (under the registry lock); a refusal goes to `done` outside the lock.
template <class T, class Unfit, class Post>
void OnLoopIf(SessionCore& core, const Uuid& loop, SessionDone<T>& done, Unfit unfit, Post post) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core.registry_mutex);
    auto actor = FindLoop(core, loop);
    if (!actor) {
      refused = actor.error();
    } else if (auto why = unfit(**actor)) {
      refused = std::move(why);
    } else if ((*actor)->exiting) {
      refused = SessionError{SessionErrorKind::kLoopExited, ""};
    } else {
      post(**actor);
      return;
    }
  }
  done(Fail(std::move(*refused)));
}

// OnLoopIf for the compaction controls: the loop must have a compaction policy. `what` names the
// control in the refusal of a loop without one.
template <class T, class Post>
void OnCompactableLoop(SessionCore& core, const Uuid& loop, std::string_view what,
                       SessionDone<T>& done, Post post) {
  const auto unfit = [what](const LoopActor& actor) -> std::optional<SessionError> {
    if (actor.compactable())
      return std::nullopt;
    return SessionError{SessionErrorKind::kCompactionUnsupported,
                        "the loop has no compaction policy, so nothing to " + std::string(what)};
  };
  OnLoopIf(core, loop, done, unfit, std::move(post));
}

// OnLoopIf for the controls of a native loop, after the fault latch; `foreign` says why a foreign
// loop is refused.
template <class T, class Post>
void OnNativeLoop(SessionCore& core, const Uuid& loop, std::string_view foreign,
                  SessionDone<T>& done, Post post) {
  if (auto refused = core.Refusal())
    return done(Fail(std::move(*refused)));
  const auto unfit = [foreign](const LoopActor& actor) -> std::optional<SessionError> {
    if (actor.kind() == LoopKind::kNative)
      return std::nullopt;
    return SessionError{SessionErrorKind::kInvalidArgument, std::string(foreign)};
  };
  OnLoopIf(core, loop, done, unfit, std::move(post));
}

// The blocking form of an asynchronous control: starts it with a callback that fulfils a promise,
// and waits for it.
template <class T, class Start>
Result<T, SessionError> Await(Start start) {
  auto promise = std::make_shared<std::promise<Result<T, SessionError>>>();
  auto future = promise->get_future();
  start([promise](Result<T, SessionError> outcome) { promise->set_value(std::move(outcome)); });
  return future.get();
}

// Journals a command's intent (under the registry lock). When the journal fails, the session is
// faulted and the target loop stops as if its own append had failed (docs/spec/runtime.md §2): a
// faulted session writes nothing more for it, so its journal stays restorable as it was.
Status<SessionError> JournalIntentFor(SessionCore& core, LoopActor& actor, const Command& command) {
  auto journaled = core.JournalIntent(command);
  if (!journaled.ok() && core.faulted())
    actor.PostHalt();
  return journaled;
}

Result<CommandHeader, SessionError> NewHeader(SessionCore& core, const Uuid& loop, Agency agency) {
  CommandHeader header;
  HARNESS_TRY(header.command_id, core.NewId());
  header.session_id = core.id();
  header.loop_id = loop;
  header.agency = agency;
  header.created_at = core.Now();
  return header;
}

// Ends every loop as `how` says (Shutdown, Suspend) and waits until all have exited. A suspension
// marks the session suspended under the registry lock first: every command admitted before that
// is on its loop's strand ahead of the suspension; every later one sees kSuspended.
void EndEveryLoop(SessionCore& core, runtime_detail::LoopEnd how) {
  std::vector<std::shared_future<void>> exits;
  {
    std::lock_guard lock(core.registry_mutex);
    if (how == runtime_detail::LoopEnd::kSuspend)
      core.Suspend();
    for (auto& [id, actor] : core.loops)
      exits.push_back(actor->PostEnd(how));
  }
  for (auto& exit : exits)
    exit.wait();
}

// The loop Compact and SubmitInput address: the active one, once the fault latch lets commands
// through.
Result<Uuid, SessionError> ActiveLoopOf(SessionCore& core) {
  std::optional<Uuid> active;
  {
    std::lock_guard lock(core.registry_mutex);
    active = core.active_loop;
  }
  if (auto refused = core.Refusal())
    return Fail(std::move(*refused));
  if (!active)
    return Fail(SessionError{SessionErrorKind::kLoopNotFound, "no active loop"});
  return *active;
}

}  // namespace

Result<Uuid, SessionError> Session::Compact(std::stop_token stop) {
  HARNESS_TRY(const Uuid loop, ActiveLoopOf(*core_));
  return CompactToLoop(loop, std::move(stop));
}

Result<Uuid, SessionError> Session::CompactToLoop(const Uuid& loop, std::stop_token stop) {
  return CompactToLoop(loop, std::string(), std::move(stop));
}

Result<Uuid, SessionError> Session::CompactToLoop(const Uuid& loop, std::string instructions,
                                                  std::stop_token stop) {
  ::harness::Compact command;
  command.instructions = std::move(instructions);
  return SendCompact(loop, std::move(command), std::move(stop));
}

Result<Uuid, SessionError> Session::PreviewCompaction(const Uuid& loop, std::string instructions,
                                                      std::stop_token stop) {
  ::harness::Compact command;
  command.instructions = std::move(instructions);
  command.preview = true;
  return SendCompact(loop, std::move(command), std::move(stop));
}

Result<Uuid, SessionError> Session::DecideProposal(const Uuid& loop, const Uuid& attempt,
                                                   bool approve) {
  return Await<Uuid>(
      [&](SessionDone<Uuid> done) { DecideProposal(loop, attempt, approve, std::move(done)); });
}

void Session::DecideProposal(const Uuid& loop, const Uuid& attempt, bool approve,
                             SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  OnCompactableLoop(*core_, loop, "decide", done, [&](LoopActor& actor) {
    actor.PostDecision(attempt, approve, std::move(done));
  });
}

Result<Uuid, SessionError> Session::SendCompact(const Uuid& loop, ::harness::Compact command,
                                                std::stop_token stop) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    if ((*actor)->kind() != LoopKind::kNative || !(*actor)->compactable()) {
      return Fail(SessionError{SessionErrorKind::kCompactionUnsupported, ""});
    }
    if (core_->suspended())
      return Fail(SessionError{SessionErrorKind::kSuspended, ""});
    if ((*actor)->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    if (auto problem = CompactInstructionsProblem(command.instructions))
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, std::move(*problem)});
    // Checked before the intent is journaled: a caller that stopped waiting leaves nothing
    // behind that restore would have to answer.
    if (stop.stop_requested()) {
      return Fail(SessionError{SessionErrorKind::kCanceled,
                               "the caller's stop token was already requested; nothing was sent"});
    }
    HARNESS_TRY(command.header, NewHeader(*core_, loop, Agency::kUser));
    // D10: durable before the id leaves, so a crash at any later moment leaves a command that
    // restore answers. Appended under the registry lock: the journal's order of intents is the
    // order commands reach the loops, and no exit or suspension slips in between.
    if (auto journaled = JournalIntentFor(*core_, **actor, command); !journaled.ok())
      return Fail(journaled.error());
    (*actor)->PostCompact(command, std::move(stop));
  }
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::SubmitInput(UserMessage message) {
  HARNESS_TRY(const Uuid loop, ActiveLoopOf(*core_));
  return SubmitInputToLoop(loop, std::move(message));
}

Result<Uuid, SessionError> Session::SubmitInputToLoop(const Uuid& loop, UserMessage message,
                                                      Agency agency, InputOrigin origin) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  if (!Journalable(Message{message})) {
    return Fail(SessionError{SessionErrorKind::kInvalidArgument,
                             "the message is invalid or does not survive its encoding (text that "
                             "is not UTF-8)"});
  }
  if (InputOriginName(origin).empty())
    return Fail(SessionError{SessionErrorKind::kInvalidArgument, "the input's origin is invalid"});
  ::harness::SubmitInput command;
  std::shared_ptr<LoopActor> actor;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto found = FindLoop(*core_, loop);
    if (!found)
      return Fail(found.error());
    actor = *found;
    if (core_->suspended())
      return Fail(SessionError{SessionErrorKind::kSuspended, ""});
    if (actor->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    HARNESS_TRY(command.header, NewHeader(*core_, loop, agency));
    command.message = std::move(message);
    command.origin = origin;
    if (auto journaled = JournalIntentFor(*core_, *actor, command); !journaled.ok())
      return Fail(journaled.error());
    if (actor->kind() == LoopKind::kNative) {
      actor->PostInput(command);
      return command.header.command_id;
    }
  }
  actor->DeliverForeign(command.header.command_id, command.message);
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::Interrupt(const Uuid& loop) {
  if (core_->suspended())
    return Fail(SessionError{SessionErrorKind::kSuspended, ""});
  std::lock_guard lock(core_->registry_mutex);
  auto actor = FindLoop(*core_, loop);
  if (!actor)
    return Fail(actor.error());
  if ((*actor)->exiting)
    return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
  ::harness::Interrupt command;
  HARNESS_TRY(command.header, NewHeader(*core_, loop, Agency::kUser));
  if (auto journaled = JournalIntentFor(*core_, **actor, command); !journaled.ok())
    return Fail(journaled.error());
  (*actor)->PostInterrupt(command);
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::ShutdownLoop(const Uuid& loop) {
  std::shared_future<void> exited;
  HARNESS_TRY(const Uuid command, core_->NewId());
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    exited = (*actor)->PostEnd(runtime_detail::LoopEnd::kShutdown);
  }
  exited.wait();
  return command;
}

void Session::Shutdown() {
  EndEveryLoop(*core_, runtime_detail::LoopEnd::kShutdown);
}

void Session::Shutdown(std::function<void()> done) {
  // Counted down by each loop as it exits; the last one runs `done` (moved out, so that it is
  // destroyed where it ran, before that loop's exited() is ready).
  struct Countdown {
    std::mutex mu;
    std::size_t left = 0;
    std::function<void()> done;
  };
  auto countdown = std::make_shared<Countdown>();
  countdown->done = std::move(done);
  std::vector<std::shared_ptr<LoopActor>> actors;
  {
    std::lock_guard lock(core_->registry_mutex);
    for (auto& [id, actor] : core_->loops) {
      (void)actor->PostEnd(runtime_detail::LoopEnd::kShutdown);
      actors.push_back(actor);
    }
  }
  // One more than the loops: this thread's own count, so that `done` cannot run before every
  // loop is watched.
  countdown->left = actors.size() + 1;
  const auto count = [countdown] {
    std::function<void()> run;
    {
      std::lock_guard lock(countdown->mu);
      if (--countdown->left != 0)
        return;
      run = std::move(countdown->done);
    }
    run();
  };
  for (auto& actor : actors)
    actor->WhenExited(count);
  count();
}

void Session::ResumeQueued() {
  std::lock_guard lock(core_->registry_mutex);
  if (core_->suspended())
    return;
  for (auto& [id, actor] : core_->loops) {
    if (!actor->exiting && actor->kind() == LoopKind::kNative)
      actor->PostResume();
  }
}

void Session::Suspend() {
  EndEveryLoop(*core_, runtime_detail::LoopEnd::kSuspend);
  core_->ReleaseLease();
}

std::optional<JournalError> Session::LeaseReleaseFailure() const {
  return core_->release_failure();
}

Result<Uuid, SessionError> Session::ChangeLoopRequest(const Uuid& loop, LoopRequestChange change) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  LoopRequestChanged changed;
  changed.system_prompt = std::move(change.system_prompt);
  HARNESS_TRY(changed.header.event_id, core_->NewId());  // the actor fills in the rest
  const Uuid id = changed.header.event_id;
  std::future<runtime_detail::PublishOutcome> outcome;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    if ((*actor)->kind() != LoopKind::kNative)
      return Fail(SessionError{SessionErrorKind::kInvalidArgument,
                               "a foreign loop makes no model requests"});
    if (!changed.system_prompt)
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, "the change changes nothing"});
    if (auto problem = SystemPromptProblem(*changed.system_prompt))
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, std::move(*problem)});
    if ((*actor)->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    outcome = (*actor)->PostRequestChange(std::move(changed));
  }
  runtime_detail::PublishOutcome published = outcome.get();
  if (!published.ok()) {
    return Fail(SessionError{published.status == runtime_detail::Published::kFatal
                                 ? SessionErrorKind::kJournal
                                 : SessionErrorKind::kLoopExited,
                             published.detail});
  }
  return id;
}

Result<bool, SessionError> Session::PinMessage(const Uuid& loop, const Uuid& message, bool pin) {
  return Await<bool>(
      [&](SessionDone<bool> done) { PinMessage(loop, message, pin, std::move(done)); });
}

void Session::PinMessage(const Uuid& loop, const Uuid& message, bool pin, SessionDone<bool> done) {
  OnNativeLoop(*core_, loop, "a foreign loop's history is not the runtime's", done,
               [&](LoopActor& actor) { actor.PostPin(message, pin, std::move(done)); });
}

constexpr std::string_view kForeignInput = "a foreign loop's input is its engine's to cancel";

Result<Uuid, SessionError> Session::CancelQueuedInput(const Uuid& loop, const Uuid& input) {
  return Await<Uuid>(
      [&](SessionDone<Uuid> done) { CancelQueuedInput(loop, input, std::move(done)); });
}

void Session::CancelQueuedInput(const Uuid& loop, const Uuid& input, SessionDone<Uuid> done) {
  OnNativeLoop(*core_, loop, kForeignInput, done, [&](LoopActor& actor) {
    actor.PostCancelInput(input, false, [done = std::move(done)](auto outcome) {
      if (!outcome)
        return done(Fail(std::move(outcome).error()));
      done(outcome->event);
    });
  });
}

Result<DelegateCancel, SessionError> Session::CancelDelegateRequest(const Uuid& loop,
                                                                    const Uuid& request) {
  return Await<DelegateCancel>([&](SessionDone<DelegateCancel> done) {
    CancelDelegateRequest(loop, request, std::move(done));
  });
}

void Session::CancelDelegateRequest(const Uuid& loop, const Uuid& request,
                                    SessionDone<DelegateCancel> done) {
  OnNativeLoop(*core_, loop, kForeignInput, done, [&](LoopActor& actor) {
    actor.PostCancelInput(request, true, [done = std::move(done)](auto outcome) {
      if (!outcome)
        return done(Fail(std::move(outcome).error()));
      done(outcome->how);
    });
  });
}

Result<Uuid, SessionError> Session::Undo(const Uuid& loop) {
  return Await<Uuid>([&](SessionDone<Uuid> done) { Undo(loop, std::move(done)); });
}

void Session::Undo(const Uuid& loop, SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "undo", done,
                    [&](LoopActor& actor) { actor.PostUndo(*event_id, std::move(done)); });
}

Result<Uuid, SessionError> Session::MaskToolOutputs(const Uuid& loop) {
  return Await<Uuid>([&](SessionDone<Uuid> done) { MaskToolOutputs(loop, std::move(done)); });
}

void Session::MaskToolOutputs(const Uuid& loop, SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "mask", done, [&](LoopActor& actor) {
    actor.PostMask(true, *event_id, {}, std::move(done));
  });
}

Result<Uuid, SessionError> Session::UnmaskToolOutputs(const Uuid& loop,
                                                      std::vector<Uuid> messages) {
  return Await<Uuid>([&](SessionDone<Uuid> done) {
    UnmaskToolOutputs(loop, std::move(messages), std::move(done));
  });
}

void Session::UnmaskToolOutputs(const Uuid& loop, std::vector<Uuid> messages,
                                SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "unmask", done, [&](LoopActor& actor) {
    actor.PostMask(false, *event_id, std::move(messages), std::move(done));
  });
}

Result<Message, SessionError> Session::MaskedOriginal(const Uuid& loop, const Uuid& message) {
  return Await<Message>(
      [&](SessionDone<Message> done) { MaskedOriginal(loop, message, std::move(done)); });
}

void Session::MaskedOriginal(const Uuid& loop, const Uuid& message, SessionDone<Message> done) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (actor) {
      (*actor)->PostMaskedOriginal(message, std::move(done));
      return;
    }
    refused = actor.error();
  }
  done(Fail(std::move(*refused)));
}

Result<LoopSnapshot, SessionError> Session::Snapshot(const Uuid& loop) {
  return Await<LoopSnapshot>(
      [&](SessionDone<LoopSnapshot> done) { Snapshot(loop, std::move(done)); });
}

void Session::Snapshot(const Uuid& loop, SessionDone<LoopSnapshot> done) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (actor) {
      (*actor)->PostSnapshot(std::move(done));
      return;
    }
    refused = actor.error();
  }
  done(Fail(std::move(*refused)));
}

namespace runtime_detail {

Result<LoopState, SessionError> SessionProbe::DurableState(Session& session, const Uuid& loop) {
  return Await<LoopState>([&](SessionDone<LoopState> done) {
    std::optional<SessionError> refused;
    {
      std::lock_guard lock(session.core_->registry_mutex);
      auto actor = FindLoop(*session.core_, loop);
      if (actor) {
        (*actor)->PostDurableState(std::move(done));
        return;
      }
      refused = actor.error();
    }
    done(Fail(std::move(*refused)));
  });
}

}  // namespace runtime_detail

}  // namespace harness
