// The session of `harness chat`: its loop, its opening or restore, and the messages of its start
// and end (chat_session.h).
#include "chat_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "commands.h"
#include "compaction_run.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/model_compactor.h"
#include "harness/content/codec.h"
#include "input.h"
#include "model_factory.h"
#include "restore_preview.h"
#include "settings.h"
#include "terminal_text.h"

namespace harness::cli {

namespace {

// The chat's model: each call first waits for the events before it to be shown.
class ShownFirstModelClient final : public ModelClient {
 public:
  ShownFirstModelClient(std::shared_ptr<ModelClient> inner, ShownBeforeCall& shown)
      : inner_(std::move(inner)), shown_(shown) {}

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override {
    shown_.AwaitShown(stop);
    return inner_->Complete(request, stop);
  }

 private:
  std::shared_ptr<ModelClient> inner_;
  ShownBeforeCall& shown_;
};

// What the chat records of how it made the loop, for a resume (chat_loop_settings.h).
ChatLoopSettings LoopSettingsOf(const ChatCommandLine& line, const ContextFlags& flags) {
  ChatLoopSettings settings;
  settings.compactor = line.compactor;
  settings.context_window = flags.context_window;
  settings.max_output_tokens = flags.max_output_tokens;
  settings.constrain_output = line.constrain_output;
  return settings;
}

}  // namespace

// `saved`: what a resumed loop's chat recorded; each applies where the command line is silent.
// `saved`: what a resumed loop's chat recorded; each applies where the command line is silent.
Result<ChatLoop, std::string> MakeChatLoop(const ChatCommandLine& line,
                                           const std::string& model_spec, std::string system_prompt,
                                           const ChatStreaming& streaming,
                                           const std::optional<ChatLoopSettings>& saved) {
  const std::string compactor_spec =
      saved && saved->compactor && !Given(line, "--compactor") ? *saved->compactor : line.compactor;
  const bool constrain_output = line.constrain_output || (saved && saved->constrain_output);
  ModelClientSettings settings;
  settings.on_text = streaming.on_text;
  auto model = MakeModelClient(model_spec, settings);
  if (!model.ok())
    return Fail(model.error().Message("--model", "scripted:PATH"));
  model->client =
      std::make_shared<ShownFirstModelClient>(std::move(model->client), streaming.shown);
  // A scripted model has no catalog entry: it takes the CLI's offline window and output.
  ContextFlags flags =
      line.context.Flags(model->scripted ? std::nullopt : std::optional<ModelKey>(model->model),
                         compactor_spec != "extractive");
  if (saved && !flags.context_window)
    flags.context_window = saved->context_window;
  if (saved && !flags.max_output_tokens)
    flags.max_output_tokens = saved->max_output_tokens;
  ChatLoopSettings recorded = LoopSettingsOf(line, flags);
  recorded.compactor = compactor_spec;
  recorded.constrain_output = constrain_output;
  auto chosen = ChooseLoopContext(flags, TokenizerDirFromEnvironment());
  if (!chosen.ok())
    return Fail(chosen.error().message);
  std::shared_ptr<Compactor> compactor;
  ModelCompactorOptions compactor_options;
  compactor_options.constrain_output = constrain_output;
  if (compactor_spec == "model") {
    // The chat's own model summarizes: a span larger than its window leaves is summarized in
    // chunks (docs/chunked.md).
    compactor_options.input_tokens =
        SummarizerBudget(chosen->limits.window_tokens, chosen->policy.max_summary_tokens);
    // A summary is not chat text: a provider model compacts through a client of its own that
    // streams nowhere. A script is one sequence of steps for the chat and the compactor alike,
    // so its client is shared; a script's summary step streams only if it says so.
    std::shared_ptr<ModelClient> client = model->client;
    const TextDeltaSink progress = streaming.compaction_progress(model_spec);
    if (!model->scripted) {
      ModelClientSettings quiet_settings;
      quiet_settings.on_text = progress;
      auto quiet = MakeModelClient(model_spec, quiet_settings);
      if (!quiet.ok())
        return Fail(quiet.error().Message("--model", "scripted:PATH"));
      client = std::move(quiet->client);
    }
    compactor = std::make_shared<ModelCompactor>(std::move(client), compactor_options);
  } else if (compactor_spec == "extractive") {
    compactor = std::make_shared<ExtractiveCompactor>();
  } else {
    ModelClientSettings other_settings;
    other_settings.on_text = streaming.compaction_progress(compactor_spec);
    auto other = MakeModelClient(compactor_spec, other_settings);
    if (!other.ok())
      return Fail(other.error().Message("--compactor", "model, extractive or scripted:PATH"));
    compactor = std::make_shared<ModelCompactor>(std::move(other->client), compactor_options);
  }
  ChatLoop out;
  out.context = std::move(*chosen);
  out.context.policy.automatic = !line.no_auto_compact;
  // Automatic compaction masks old tool output first (docs/masking.md) unless told not to.
  out.context.policy.masking = line.no_mask ? CompactionMasking::kOff : CompactionMasking::kFirst;
  LoopDefinition& definition = out.definition;
  definition.model = model->model;
  definition.limits = out.context.limits;
  definition.system_prompt = std::move(system_prompt);
  definition.client = model->client;
  definition.counter = out.context.counter;
  definition.compaction = out.context.policy;
  definition.compactor = std::move(compactor);
  definition.compactor_name = FormatChatLoopSettings(recorded, kMaxCompactorNameBytes);
  out.model_spec = model_spec;
  out.recorded = std::move(recorded);
  definition.max_steps_per_turn = static_cast<std::size_t>(line.max_steps);
  return out;
}

Result<ChatLoop, std::string> NewChatLoop(const ChatCommandLine& line, const ChatStart& start,
                                          const ChatStreaming& streaming) {
  // --history: another agent's session (harness import) continues here; its leading system
  // messages become the system prompt, before the flag's, as `harness compact` does.
  Transcript history;
  std::string prompt;
  std::size_t lifted = 0;
  if (line.history == "-")
    return Fail(std::string("--history takes a file: standard input is the chat's"));
  if (!line.history.empty()) {
    auto input = ReadInput(line.history, TranscriptLimits{}.max_bytes);
    if (!input.ok())
      return Fail(input.error().message);
    auto decoded = DecodeTranscript(*input);
    if (!decoded.ok())
      return Fail("--history: invalid transcript " + decoded.error().Describe());
    history = std::move(decoded).value();
    const std::size_t messages = history.size();
    prompt = LiftSystemPrompt(history);
    lifted = messages - history.size();
  }
  if (start.system_prompt && !start.system_prompt->empty())
    prompt.append(prompt.empty() ? "" : "\n\n").append(*start.system_prompt);
  HARNESS_TRY(ChatLoop made, MakeChatLoop(line, line.model, std::move(prompt), streaming));
  made.definition.history = std::move(history);
  // What CreateLoop would refuse (a --history message too large for a journal record) is
  // refused before the journal and its directory exist.
  if (auto problem = DefinitionProblem(made.definition, lifted))
    return Fail(line.history.empty() ? *problem : "--history: " + *problem);
  return made;
}

namespace {

// The model spec a resumed loop is rebuilt with: --model when given (it must yield the loop's
// model key), else the loop's own key when it names a provider the CLI can reach.
Result<std::string, std::string> ResumedModelSpec(const ChatCommandLine& line,
                                                  const ModelKey& loop_model) {
  if (!line.model.empty())
    return line.model;
  if (loop_model.provider == "openai" || loop_model.provider == "anthropic")
    return loop_model.provider + ":" + loop_model.model;
  return Fail(fmt::format("the session's loop uses model {}/{}: pass --model", loop_model.provider,
                          loop_model.model));
}

Result<ChatLoop, std::string> ResumedLoop(const ChatCommandLine& line, const RestoredLoopInfo& info,
                                          const ChatStreaming& streaming) {
  HARNESS_TRY(std::string spec, ResumedModelSpec(line, info.model));
  // The journal's system prompt: a different --system is journaled after the restore.
  // What the chat that made the loop recorded (none for a loop of an older chat or another
  // program): the compactor, the window and the output, unless the command line says otherwise.
  const std::optional<ChatLoopSettings> saved = ParseChatLoopSettings(info.compactor_name);
  HARNESS_TRY(ChatLoop loop, MakeChatLoop(line, spec, info.system_prompt, streaming, saved));
  if (!(loop.definition.model == info.model)) {
    return Fail(fmt::format("--model names {}/{} but the session's loop uses {}/{}",
                            loop.definition.model.provider, loop.definition.model.model,
                            info.model.provider, info.model.model));
  }
  if (!info.compaction_policy) {
    loop.definition.compaction.reset();
  } else if (info.policy && !PolicyFlagsGiven(line)) {
    // The journaled policy is the loop's: made from the first chat's flags, it is kept as it is
    // unless this command line changes one of them.
    loop.definition.compaction = *info.policy;
    loop.context.policy = *info.policy;
  }
  // The record stays the loop's own: the journal keeps the one its LoopCreated holds.
  loop.definition.compactor_name = info.compactor_name;
  // The journaled step limit, unless this command line sets one for this run.
  if (!Given(line, "--max-steps"))
    loop.definition.max_steps_per_turn = info.max_steps_per_turn;
  return loop;
}

// The request the loop's first model call would make of its history alone (no tools: the chat
// has none), counted as a turn counts it.
Result<LoadedCount, std::string> CountLoadedHistory(const LoopDefinition& definition,
                                                    const LoopContext& context) {
  InferenceRequest request;
  request.model = definition.model;
  request.system = definition.system_prompt;
  request.messages = definition.history;
  request.max_output_tokens = definition.limits.max_output_tokens;
  auto counted = context.counter->Count(request, std::stop_token());
  if (!counted.ok())
    return Fail(counted.error().detail);
  return LoadedCount{definition.history.size(), counted->input_tokens, context.resolved.input_limit,
                     counted->quality};
}

// `text` as one word of a shell command: as it is when it is plain, else in single quotes.
std::string ShellWord(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("_./:=@%+-,").find(c) != std::string_view::npos;
  });
  if (plain)
    return std::string(text);
  std::string out = "'";
  for (const char c : text)
    out.append(c == '\'' ? "'\\''" : std::string(1, c));
  return out.append("'");
}

