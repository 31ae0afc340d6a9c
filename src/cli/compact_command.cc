// `harness compact`: one manual compaction of a transcript in a fresh session of a data
// directory, every event printed as it arrives (docs/cli.md has the behaviour and its proofs).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "commands.h"
#include "compaction_progress.h"
#include "compaction_run.h"
#include "event_lines.h"
#include "failure_text.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/model_compactor.h"
#include "harness/content/codec.h"
#include "harness/dialect/dialect.h"
#include "harness/event/wire.h"
#include "harness/inference/catalog.h"
#include "harness/inference/counter.h"
#include "harness/inference/tokenizer.h"
#include "harness/runtime/session.h"
#include "input.h"
#include "journal_factory.h"
#include "model_factory.h"
#include "number_option.h"
#include "policy_defaults.h"
#include "restore_preview.h"
#include "signals.h"
#include "system_prompt.h"
#include "terminal_text.h"

namespace harness::cli {

// The defaults are documented in docs/cli.md; change both together. The context and compaction
// defaults are policy_defaults.h's.
struct CompactCommandLine {
  CLI::App* command = nullptr;
  std::string transcript;
  std::string compactor = "extractive";
  std::string data_dir;  // set by --data-dir or ApplySettings (settings.h)
  std::string model;     // PROVIDER:MODEL; empty: the offline model
  std::string journal;   // a postgres:// URL instead of --data-dir
  std::string session;   // compact a loop of this (restored) session instead of a transcript
  std::string loop;      // with --session: the loop (default: the active loop)
  bool take_over = false;
  ContextOptions context;
  SystemPromptFlags system;
  CLI::Option* model_option = nullptr;
  bool json = false;
  bool constrain_output = false;
  TokenCount compactor_window = 0;  // 0: not given
  bool preview = false;             // show the proposal, install nothing (docs/preview.md)
  std::string emit;                 // --emit FORMAT: write the replacement messages
  CLI::Option* emit_option = nullptr;
  std::string output = "-";  // --output: where --emit writes ("-" standard output)
  CLI::Option* output_option = nullptr;
};

namespace {

constexpr std::size_t kMaxTranscriptBytes = TranscriptLimits{}.max_bytes;

// One NDJSON line, exactly as encoded: JSON escaping keeps its control characters inert.
void PrintJson(std::string_view json, std::FILE* to = stdout) {
  std::fwrite(json.data(), 1, json.size(), to);
  std::fputc('\n', to);
  std::fflush(to);  // as it happens, also through a pipe
}

// One line for a person: the summary and the events hold model output, shown, never executed.
// `to` is standard error when --emit writes the messages to standard output.
void PrintLine(std::string_view text, std::FILE* to = stdout) {
  PrintJson(TerminalText(text), to);
}

// The formats --emit writes the replacement messages in. Each has a name and one writer
// (EmitMessages); a format is added to both.
enum class EmitFormat : std::uint8_t {
  kTranscript,  // the harness transcript codec (docs/content.md), as `validate-transcript` reads
  kOpenAiChat,  // an OpenAI Chat Completions `messages` array (docs/spec/dialects.md)
  kOpenAiResponses,    // an OpenAI Responses `input` array
  kAnthropicMessages,  // an Anthropic Messages `messages` array
};

struct EmitFormatName {
  std::string_view name;
  EmitFormat format;
};

constexpr EmitFormatName kEmitFormats[] = {
    {"transcript", EmitFormat::kTranscript},
    {"openai", EmitFormat::kOpenAiChat},
    {"openai-responses", EmitFormat::kOpenAiResponses},
    {"anthropic", EmitFormat::kAnthropicMessages},
};

std::optional<EmitFormat> ParseEmitFormat(std::string_view name) {
  for (const EmitFormatName& known : kEmitFormats) {
    if (known.name == name)
      return known.format;
  }
  return std::nullopt;
}

std::string EmitFormatNames() {
  std::string names;
  for (const EmitFormatName& known : kEmitFormats)
    names.append(names.empty() ? "" : ", ").append(known.name);
  return names;
}

// The messages in `format`, ending with a newline; the error says why they cannot be written.
// The provider shapes are written fresh by the dialect writers: the input was a harness
// transcript, so there are no provider bytes to keep. The system prompt is not a replacement
// message (the application sends its own), so none is written.
Result<std::string, std::string> EmitMessages(EmitFormat format,
                                              const std::vector<Message>& messages) {
  if (format == EmitFormat::kTranscript) {
    auto encoded = EncodeTranscript(messages);
    if (!encoded.ok())
      return Fail("the replacement messages cannot be encoded: " + encoded.error().Describe());
    encoded->push_back('\n');
    return std::move(encoded).value();
  }
  auto written = [&]() -> Result<std::string, DialectError> {
    if (format == EmitFormat::kOpenAiChat)
      return WriteOpenAiChat("", messages);
    if (format == EmitFormat::kOpenAiResponses)
      return WriteOpenAiResponses("", messages);
    return WriteAnthropicMessages(messages);
  }();
  if (!written.ok()) {
    return Fail("the replacement messages have no form in this --emit format: " +
                written.error().Describe());
  }
  written->push_back('\n');
  return std::move(written).value();
}

void PrintError(std::string_view text) {
  std::fprintf(stderr, "harness compact: %s\n", TerminalText(text).c_str());
}

// The message may quote a server or the input: shown, never executed.
int Usage(std::string_view message) {
  std::fprintf(stderr, "harness compact: %s\n", TerminalText(message).c_str());
  return kExitUsage;
}

std::string ContextText(const std::optional<ContextMeasurement>& m) {
  return m ? TokensText(m->input_tokens, m->input_limit) : std::string("not measured");
}

struct RunIds {
  Uuid session;
  Uuid loop;
  Uuid command;
};

void PrintJsonResult(const RunIds& ids, const LoopContext& context, const Outcome& outcome,
                     const Verdict& verdict) {
  std::string out;
  WireWriter w(out);
  w.String("type", "CompactResult")
      .String("outcome", verdict.rejected ? "rejected" : "committed")
      .Id("session_id", ids.session)
      .Id("loop_id", ids.loop)
      .Id("command_id", ids.command)
      .Model("model", context.model)
      .Uint("context_window", context.limits.window_tokens)
      .String("window_source", WindowSourceName(context.window_source))
      .Uint("max_output_tokens", context.limits.max_output_tokens)
      .Uint("input_limit", context.resolved.input_limit)
      .String("counter_quality", CountQualityName(context.counter->quality()));
  if (context.catalog && context.catalog->encoding)
    w.String("encoding", EncodingName(*context.catalog->encoding));
  if (verdict.rejected) {
    w.String("reason", CompactRejectReasonName(verdict.rejected->reason));
    if (const auto& detail = verdict.rejected->detail) {
      w.String("detail_kind", RejectDetailKindName(detail->kind))
          .String("detail", DescribeRejectDetail(*detail));
    }
    if (verdict.invalid_summary)
      w.String("invalid_summary", InvalidSummaryReasonName(*verdict.invalid_summary));
  }
  w.Uint("messages_before", outcome.context.messages_before);
  if (outcome.context.before) {
    w.Measurement("context_before", *outcome.context.before);
  } else {
    w.Key("context_before");
    w.out().append("null");
  }
  if (!verdict.rejected) {
    w.Uint("retained", outcome.committed->retained.size());
    w.Measurement("context_after", outcome.committed->post_context);
    // How many anchors coverage repair wrote into the summary: present with a coverage report.
    if (outcome.committed->coverage)
      w.Uint("repaired", outcome.committed->coverage->repaired_count);
    w.String("summary", SummaryText(*outcome.committed));
  }
  w.Close();
  PrintJson(out);
}

void PrintHumanResult(const Outcome& outcome, const Verdict& verdict,
                      const CompactionPolicy& policy, std::FILE* to) {
  PrintLine(fmt::format("context before: {}, {} messages", ContextText(outcome.context.before),
                        outcome.context.messages_before),
            to);
  if (verdict.rejected) {
    PrintLine("context after: unchanged", to);
    if (outcome.coverage)
      PrintLine(CoverageText(*outcome.coverage), to);
    PrintLine(RejectedText(verdict.rejected->reason, verdict.rejected->detail), to);
    if (verdict.invalid_summary) {
      PrintLine(
          fmt::format("invalid_summary {}", InvalidSummaryReasonName(*verdict.invalid_summary)),
          to);
    }
    return;
  }
  const CompactionCommitted& committed = *outcome.committed;
  PrintLine(
      fmt::format("context after: {}, summary + {} messages", ContextText(committed.post_context),
                  committed.pinned.size() + committed.retained.size()),
      to);
  if (outcome.coverage)
    PrintLine(CoverageText(*outcome.coverage), to);
  PrintLine("summary:", to);
  PrintLine(SummaryText(committed), to);
  // A manual compaction commits even when it does not pay (only an automatic one is refused
  // ineffective, docs/decisions.md P15): the last line says so, and what to change.
  std::string grew;
  if (outcome.context.before && outcome.context.before->basis == committed.basis) {
    grew = NotSmallerText(outcome.context.before->input_tokens, committed.post_context.input_tokens,
                          policy);
  }
  PrintLine(grew.empty() ? "committed" : "committed, " + grew, to);
}

// What the flags say about the context; unset options take policy_defaults.h's defaults.
Result<ContextFlags, std::string> FlagsOf(const CompactCommandLine& line) {
  std::optional<ModelKey> model;
  if (line.model_option->count() > 0) {
    auto parsed = ParseModelSpec(line.model);
    if (!parsed.ok()) {
      std::string problem = "--model: ";
      problem.append(parsed.error().Message());
      return Fail(std::move(problem));
    }
    model = std::move(parsed).value();
  }
  return line.context.Flags(std::move(model), line.compactor != "extractive");
}

// "model openai/gpt-4o: window 128000 (catalog), output 16384, input limit 111616, counter
// exact_local o200k_base, safety margin 0"
std::string ContextReport(const LoopContext& context) {
  std::string counter(CountQualityName(context.counter->quality()));
  if (context.catalog && context.catalog->encoding)
    counter.append(" ").append(EncodingName(*context.catalog->encoding));
  return fmt::format(
      "model {}/{}: window {} ({}), output {}, input limit {}, counter {}, safety margin {}",
      context.model.provider, context.model.model, context.limits.window_tokens,
      WindowSourceName(context.window_source), context.limits.max_output_tokens,
      context.resolved.input_limit, counter, context.policy.safety_margin);
}

// What both ways of getting a loop (a fresh session from a transcript, or a restored one)
// hand to the compaction: the session, the loop, its context and the recording compactor.
struct Target {
  std::unique_ptr<Session> session;
  Uuid loop;
  LoopContext context;
  std::shared_ptr<ObservedCompactor> recorder;
  std::size_t messages_before = 0;
  std::optional<ContextMeasurement> measured;  // a restored loop's last measurement
  bool restored = false;
  // Subscribed before the loop's first event (a fresh session) or right after the restore.
  std::optional<Subscription> events;
};

// The compactor of a loop whose compaction policy is `policy`: --compactor, with the input
// budget --compactor-window leaves beside the policy's summary budget (docs/chunked.md). A new
// session and a restored loop both take their compactor from here, so the window is applied
// and checked the same way for both. The error is a usage message (exit 2).
Result<std::shared_ptr<ObservedCompactor>, std::string> CompactorFor(const CompactCommandLine& line,
                                                                     const CompactionPolicy& policy,
                                                                     const TextDeltaSink& on_text) {
  std::optional<TokenCount> budget;
  if (line.compactor_window > 0) {
    budget = SummarizerBudget(line.compactor_window, policy.max_summary_tokens);
    if (!budget) {
      return Fail(fmt::format(
          "--compactor-window {} leaves no room for a chunk beside the summary budget ({}) and "
          "the summarizer's prompt (4096); give a larger window or a smaller --max-summary-tokens",
          line.compactor_window, policy.max_summary_tokens));
    }
  }
  CompactorChoice choice = ChooseCompactor(line.compactor, line.constrain_output, budget, on_text);
  if (!choice.compactor)
    return Fail(std::move(choice.problem));
  return std::make_shared<ObservedCompactor>(std::move(choice.compactor));
}

// What a fresh session needs from the flags and the transcript, all checked before the journal
// is opened, so that bad input creates nothing. nullopt: `exit` says how it ended.
struct NewSessionInput {
  LoopContext context;
  std::shared_ptr<ObservedCompactor> recorder;
  LoopDefinition definition;  // checked: CreateLoop takes it
};

std::optional<NewSessionInput> PrepareNewSession(const CompactCommandLine& line, int& exit,
                                                 const TextDeltaSink& on_text) {
  auto flags = FlagsOf(line);
  if (!flags.ok()) {
    exit = Usage(flags.error());
    return std::nullopt;
  }
  auto chosen = ChooseLoopContext(*flags, TokenizerDirFromEnvironment());
  if (!chosen.ok()) {
    exit = Usage(chosen.error().message);
    return std::nullopt;
  }
  auto recorder = CompactorFor(line, chosen->policy, on_text);
  if (!recorder.ok()) {
    exit = Usage(recorder.error());
    return std::nullopt;
  }
  auto input = ReadInput(line.transcript, kMaxTranscriptBytes);
  if (!input.ok()) {
    exit = Usage(input.error().message);
    return std::nullopt;
  }
  auto decoded = DecodeTranscript(*input);
  if (!decoded.ok()) {
    exit = Usage("invalid transcript " + decoded.error().Describe());
    return std::nullopt;
  }
  auto given = line.system.Given();
  if (!given.ok()) {
    exit = Usage(given.error());
    return std::nullopt;
  }
  CompactionLoopInput loop;
  loop.history = std::move(decoded).value();
  const std::size_t messages = loop.history.size();
  // The flag's text goes after the lifted system messages, as one more of them would.
  loop.system_prompt = LiftSystemPrompt(loop.history);
  const std::size_t lifted = messages - loop.history.size();
  if (given->has_value() && !(*given)->empty()) {
    if (!loop.system_prompt.empty())
      loop.system_prompt.append("\n\n");
    loop.system_prompt.append(**given);
  }
  loop.context = *chosen;
  loop.recorder = *recorder;
  NewSessionInput prepared{std::move(*chosen), std::move(recorder).value(),
                           CompactionLoopDefinition(std::move(loop))};
  // What the runtime would refuse (a message too large for a journal record, a prompt that is
  // not UTF-8) is bad input, refused before the journal and its directory exist.
  if (auto problem = DefinitionProblem(prepared.definition, lifted)) {
    exit = Usage(*problem);
    return std::nullopt;
  }
  return prepared;
}

// A fresh session whose one loop holds the transcript. nullopt: `exit` says how it ended.
std::optional<Target> NewSessionTarget(NewSessionInput input, Journal& journal,
                                       SessionOptions options, int& exit) {
  Target target;
  target.context = std::move(input.context);
  target.recorder = std::move(input.recorder);
  target.messages_before = input.definition.history.size();
  auto made = NewSessionLoop(std::move(input.definition), journal, std::move(options));
  if (!made.ok()) {
    PrintError(SessionRefusal(made.error()));
    // The definition is made of the input (transcript, system prompt, flags): one the runtime
    // cannot take (a message too large for a journal record, a prompt that is not UTF-8) is bad
    // input, exit 2 as an invalid transcript is.
    exit = made.error().kind == SessionErrorKind::kInvalidDefinition ? kExitUsage : kExitInvalid;
    return std::nullopt;
  }
  target.session = std::move(made->session);
  target.events = std::move(made->events);
  target.loop = made->loop;
  return target;
}

// The context of a restored loop: its own model's catalog entry when the CLI knows the
// provider, else the offline defaults (and the flags' overrides either way).
Result<LoopContext, std::string> RestoredContext(const CompactCommandLine& line,
                                                 const ModelKey& model) {
  std::optional<ModelKey> known;
  if (model.provider == "openai" || model.provider == "anthropic")
    known = model;
  auto chosen = ChooseLoopContext(line.context.Flags(known, line.compactor != "extractive"),
                                  TokenizerDirFromEnvironment());
  if (!chosen.ok())
    return Fail(chosen.error().message);
  return std::move(*chosen);
}

// A restored session; the target is --loop or the active loop. Nothing runs but the
// compaction: queued input stays queued (start_queued false) for the next chat.
// What a restore needs from the flags, checked before the journal is opened.
struct RestoreInput {
  Uuid session;
  std::optional<Uuid> loop;                  // --loop, else the active loop
  std::optional<std::string> system_prompt;  // --system / --system-file
};

std::optional<RestoreInput> PrepareRestore(const CompactCommandLine& line, int& exit) {
  RestoreInput prepared;
  auto id = ParseSessionId(line.session, "--session");
  if (!id.ok()) {
    exit = Usage(id.error());
    return std::nullopt;
  }
  prepared.session = *id;
  if (!line.loop.empty()) {
    auto parsed = Uuid::ParseCanonical(line.loop);
    if (!parsed.ok()) {
      exit = Usage("--loop is not a canonical UUID");
      return std::nullopt;
    }
    prepared.loop = *parsed;
  }
  // The compactor depends on the loop's policy (--compactor-window beside its summary budget):
  // each loop's is made, and checked, when the journal names the loop (RestoredTarget), still
  // before the lease is taken.
  auto given = line.system.Given();
  if (!given.ok()) {
    exit = Usage(given.error());
    return std::nullopt;
  }
  prepared.system_prompt = std::move(*given);
  return prepared;
}

std::optional<Target> RestoredTarget(const CompactCommandLine& line, RestoreInput input,
                                     Journal& journal, SessionOptions options, int& exit,
                                     const TextDeltaSink& on_text) {
  const std::optional<Uuid> wanted = input.loop;
  Target target;
  target.restored = true;
  std::string usage;
  std::map<Uuid, LoopContext> contexts;
  std::map<Uuid, std::shared_ptr<ObservedCompactor>> recorders;
  RestoreOptions restore;
  restore.start_queued = false;
  restore.take_over = line.take_over;
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    auto context = RestoredContext(line, info.model);
    if (!context.ok()) {
      usage = context.error();
      return Fail(SessionError{SessionErrorKind::kInvalidDefinition, usage});
    }
    LoopDefinition definition;
    definition.kind = info.kind;
    definition.model = info.model;
    definition.limits = context->limits;
    definition.system_prompt = info.system_prompt;  // a different --system is journaled below
    definition.client = std::make_shared<CompactOnlyModelClient>();
    if (info.compaction_policy) {
      auto recorder = CompactorFor(line, context->policy, on_text);
      if (!recorder.ok()) {
        usage = recorder.error();
        return Fail(SessionError{SessionErrorKind::kInvalidDefinition, usage});
      }
      definition.counter = context->counter;
      definition.compaction = context->policy;
      definition.compactor = *recorder;
      recorders.insert_or_assign(info.loop, std::move(recorder).value());
    }
    contexts.emplace(info.loop, std::move(*context));
    return definition;
  };
  const auto refused = [&](const SessionError& error) {
    if (!usage.empty()) {
      exit = Usage(usage);
    } else if (error.kind == SessionErrorKind::kSessionNotFound) {
      exit = Usage("no session " + line.session +
                   "; `harness sessions ls STORE` lists the sessions of a journal");
    } else {
      PrintError(SessionRefusal(error));
      exit = kExitInvalid;
    }
    return std::nullopt;
  };
  const auto no_loop = [&](const std::optional<Uuid>& loop) {
    exit = Usage(loop ? "the session has no loop " + loop->ToString() +
                            "; `harness sessions show STORE ID` lists its loops"
                      : std::string("the session has no active loop; name one with --loop"));
    return std::nullopt;
  };
  // Everything that needs no lease is checked before the lease is taken, so that a run which
  // cannot go on changes nothing: a take-over would fence off the live writer first.
  auto preview = PreviewRestore(journal, input.session, restore.resolve);
  if (!preview.ok())
    return refused(preview.error());
  const std::optional<Uuid> previewed = wanted ? wanted : preview->active_loop;
  const LoopFold* previewed_loop = previewed ? preview->FindLoop(*previewed) : nullptr;
  if (previewed_loop == nullptr)
    return no_loop(previewed);
  if (previewed_loop->exited)
    return refused(SessionError{SessionErrorKind::kLoopExited, "loop " + previewed->ToString()});
  contexts.clear();  // made again by Restore's own resolve
  recorders.clear();
  options.journal = &journal;
  options.session_id = input.session;
  auto restored = Session::Restore(std::move(options), std::move(restore));
  if (!restored.ok())
    return refused(restored.error());
  target.session = std::move(restored).value();
  target.events = target.session->Subscribe();
  const std::optional<Uuid> loop = wanted ? wanted : target.session->active_loop();
  std::optional<LoopSnapshot> snapshot;
  if (loop && contexts.contains(*loop)) {
    if (auto taken = target.session->Snapshot(*loop); taken.ok())
      snapshot = std::move(*taken);
  }
  if (!snapshot) {
    target.session->Suspend();
    return no_loop(loop);
  }
  // A loop without a compaction policy was given no compactor: refused as CompactToLoop would.
  const auto recorder = recorders.find(*loop);
  if (recorder == recorders.end()) {
    target.session->Suspend();
    return refused(SessionError{SessionErrorKind::kCompactionUnsupported, ""});
  }
  auto changed =
      ResumeSystemPrompt(*target.session, *loop, input.system_prompt, snapshot->system_prompt);
  if (!changed.ok()) {
    std::fprintf(stderr, "harness compact: %s\n", changed.error().c_str());
    target.session->Suspend();
    exit = kExitInvalid;
    return std::nullopt;
  }
  target.recorder = recorder->second;
  target.loop = *loop;
  target.context = std::move(contexts.at(*loop));
  target.messages_before = snapshot->history.size();
  // A changed system prompt dropped the measurement (it counted the old request).
  if (!*changed)
    target.measured = snapshot->measurement;
  return target;
}

// The lines before the compaction: the session, where it is, its context and the compactor.
void PrintStart(const CompactCommandLine& line, const Target& target, const JournalStore& store,
                std::FILE* human) {
  const Session& session = *target.session;
  if (target.restored) {
    const RestoreReport& report = session.restore_report();
    PrintLine(fmt::format("session {} restored from {}: {} records, loop {}, repaired {} replies, "
                          "closed {} turns",
                          session.id().ToString(), StoreForDisplay(store), report.through_seq,
                          target.loop.ToString(), report.replies_repaired, report.turns_closed),
              human);
  } else {
    PrintLine(fmt::format("session {} in {}", session.id().ToString(), StoreForDisplay(store)),
              human);
  }
  PrintLine(ContextReport(target.context) + ", compactor " + CompactorDisplayName(line.compactor),
            human);
}

// The flags that contradict one another, as a usage message; else the --emit format, if any.
Result<std::optional<EmitFormat>, std::string> CheckedEmit(const CompactCommandLine& line) {
  const bool resume = !line.session.empty();
  if (resume == !line.transcript.empty())
    return Fail(std::string("give a TRANSCRIPT or --session ID (one of them)"));
  if (!line.loop.empty() && !resume)
    return Fail(std::string("--loop needs --session"));
  if (resume && line.model_option->count() > 0)
    return Fail(std::string("--model is the session's own with --session"));
  if (line.emit_option->count() == 0) {
    if (line.output_option->count() > 0)
      return Fail(std::string("--output is where --emit writes; give --emit FORMAT too"));
    return std::optional<EmitFormat>();
  }
  const std::optional<EmitFormat> emit = ParseEmitFormat(line.emit);
  if (!emit) {
    return Fail(fmt::format("--emit: unknown format \"{}\"; the formats are: {}", line.emit,
                            EmitFormatNames()));
  }
  if (line.preview) {
    return Fail(std::string(
        "--emit writes what a commit installs and --preview installs nothing; drop one"));
  }
  if (line.json && line.output == "-") {
    return Fail(
        std::string("--emit with --json needs --output FILE: standard output holds the NDJSON "
                    "events and result"));
  }
  return emit;
}

// What the compaction ended with: the preview, the verdict and its result, the emitted history.
int Concluded(const CompactCommandLine& line, Session& session, const Uuid& loop,
              const Uuid& command, const LoopContext& context, const ObservedCompactor& recorder,
              const Outcome& outcome, const std::optional<EmitFormat>& emit, std::FILE* human) {
  if (outcome.proposed) {
    if (!line.json) {
      PrintLine(fmt::format("context before: {}, {} messages", ContextText(outcome.context.before),
                            outcome.context.messages_before),
                human);
      for (const std::string& text : ProposalLines(*outcome.proposed, outcome.context))
        PrintLine(text, human);
      PrintLine("preview: nothing was installed; run without --preview to compact", human);
    }
    return kExitOk;
  }
  const Verdict verdict = VerdictOf(outcome, recorder);
  if (verdict.unanswered) {
    std::fprintf(stderr, "harness compact: resolved without a CompactionCommitted event\n");
    return kExitInvalid;
  }
  if (verdict.rejected != nullptr && verdict.compactor_error) {
    // Fixed names (CompactorError::Message), then what a person checks; the cause itself is the
    // rejection's journaled detail, printed with it.
    std::string message = verdict.compactor_error->Message();
    const std::string hint =
        CompactorFailureHint(verdict.rejected->detail,
                             std::string_view(line.compactor).substr(0, line.compactor.find(':')));
    if (!hint.empty())
      message.append("; ").append(hint);
    PrintError(message);
  }

  if (line.json) {
    PrintJsonResult({session.id(), loop, command}, context, outcome, verdict);
  } else {
    PrintHumanResult(outcome, verdict, context.policy, human);
  }
  if (verdict.rejected)
    return kExitRejected;
  if (emit) {
    // The history the commit installed: nothing is written for a rejection.
    auto text = EmitMessages(*emit, ReplacementMessages(*outcome.committed));
    std::string problem;
    if (!text.ok()) {
      PrintError(text.error());
      return kExitInvalid;
    }
    if (!WriteOutput(line.output, *text, ".compact-tmp", problem)) {
      PrintError(problem);
      return kExitUsage;
    }
  }
  return kExitOk;
}

int RunCompaction(const CompactCommandLine& line, SignalWatch& signals) {
  const bool resume = !line.session.empty();
  auto checked = CheckedEmit(line);
  if (!checked.ok())
    return Usage(checked.error());
  const std::optional<EmitFormat> emit = *checked;
  // Standard output holds the emitted messages alone: the lines for a person go to stderr.
  std::FILE* const human = emit && line.output == "-" ? stderr : stdout;
  auto store = StoreFromOptions(line.data_dir, line.journal);
  if (!store.ok())
    return Usage(store.error());
  // Everything the flags and the input decide is checked first: nothing is created for a run
  // that cannot start.
  int exit = kExitOk;
  SystemEnv env;  // the session's time and ids, and the progress's clock; outlives them
  // A model compactor can take minutes: its progress goes to stderr (compaction_progress.h).
  std::optional<CompactionProgress> progress;
  if (line.compactor != "extractive")
    progress.emplace(CompactorDisplayName(line.compactor), RewritesInPlace(STDERR_FILENO), env);
  const TextDeltaSink on_text = progress ? progress->Sink() : TextDeltaSink();
  std::optional<RestoreInput> restore_input;
  std::optional<NewSessionInput> new_input;
  if (resume) {
    restore_input = PrepareRestore(line, exit);
    if (!restore_input)
      return exit;
  } else {
    new_input = PrepareNewSession(line, exit, on_text);
    if (!new_input)
      return exit;
  }
  // From here on a signal is cleaned up after (the journal, the lease); before, the input was
  // being read (possibly from a terminal) and a signal ends the command at once.
  signals.Arm();
  // A restore appends to a journal that must exist; a new session creates one when missing.
  auto journal = OpenJournalStore(*store, resume ? StoreAccess::kExisting : StoreAccess::kCreate);
  if (!journal.ok())
    return Usage(StoreProblem(*store, journal.error()));
  FailureLog failures;
  SessionOptions options;
  options.env = &env;
  options.on_failure = [&failures](const InfrastructureFailure& f) { failures.Add(f); };
  std::optional<Target> target =
      resume ? RestoredTarget(line, std::move(*restore_input), **journal, std::move(options), exit,
                              on_text)
             : NewSessionTarget(std::move(*new_input), **journal, std::move(options), exit);
  if (!target)
    return exit;
  Session& session = *target->session;
  const LoopContext& context = target->context;
  const auto& recorder = target->recorder;
  const std::optional<Uuid> loop = target->loop;
  Subscription& events = *target->events;
  Outcome outcome;
  outcome.context.messages_before = target->messages_before;
  outcome.context.before = target->measured;
  if (!line.json)
    PrintStart(line, *target, *store, human);
  auto command = line.preview ? session.PreviewCompaction(*loop) : session.CompactToLoop(*loop);
  if (!command.ok()) {
    PrintError(SessionRefusal(command.error()));
    session.Suspend();  // the other loops go on with the next chat, as after a compaction
    return kExitInvalid;
  }
  // A signal interrupts the compaction: it is rejected {interrupted} and its waiter answered,
  // both journaled, and the wait below ends with that reply. Registered after the command, it
  // runs at once for a signal that came earlier.
  std::stop_callback on_signal(signals.token(), [&] {
    std::fprintf(stderr,
                 "harness compact: %s: interrupting the compaction; the session is suspended (a "
                 "second signal exits at once)\n",
                 std::string(SignalNameOfExitCode(signals.exit_code())).c_str());
    (void)session.Interrupt(*loop);
  });

  AwaitCompaction(session, events, *loop, *command, failures, outcome, [&](const Event& event) {
    const auto print = [&] {
      if (line.json)
        PrintJson(EventJson(event));
      else
        PrintLine(EventLine(event, outcome.context), human);
    };
    if (progress) {
      progress->Print(print);
      progress->Show(event);
    } else {
      print();
    }
    // --preview: the proposal is shown, then discarded, so the history stays as it was; the
    // journal keeps both (docs/preview.md).
    const auto* proposed = std::get_if<CompactionProposed>(&event);
    if (line.preview && proposed != nullptr && !outcome.proposed &&
        std::find(proposed->waiter_command_ids.begin(), proposed->waiter_command_ids.end(),
                  *command) != proposed->waiter_command_ids.end()) {
      outcome.proposed = *proposed;
      if (auto discarded = session.DecideProposal(*loop, proposed->attempt_id, false);
          !discarded.ok())
        PrintError(SessionRefusal(discarded.error()));
    }
  });

  if (!outcome.reply) {
    for (const std::string& failure : failures.lines())
      PrintError("runtime failure: " + failure);
    if (const auto closed = events.close_reason())
      PrintError("events: " + closed->Message());
    std::fprintf(stderr, "harness compact: the compaction was not answered\n");
    return kExitInvalid;
  }

  return Concluded(line, session, *loop, *command, context, *recorder, outcome, emit, human);
}

}  // namespace

