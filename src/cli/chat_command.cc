// `harness chat`: an interactive chat on a session of a data directory: lines typed are user
// input to one native loop, slash commands drive compaction and show the context (docs/cli.md
// has the behaviour and its proofs). The chat is made of four parts, each a file: the command
// line (chat_options.h), the session and its loop (chat_session.h), what is printed from the
// events (chat_view.h, on a thread of its own) and the lines typed (chat_commands.h), all
// writing through the console (chat_console.h). RunChat puts them together.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "chat_commands.h"
#include "chat_console.h"
#include "chat_options.h"
#include "chat_session.h"
#include "chat_view.h"
#include "commands.h"
#include "compaction_progress.h"
#include "journal_factory.h"
#include "line_editor.h"
#include "signals.h"

namespace harness::cli {

namespace {

// What is left once the lines end: the session suspended (not ended: queued input stays, and
// --session resumes it), the events still held shown, and the chat's last line.
int EndChat(const ChatCommandLine& line, const JournalStore& store, Session& session,
            std::jthread& printer, Subscription& events, ChatView& view, ChatConsole& console,
            const ChatLoop& made, bool scripted_input) {
  session.Suspend();
  printer.request_stop();
  printer.join();
  view.ShowQueued(events);
  console.SetActivity("");
  if (session.faulted()) {
    console.Error(
        FaultedMessage(session.id(), session.LeaseReleaseFailure(), line.lease_ttl_seconds));
    return kExitInvalid;
  }
  // The id first, as it always was (scripts read it), then the command that resumes.
  console.Line(fmt::format("session {} suspended; resume with --session {}: {}",
                           session.id().ToString(), session.id().ToString(),
                           ResumeCommand(store, session.id(), made.model_spec)));
  // A script of lines whose last turn failed did not do what it was run for: a caller (a shell
  // script, CI) learns it from the exit code. At a terminal the person saw it.
  if (scripted_input && view.last_turn_failed())
    return kExitInvalid;
  return kExitOk;
}

// Ends the chat's work in flight: nothing more will arrive, and the chat ends before its input
// does. It wakes the line reader and the wait between piped lines.
void StopChat(Outstanding& outstanding, std::stop_source& end) {
  {
    std::lock_guard lock(outstanding.mutex());
    outstanding.Ended();
  }
  end.request_stop();
  outstanding.Changed();
}

int RunChat(const ChatCommandLine& line, SignalWatch& signals) {
  auto read = ReadChatStart(line);
  if (!read.ok())
    return ChatUsage(read.error());
  const ChatStart& start = *read;
  SystemEnv env;  // the session's time and ids, and the progress's clock; outlives them
  const bool in_place = RewritesInPlace(STDOUT_FILENO);
  // A model compactor's progress (compaction_progress.h), made with the loop's compactor; the
  // console draws its line in place of the indicator, or the view prints its stages.
  std::optional<CompactionProgress> progress;
  // Made before the model clients, which stream the answer's text to it; it outlives them.
  ChatConsole console(in_place);
  ShownBeforeCall shown;
  const ChatStreaming streaming{[&console](std::string_view piece) { console.Stream(piece); },
                                shown,
                                [&](const std::string& spec) {
                                  // A resume resolves its loop twice (preview, then restore): the
                                  // first progress stays.
                                  if (!progress) {
                                    progress.emplace(CompactorDisplayName(spec), in_place, env,
                                                     CompactionProgress::Output::kHost);
                                    if (in_place)
                                      console.SetStatus([&progress] { return progress->Status(); });
                                  }
                                  return progress->Sink();
                                }};
  // A new session's loop is made before anything is opened, so that a bad flag writes nothing.
  std::optional<ChatLoop> made;
  if (!start.resume) {
    auto loop = NewChatLoop(line, start, streaming);
    if (!loop.ok())
      return ChatUsage(loop.error());
    made = std::move(loop).value();
  }

  // From here on a signal is cleaned up after (the journal, the lease); before, only the flags
  // were checked and a signal ends the chat at once.
  signals.Arm();
  // A resumed session's journal must exist; a new session creates one when missing.
  auto journal =
      OpenJournalStore(start.store, start.resume ? StoreAccess::kExisting : StoreAccess::kCreate);
  if (!journal.ok())
    return ChatUsage(StoreProblem(start.store, journal.error()));
  Outstanding outstanding;
  // The chat ends before its input does: on a fault (the session takes no more work) or a
  // signal.
  std::stop_source end;
  SessionOptions options;
  options.env = &env;
  options.journal = journal->get();
  options.session_id = start.session_id;
  options.lease_ttl = std::chrono::seconds(line.lease_ttl_seconds);
  options.snapshot_interval = static_cast<std::uint64_t>(line.snapshot_interval);
  options.on_failure = [&](const InfrastructureFailure& f) {
    console.Error(fmt::format("harness chat: runtime failure: {}: {}",
                              InfrastructureFailureKindName(f.kind), f.detail));
    StopChat(outstanding, end);
  };
  std::optional<ChatLoop> resumed;
  auto opened = OpenChatSession(line, start, **journal, std::move(options), streaming, resumed);
  if (!opened.ok())
    return opened.error();
  Session& session = **opened;
  Subscription events = session.Subscribe();
  auto started = StartChatLoop(session, start, made, resumed);
  if (!started.ok())
    return started.error();
  const Uuid loop = *started;
  const LoopContext& context = made->context;
  const std::string& provider = made->definition.model.provider;
  ChatView view(console, outstanding, loop, context.policy, provider,
                CompactorProvider(line, provider), progress ? &*progress : nullptr);
  if (start.resume) {
    if (auto shown_resumed = ShowResumed(session, loop, console, view, outstanding);
        !shown_resumed.ok())
      return shown_resumed.error();
  }
  console.Line(fmt::format("session {} in {}, model {}/{}", session.id().ToString(),
                           StoreForDisplay(start.store), made->definition.model.provider,
                           made->definition.model.model));
  std::optional<LoadedCount> loaded;
  if (!start.resume && !line.history.empty())
    loaded = ShowLoadedHistory(console, *made);
  console.Line(fmt::format("type a message, or {}", kChatCommands));

  std::jthread printer([&](std::stop_token stop) { view.Follow(stop, events, shown); });
  // Piped input is a script: each line waits for the previous one's work, so the output is
  // deterministic. At a terminal a line acts at once; input typed during a compaction is
  // queued by the loop.
  const bool scripted_input = isatty(STDIN_FILENO) != 1;
  // A signal interrupts what the loop is doing (a turn, a compaction: their rejections and
  // replies are journaled) and ends the chat; registered now, it runs at once for a signal that
  // came while the session was being opened.
  std::stop_callback on_signal(signals.token(), [&] {
    console.Error(fmt::format(
        "harness chat: {}: interrupting; the session is suspended (a second signal exits at once)",
        SignalNameOfExitCode(signals.exit_code())));
    (void)session.Interrupt(loop);
    StopChat(outstanding, end);
  });
  ReadChatLines(ChatTarget{session, loop, console, outstanding, context.policy,
                           context.counter->quality(), context.limits.window_tokens, end, loaded},
                start.store, scripted_input);
  return EndChat(line, start.store, session, printer, events, view, console, *made, scripted_input);
}

int Run(const ChatCommandLine& line) {
  // Made before the chat starts any thread (signals.h); it erases the progress indicator when a
  // second signal ends the process at once.
  // A second signal ends the process without the editor's destructor: bracketed paste is
  // turned off with the indicator's erasure.
  SignalWatch signals("harness chat",
                      std::string(ChatConsole::kEraseLine).append(kBracketedPasteOff));
  const int exit = RunChat(line, signals);
  // A signal ends the chat with 128 + the signal whatever the chat was doing, as shells expect.
  return signals.exit_code() != 0 ? signals.exit_code() : exit;
}

}  // namespace

std::optional<int> RunChatCommand(const ChatCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