// The running binary's absolute path (so that the command works from any directory, whatever
// PATH holds), else "harness".
std::string RunningProgram() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error || self.empty() ? std::string("harness") : self.string();
}

}  // namespace

// The command that resumes the session, as it can be run: the running binary by its absolute
// path, the store unless it is the default data directory (a data directory as an absolute path,
// a URL with its password hidden), the model (a script or a model outside the catalog cannot be
// guessed). The compaction settings need no flags: the loop's record has them
// (chat_loop_settings.h).
std::string ResumeCommand(const JournalStore& store, const Uuid& session,
                          const std::string& model_spec) {
  std::string command = ShellWord(RunningProgram()) + " chat --session " + session.ToString();
  if (store.kind == JournalStore::Kind::kPostgres) {
    command.append(" --journal ").append(ShellWord(StoreForDisplay(store)));
  } else {
    std::error_code error;
    const std::filesystem::path here = std::filesystem::absolute(store.location, error);
    const std::filesystem::path fallback = std::filesystem::absolute(
        DefaultDataDir(ProcessEnvironment, std::filesystem::current_path(error)).path, error);
    if (here.lexically_normal() != fallback.lexically_normal())
      command.append(" --data-dir ").append(ShellWord(here.lexically_normal().string()));
  }
  return command.append(" --model ").append(ShellWord(model_spec));
}