std::shared_ptr<CompactCommandLine> AddCompactCommand(CLI::App& app) {
  auto line = std::make_shared<CompactCommandLine>();
  line->command = app.add_subcommand(
      "compact",
      "Compact a transcript: open (or create) a session in the data directory with one loop\n"
      "whose history is the transcript, request a manual compaction, print every event as it\n"
      "happens, then the context before and after and the committed summary; the session is\n"
      "suspended, so --session goes on with it. With --session, compact a loop of an existing\n"
      "session instead (restored, then suspended).\n"
      "Exit 0 committed; 3 rejected (`rejected <reason>`, followed by `: <why>` when the\n"
      "runtime says why, and for an invalid summary `invalid_summary <reason>`); 2 bad usage or\n"
      "an invalid transcript; 1 the runtime failed.");
  auto* c = line->command;
  c->add_option("TRANSCRIPT", line->transcript, "transcript file (JSON array), or - for stdin");
  c->add_option("--compactor", line->compactor,
                "extractive (offline), scripted:PATH (a scripted model behind the model "
                "compactor), or PROVIDER:MODEL")
      ->capture_default_str();
  RegisterStoreOptions(*c, line->data_dir, line->journal);
  c->add_option("--session", line->session,
                "compact a loop of this session (restored from the journal) instead of a "
                "transcript; the session is suspended afterwards");
  c->add_option("--loop", line->loop, "with --session: the loop to compact (default: active)");
  c->add_flag("--take-over", line->take_over,
              "with --session: take the lease even if another writer holds it");
  line->context.Register(*c);
  line->system.Register(*c);
  line->model_option = c->add_option(
      "--model", line->model,
      "the conversation's model, PROVIDER:MODEL (e.g. openai:gpt-4o): its catalog entry gives the "
      "window, the output and the counter (exact for OpenAI models); default harness:offline");
  c->add_flag("--json", line->json, "NDJSON: one JSON object per event, then a CompactResult");
  line->emit_option = c->add_option(
      "--emit", line->emit,
      "write the messages that replace the transcript once the compaction commits (the "
      "summary, the pinned and the retained messages) in FORMAT: transcript (the "
      "harness codec), openai (a Chat Completions messages array), openai-responses (a "
      "Responses input array) or anthropic (a Messages messages array); to standard output, whose "
      "lines for a person then go to "
      "standard error, or to --output");
  line->output_option = c->add_option(
      "--output", line->output,
      "with --emit: the file to write (written whole, then renamed into place; required with "
      "--json); - for standard output");
  c->add_flag("--preview", line->preview,
              "show the summary and what it would replace, then discard it: the history stays "
              "as it was (exit 0 when a summary was shown, 3 when the attempt was rejected)");
  c->add_flag("--constrain-output", line->constrain_output,
              "send the model compactor's GBNF grammar of the summary envelope with the request "
              "(for llama.cpp servers; the Anthropic client drops it, OpenAI's API refuses it)");
  AddNumberOption(*c, "--compactor-window", line->compactor_window,
                  {kMinContextWindow, 100'000'000},
                  "the model compactor's window in tokens: a span larger than it leaves is "
                  "summarized in chunks, then merged (docs/chunked.md); without it, no limit");
  return line;
}

std::optional<int> RunCompactCommand(const CompactCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  // Made before the command starts any thread (signals.h).
  SignalWatch signals("harness compact", "");
  const int exit = RunCompaction(line, signals);
  // A signal ends the command with 128 + the signal whatever the compaction's outcome, as shells
  // expect; the output still says what the outcome was.
  return signals.exit_code() != 0 ? signals.exit_code() : exit;
}

}  // namespace harness::cli