// The one message of a chat that ends because its session faulted: what happened, and what
// the user can do about it. The session's lease was released on the way out when the journal
// took that small write; when it refused it too, the lease stays held (by this process, which is
// ending) until it expires, so the resume that works at once is the one with --take-over.
std::string FaultedMessage(const Uuid& session, const std::optional<JournalError>& release_failure,
                           std::int64_t lease_ttl_seconds) {
  std::string message = fmt::format(
      "harness chat: the session faulted: its journal refused a write (the runtime failure above "
      "says why), so it takes no more input. What the journal holds is kept: once it can be "
      "written again (a full disk: once it has room), resume it with `harness chat --session {}",
      session.ToString());
  if (!release_failure)
    return message.append("`");
  if (release_failure->kind == JournalErrorKind::kStaleFence) {
    return message.append(
        "` once the process that took the session over (its lease is no longer this chat's) has "
        "ended");
  }
  return message.append(fmt::format(
      " --take-over`: the journal refused the release of the session's lease too ({}), so the "
      "lease stays held by this chat, which has ended, until it expires ({} s after its last "
      "renewal); no other process holds it, so taking it over is safe",
      release_failure->Describe(), lease_ttl_seconds));
}

Result<std::unique_ptr<Session>, int> OpenChatSession(const ChatCommandLine& line,
                                                      const ChatStart& start, Journal& journal,
                                                      SessionOptions options,
                                                      const ChatStreaming& streaming,
                                                      std::optional<ChatLoop>& resumed) {
  if (!start.resume) {
    auto opened = Session::Open(std::move(options));
    if (!opened.ok()) {
      std::fprintf(stderr, "harness chat: %s\n",
                   TerminalText(SessionRefusal(opened.error())).c_str());
      return Fail(kExitInvalid);
    }
    return std::move(opened).value();
  }
  std::string usage;  // a resolver problem that is the user's flags, not the journal
  RestoreOptions restore;
  restore.take_over = line.take_over;
  restore.start_queued = false;  // started once the events are subscribed
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    auto loop = ResumedLoop(line, info, streaming);
    if (!loop.ok()) {
      usage = loop.error();
      return Fail(SessionError{SessionErrorKind::kInvalidDefinition, usage});
    }
    LoopDefinition definition = loop->definition;
    if (!resumed)
      resumed = std::move(*loop);
    return definition;
  };
  const auto refused = [&](const SessionError& error) {
    if (!usage.empty())
      return ChatUsage(usage);
    if (error.kind == SessionErrorKind::kSessionNotFound)
      return ChatUsage(
          fmt::format("no session {} in {}", line.session, StoreForDisplay(start.store)));
    std::fprintf(stderr, "harness chat: %s\n", TerminalText(SessionRefusal(error)).c_str());
    return kExitInvalid;
  };
  // Everything that needs no lease is checked before the lease is taken, so that a run which
  // cannot go on changes nothing: a take-over would fence off the live writer first.
  if (auto preview = PreviewRestore(journal, start.session_id, restore.resolve); !preview.ok())
    return Fail(refused(preview.error()));
  resumed.reset();  // made again by Restore's own resolve
  auto restored = Session::Restore(std::move(options), std::move(restore));
  if (!restored.ok())
    return Fail(refused(restored.error()));
  return std::move(restored).value();
}

Result<Uuid, int> StartChatLoop(Session& session, const ChatStart& start,
                                std::optional<ChatLoop>& made, std::optional<ChatLoop>& resumed) {
  if (!start.resume) {
    auto created = session.CreateLoop(made->definition);
    if (!created.ok()) {
      std::fprintf(stderr, "harness chat: %s\n",
                   TerminalText(SessionRefusal(created.error())).c_str());
      // The definition is made of the command line's input (model, flags, system prompt): one
      // the runtime cannot take is bad usage, like a bad flag.
      return Fail(created.error().kind == SessionErrorKind::kInvalidDefinition ? kExitUsage
                                                                               : kExitInvalid);
    }
    return *created;
  }
  const auto active = session.active_loop();
  if (!active || !resumed) {
    std::fprintf(stderr, "harness chat: the session has no loop to resume\n");
    session.Suspend();
    return Fail(kExitInvalid);
  }
  made = std::move(resumed);
  auto journaled = session.Snapshot(*active);
  auto changed = journaled.ok() ? ResumeSystemPrompt(session, *active, start.system_prompt,
                                                     journaled->system_prompt)
                                : Result<bool, std::string>(Fail(journaled.error().Message()));
  if (!changed.ok()) {
    std::fprintf(stderr, "harness chat: %s\n", changed.error().c_str());
    session.Suspend();
    return Fail(kExitInvalid);
  }
  return *active;
}

Status<int> ShowResumed(Session& session, const Uuid& loop, ChatConsole& console, ChatView& view,
                        Outstanding& outstanding) {
  auto snapshot = session.Snapshot(loop);
  if (!snapshot.ok()) {
    std::fprintf(stderr, "harness chat: %s\n",
                 TerminalText(SessionRefusal(snapshot.error())).c_str());
    session.Suspend();
    return Fail(kExitInvalid);
  }
  const RestoreReport& report = session.restore_report();
  const std::size_t history = snapshot->history.size();
  // A snapshot that did not pass its checks was not used: the user hears of it, the restore
  // went on from an older one or from the start (docs/spec/snapshots.md §4).
  for (const SkippedSnapshot& skipped : report.skipped_snapshots)
    console.Line(fmt::format("warning: the snapshot at seq {} was skipped ({})", skipped.seq,
                             skipped.error.Message()));
  console.Line(fmt::format(
      "session {} restored: {} records{}; loop {}: {} messages{}, {} queued, repaired "
      "{} replies, closed {} turns",
      session.id().ToString(), report.through_seq,
      report.snapshot_seq > 0 ? fmt::format(" (from the snapshot at seq {})", report.snapshot_seq)
                              : "",
      loop.ToString(), history,
      snapshot->derived_prefix > 0 ? fmt::format(" (summary + {})", history - 1) : "",
      snapshot->queued_inputs, report.replies_repaired, report.turns_closed));
  if (snapshot->status == LoopStatus::kExited)
    console.Line(
        "the loop has exited: it takes no more input (/history still shows it); start a new "
        "session to go on");
  view.Seed(*snapshot);
  if (snapshot->queued_inputs > 0) {
    std::lock_guard lock(outstanding.mutex());
    outstanding.TurnRunning(true);
  }
  session.ResumeQueued();
  return {};
}

std::optional<LoadedCount> ShowLoadedHistory(ChatConsole& console, const ChatLoop& made) {
  auto counted = CountLoadedHistory(made.definition, made.context);
  if (!counted.ok()) {
    console.Line(fmt::format("history: loaded {} messages; they could not be counted: {}",
                             made.definition.history.size(), counted.error()));
    return std::nullopt;
  }
  console.Line(fmt::format("history: loaded {} messages, {} of the input limit, counter {}",
                           counted->messages, TokensText(counted->tokens, counted->input_limit),
                           CountQualityName(counted->quality)));
  return *counted;
}

std::string CompactorProvider(const ChatCommandLine& line, const std::string& provider) {
  if (line.compactor == "model")
    return provider;
  if (line.compactor == "extractive")
    return std::string();
  return line.compactor.substr(0, line.compactor.find(':'));
}

}  // namespace harness::cli
