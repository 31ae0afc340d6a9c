// `harness eval DIR`: one manual compaction of every transcript of a directory, in three windows,
// through the same path as `harness compact` (compaction_run.h), each scored against its facts
// file where there is one and measured for its summary's quality (eval_quality.h), with totals
// per window and, when the directory holds a split file (eval_split.h), per split and window
// (docs/eval.md, docs/cli.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "commands.h"
#include "compaction_run.h"
#include "eval_facts.h"
#include "eval_quality.h"
#include "eval_split.h"
#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "harness/core/sha256.h"
#include "harness/event/compaction.h"
#include "harness/event/pins.h"
#include "harness/event/wire.h"
#include "harness/inference/tokenizer.h"
#include "harness/runtime/fold.h"
#include "input.h"
#include "policy_defaults.h"
#include "restore_preview.h"
#include "terminal_text.h"

namespace harness::cli {

struct EvalCommandLine {
  CLI::App* command = nullptr;
  std::string dir;
  std::string compactor = "extractive";
  std::string coverage;  // "": DefaultCoverage for the compactor
  bool json = false;
  bool constrain_output = false;
  bool masking = false;
  std::vector<std::string> must_commit;
};

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxTranscriptBytes = TranscriptLimits{}.max_bytes;
// A corpus is a handful of transcripts; a directory of more is a mistake, refused before any
// of them is read.
constexpr std::size_t kMaxTranscripts = 1000;
constexpr std::string_view kFactsSuffix = ".facts.json";
constexpr std::string_view kTranscriptSuffix = ".json";

constexpr std::string_view kSplitFile = "split";

// The three windows every transcript is compacted in: the CLI's default window ("full"), a
// window of half the transcript's own measured size ("half"), where the transcript alone is
// about twice what the loop may send, and a fixed 16384-token window ("16k"), the window small
// local models run with, where a retained tail may not fit at all.
enum class Setting { kFull, kHalf, k16k };
constexpr Setting kSettings[] = {Setting::kFull, Setting::kHalf, Setting::k16k};
constexpr TokenCount k16kWindow = 16384;

std::string_view SettingName(Setting setting) {
  switch (setting) {
    case Setting::kFull:
      return "full";
    case Setting::kHalf:
      return "half";
    case Setting::k16k:
      return "16k";
  }
  return "";
}

void PrintJson(std::string_view json) {
  std::fwrite(json.data(), 1, json.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Names, facts and details come from the files: shown, never executed, and each on the one line
// it is printed on (a file name with a newline cannot forge a result line).
void PrintLine(std::string_view text) {
  PrintJson(TerminalLine(text));
}

int Usage(std::string_view message) {
  std::fprintf(stderr, "harness eval: %s\n", TerminalLine(message).c_str());
  return kExitUsage;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// One transcript of the directory.
struct Entry {
  std::string name;  // the file name without ".json"
  fs::path transcript;
  std::optional<fs::path> facts;
  Split split = Split::kDev;  // a transcript the split file does not name is dev
};

Result<std::vector<Entry>, std::string> ListCorpus(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Fail(fmt::format("{} is not a directory", dir));
  std::map<std::string, Entry> entries;
  std::set<std::string> facts;
  // Every entry is listed by its name, whatever its type: a NAME.json or NAME.facts.json that is
  // a directory, a FIFO or a device is reported invalid when it is read (ReadInput refuses it
  // by its type), never skipped, so a facts file cannot be dropped without a word.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (EndsWith(file, kFactsSuffix)) {
      facts.insert(file.substr(0, file.size() - kFactsSuffix.size()));
    } else if (EndsWith(file, kTranscriptSuffix) && file.size() > kTranscriptSuffix.size()) {
      const std::string name = file.substr(0, file.size() - kTranscriptSuffix.size());
      entries[name] = Entry{name, it->path(), std::nullopt};
      if (entries.size() > kMaxTranscripts)
        return Fail(fmt::format("{} holds more than {} transcripts", dir, kMaxTranscripts));
    }
  }
  if (ec)
    return Fail(fmt::format("cannot list {}: {}", dir, ec.message()));
  std::vector<Entry> listed;
  for (auto& [name, entry] : entries) {
    if (facts.contains(name))
      entry.facts = fs::path(dir) / (name + std::string(kFactsSuffix));
    listed.push_back(std::move(entry));
  }
  return listed;
}

// What the commit kept verbatim, as it recorded it: the pinned messages, then the retained tail
// (for a cut inside the newest segment, that segment's request and the newest messages).
std::string VerbatimText(const CompactionCommitted& committed) {
  std::string text;
  for (const PinnedMessage& pinned : committed.pinned) {
    for (const Block& block : pinned.message.blocks())
      AppendVisibleText(block, text);
  }
  for (const Message& message : committed.retained) {
    for (const Block& block : message.blocks())
      AppendVisibleText(block, text);
  }
  return text;
}

// One compaction of one transcript in one window.
struct Run {
  Setting setting = Setting::kFull;
  TokenCount window = 0;
  std::string outcome;  // "committed", "rejected" or "failed" (the runtime did not answer)
  std::string reason;   // the rejection's wire name, or what failed
  std::string detail;   // the summary rule broken, the compactor's failure
  std::optional<TokenCount> tokens_before;
  std::optional<TokenCount> tokens_after;
  std::size_t retained = 0;
  std::size_t shortened = 0;  // tool outputs (and inputs) of the tail shortened to fit
  std::uint64_t shortened_bytes = 0;
  std::optional<TokenCount> summarizer_read;  // the compactor's input, estimated
  std::vector<std::size_t> lost;              // indexes of the facts not kept
  std::size_t kept = 0;
  SummaryQuality quality;                 // committed only
  TokenCount summary_tokens = 0;          // the summary's estimate (EstimateMessageTokens)
  TokenCount summary_budget = 0;          // the policy's max_summary_tokens
  std::optional<std::uint32_t> repaired;  // anchors coverage repair wrote (a coverage report)
  double milliseconds = 0;
  bool committed() const { return outcome == "committed"; }
};

// A transcript of the corpus, checked once. Its decoded messages are not kept between runs: each
// run decodes the file again (Load), so that while a compaction runs the loop's history is the
// only decoded copy of it (a short message's object is larger than its text: a second copy
// would cost more than the file). The digest makes a file changed during eval an error instead
// of a run of another transcript.
struct Prepared {
  fs::path path;
  Sha256Digest digest{};
  std::optional<Transcript> held;  // a transcript made in memory (--masking), not read from path
  std::string system_prompt;
  std::optional<std::vector<Fact>> facts;

  // The transcript's messages (the system prompt lifted), or why they cannot be had.
  Result<Transcript, std::string> Load() const {
    if (held)
      return Transcript(*held);
    auto text = ReadInput(path.string(), kMaxTranscriptBytes, InputFile::kRegularOnly);
    if (!text.ok())
      return Fail(text.error().message);
    if (Sha256(*text) != digest)
      return Fail(fmt::format("{} changed while eval read it", path.filename().string()));
    auto decoded = DecodeTranscript(*text);
    if (!decoded.ok())
      return Fail("invalid transcript " + decoded.error().Describe());
    Transcript history = std::move(decoded).value();
    LiftSystemPrompt(history);
    return history;
  }
};

// The loop's history is loaded for it and moved into it; the summary's measures (the span they
// read) load the transcript again once the session, its journal and the loop's history are gone,
// so the transcript is decoded once at a time.
Run Compact(const EvalCommandLine& line, const Prepared& prepared, Setting setting,
            const LoopContext& context) {
  Run run;
  run.setting = setting;
  run.window = context.limits.window_tokens;
  CompactorChoice choice = ChooseCompactor(line.compactor, line.constrain_output);
  auto history = prepared.Load();
  if (!history.ok()) {
    run.outcome = "failed";
    run.reason = history.error();
    return run;
  }
  CompactRequest request;
  request.messages = std::move(history).value();
  request.system_prompt = prepared.system_prompt;
  request.model = context.model;
  request.limits = context.limits;
  request.policy = context.policy;
  request.counter = context.counter;
  request.compactor = std::move(choice.compactor);
  // In memory: the session, its journal and the loop's history are gone when it returns.
  auto done = CompactConversation(std::move(request));
  run.milliseconds = std::chrono::duration<double, std::milli>(done.ok() ? done->report.waited
                                                                         : done.error().waited)
                         .count();
  if (!done.ok()) {
    const CompactFailure& failure = done.error();
    if (failure.before)
      run.tokens_before = failure.before->input_tokens;
    switch (failure.kind) {
      case CompactFailureKind::kInvalidRequest:
      case CompactFailureKind::kRefused:
        run.outcome = "failed";
        run.reason = failure.session ? SessionRefusal(*failure.session) : failure.message;
        break;
      case CompactFailureKind::kUnanswered:
        run.outcome = "failed";
        run.reason = "the compaction was not answered";
        run.detail = failure.runtime_failures;
        break;
      case CompactFailureKind::kRejected:
        run.outcome = "rejected";
        run.reason = CompactRejectReasonName(*failure.reason);
        if (failure.detail)
          run.detail = DescribeRejectDetail(*failure.detail);
        else if (failure.invalid_summary)
          run.detail =
              fmt::format("invalid_summary {}", InvalidSummaryReasonName(*failure.invalid_summary));
        else if (failure.compactor_error)
          run.detail = failure.compactor_error->Message();
        break;
    }
    return run;
  }
  if (done->report.before)
    run.tokens_before = done->report.before->input_tokens;
  run.outcome = "committed";
  run.summarizer_read = done->report.summarizer_input_tokens;
  run.tokens_after = done->report.after.input_tokens;
  run.retained = done->report.retained;
  run.shortened = done->report.shortened;
  const CompactionCommitted& committed = done->committed;
  run.shortened_bytes = ShortenedBytes(committed.shortened);
  const std::string& summary = done->summary;
  const std::string verbatim = VerbatimText(committed);
  {
    auto history = prepared.Load();
    if (!history.ok()) {
      run.outcome = "failed";
      run.reason = history.error();
      return run;
    }
    const std::span<const Message> span(history->data(),
                                        SummarizedCount(*history, committed.retained));
    run.quality = MeasureSummary(summary, span, verbatim);
  }
  run.summary_tokens = EstimateMessageTokens(Message(committed.summary));
  run.summary_budget = context.policy.max_summary_tokens;
  if (committed.coverage)
    run.repaired = committed.coverage->repaired_count;
  if (prepared.facts) {
    // The summary plus what stayed verbatim: what the next request holds of the history.
    const FactMatcher matcher(summary + "\n" + verbatim);
    for (std::size_t i = 0; i < prepared.facts->size(); ++i) {
      if (matcher.Kept((*prepared.facts)[i]))
        ++run.kept;
      else
        run.lost.push_back(i);
    }
  }
  return run;
}

// The context of a setting: the CLI's defaults (the coverage mode as the line chose it), for
// "half" a window of half the tokens the full run measured (never below the smallest window the
// CLI takes), for "16k" 16384 tokens.
Result<LoopContext, std::string> ContextFor(const EvalCommandLine& line, Setting setting,
                                            const std::optional<Run>& full) {
  ContextFlags flags;
  flags.model_compactor = line.compactor != "extractive";
  if (!line.coverage.empty())
    flags.coverage = ParseCoverageOption(line.coverage);
  if (setting == Setting::kHalf) {
    if (!full || !full->tokens_before)
      return Fail(std::string("the transcript was not measured in the full window"));
    flags.context_window = std::max(kMinContextWindow, *full->tokens_before / 2);
  } else if (setting == Setting::k16k) {
    flags.context_window = k16kWindow;
  }
  auto chosen = ChooseLoopContext(flags, TokenizerDirFromEnvironment());
  if (!chosen.ok())
    return Fail(chosen.error().message);
  return std::move(*chosen);
}

std::string Ratio(const Run& run) {
  if (!run.tokens_before || !run.tokens_after || *run.tokens_before == 0)
    return "";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(*run.tokens_after) /
                                    static_cast<double>(*run.tokens_before));
}

std::string Tokens(const std::optional<TokenCount>& count) {
  return count ? std::to_string(*count) : std::string("?");
}

std::string Percent(std::size_t part, std::size_t whole) {
  return fmt::format(
      "{:.1f}%", whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// The summary's measures, at the end of a result or totals line.
std::string QualityText(const SummaryQuality& q, TokenCount tokens, TokenCount budget) {
  return fmt::format(
      "; summary {}/{} tokens, raw {}, repeated {}/{} items, user messages kept {}/{}", tokens,
      budget, Percent(q.raw_bytes, q.summary_bytes), q.repeated, q.items, q.user_messages_kept,
      q.user_messages);
}

void WriteQuality(WireWriter& w, std::string& out, const SummaryQuality& q, TokenCount tokens,
                  TokenCount budget) {
  w.Uint("summary_tokens", tokens)
      .Uint("summary_budget", budget)
      .Uint("summary_bytes", q.summary_bytes)
      .Uint("raw_bytes", q.raw_bytes);
  w.Key("raw_share");
  out.append(fmt::format(
      "{:.4f}", q.summary_bytes == 0
                    ? 0.0
                    : static_cast<double>(q.raw_bytes) / static_cast<double>(q.summary_bytes)));
  w.Uint("items", q.items)
      .Uint("repeated", q.repeated)
      .Uint("user_messages", q.user_messages)
      .Uint("user_messages_kept", q.user_messages_kept);
}

void PrintHuman(const Entry& entry, const Prepared& prepared, const Run& run) {
  std::string row = fmt::format("{} {} (window {}): {}", entry.name, SettingName(run.setting),
                                run.window, run.outcome);
  if (!run.committed()) {
    row.append(" ").append(run.reason);
    if (!run.detail.empty())
      row.append(" (").append(run.detail).append(")");
    row.append(fmt::format(", {} tokens", Tokens(run.tokens_before)));
  } else {
    row.append(fmt::format(", {} -> {} tokens ({}), summary + {} messages",
                           Tokens(run.tokens_before), Tokens(run.tokens_after), Ratio(run),
                           run.retained));
    if (run.shortened > 0) {
      row.append(fmt::format(" ({} tool outputs shortened, {} bytes cut)", run.shortened,
                             run.shortened_bytes));
    }
    if (prepared.facts)
      row.append(fmt::format(", facts kept {}/{}", run.kept, prepared.facts->size()));
    if (run.repaired.value_or(0) > 0)
      row.append(fmt::format(", repaired {}", *run.repaired));
  }
  row.append(fmt::format(", {:.1f} ms", run.milliseconds));
  if (run.committed())
    row.append(QualityText(run.quality, run.summary_tokens, run.summary_budget));
  PrintLine(row);
  if (prepared.facts) {
    for (const std::size_t i : run.lost)
      PrintLine("  lost: " + (*prepared.facts)[i].fact);
  }
}

void PrintJsonRun(const Entry& entry, const Prepared& prepared, const Run& run, bool split) {
  std::string out;
  WireWriter w(out);
  w.String("type", "EvalResult").String("name", entry.name);
  if (split)
    w.String("split", SplitName(entry.split));
  w.String("setting", SettingName(run.setting))
      .Uint("context_window", run.window)
      .String("outcome", run.outcome);
  if (!run.committed())
    w.String("reason", run.reason).String("detail", run.detail);
  if (run.tokens_before)
    w.Uint("tokens_before", *run.tokens_before);
  if (run.tokens_after)
    w.Uint("tokens_after", *run.tokens_after).Uint("retained", run.retained);
  if (run.repaired)
    w.Uint("repaired", *run.repaired);
  if (run.shortened > 0)
    w.Uint("shortened", run.shortened).Uint("shortened_bytes", run.shortened_bytes);
  if (prepared.facts) {
    w.Uint("facts", prepared.facts->size());
    if (run.committed()) {
      w.Uint("facts_kept", run.kept);
      w.Key("facts_lost");
      out.push_back('[');
      for (std::size_t n = 0; n < run.lost.size(); ++n) {
        if (n > 0)
          out.push_back(',');
        AppendJsonString(out, (*prepared.facts)[run.lost[n]].fact);
      }
      out.push_back(']');
    }
  }
  if (run.committed())
    WriteQuality(w, out, run.quality, run.summary_tokens, run.summary_budget);
  w.Uint("microseconds", static_cast<std::uint64_t>(run.milliseconds * 1000));
  w.Close();
  PrintJson(out);
}

struct Totals {
  std::size_t runs = 0;
  std::size_t committed = 0;
  TokenCount tokens_before = 0;  // over the committed runs
  TokenCount tokens_after = 0;
  std::size_t facts = 0;  // over the committed runs with facts
  std::size_t kept = 0;
  SummaryQuality quality;         // summed over the committed runs
  TokenCount summary_tokens = 0;  // likewise
  TokenCount summary_budget = 0;
  double milliseconds = 0;

  void Add(const Run& run, const Prepared& prepared) {
    ++runs;
    milliseconds += run.milliseconds;
    if (!run.committed())
      return;
    ++committed;
    tokens_before += run.tokens_before.value_or(0);
    tokens_after += run.tokens_after.value_or(0);
    if (prepared.facts) {
      facts += prepared.facts->size();
      kept += run.kept;
    }
    quality.summary_bytes += run.quality.summary_bytes;
    quality.raw_bytes += run.quality.raw_bytes;
    quality.items += run.quality.items;
    quality.repeated += run.quality.repeated;
    quality.user_messages += run.quality.user_messages;
    quality.user_messages_kept += run.quality.user_messages_kept;
    summary_tokens += run.summary_tokens;
    summary_budget += run.summary_budget;
  }
};

// The totals of a window, over every transcript (no split) or over one split's.
void PrintTotals(Setting setting, std::optional<Split> split, const Totals& t, bool json) {
  if (json) {
    std::string out;
    WireWriter w(out);
    w.String("type", "EvalTotals");
    if (split)
      w.String("split", SplitName(*split));
    w.String("setting", SettingName(setting))
        .Uint("transcripts", t.runs)
        .Uint("committed", t.committed)
        .Uint("tokens_before", t.tokens_before)
        .Uint("tokens_after", t.tokens_after)
        .Uint("facts", t.facts)
        .Uint("facts_kept", t.kept);
    WriteQuality(w, out, t.quality, t.summary_tokens, t.summary_budget);
    w.Uint("microseconds", static_cast<std::uint64_t>(t.milliseconds * 1000));
    w.Close();
    PrintJson(out);
    return;
  }
  std::string line = fmt::format("total {}{}: {}/{} committed",
                                 split ? std::string(SplitName(*split)) + " " : std::string(),
                                 SettingName(setting), t.committed, t.runs);
  if (t.committed > 0)
    line.append(fmt::format(", {} -> {} tokens", t.tokens_before, t.tokens_after));
  if (t.facts > 0) {
    line.append(fmt::format(", facts kept {}/{} ({:.1f}%) over the committed", t.kept, t.facts,
                            100.0 * static_cast<double>(t.kept) / static_cast<double>(t.facts)));
  }
  line.append(fmt::format(", {:.1f} ms", t.milliseconds));
  if (t.committed > 0)
    line.append(QualityText(t.quality, t.summary_tokens, t.summary_budget));
  PrintLine(line);
}

// --masking (docs/masking.md, docs/compactors.md): the transcript with its old tool output masked
// as the runtime masks it (PlanMasking with the window's policy, then the runtime's MaskHistory
// over the message ids a loop made from it would have), and how many outputs.
std::pair<Transcript, std::size_t> Masked(const Transcript& history, const LoopContext& context) {
  auto plan = PlanMasking(history, 0, context.policy, {}, {});
  if (!plan.ok())
    return {history, 0};
  const Uuid created = Uuid::V4();
  std::vector<Uuid> history_ids, picked;
  for (std::size_t i = 0; i < history.size(); ++i)
    history_ids.push_back(InitialMessageId(created, i));
  for (std::size_t i : *plan)
    picked.push_back(history_ids[i]);
  auto masked = MaskHistory(history, history_ids, 0, {}, {}, picked);
  if (!masked.ok())
    return {history, 0};
  return {std::move(masked->history), plan->size()};
}

// The facts `history` alone holds (a masked transcript is the whole next request).
std::size_t FactsKeptIn(const Transcript& history, const std::vector<Fact>& facts) {
  std::string text;
  for (const Message& message : history) {
    for (const Block& block : message.blocks())
      AppendVisibleText(block, text);
  }
  const FactMatcher matcher(text);
  std::size_t kept = 0;
  for (const Fact& fact : facts)
    kept += matcher.Kept(fact) ? 1 : 0;
  return kept;
}

// The savings of the first stage beside the summary's, in the default window: masking alone
// (the masked transcript's count, and `masked_kept` facts), the summary alone (the full run),
// both (the masked transcript compacted).
void PrintMasking(const EvalCommandLine& line, const Entry& entry, const Prepared& prepared,
                  const Run& full, std::size_t outputs, std::size_t masked_kept, const Run& both) {
  const auto percent = [&](const std::optional<TokenCount>& after) -> std::string {
    if (!after || !full.tokens_before || *full.tokens_before == 0)
      return "?";
    return fmt::format(
        "{:.1f}%", 100.0 * static_cast<double>(*after) / static_cast<double>(*full.tokens_before));
  };
  // Not std::optional: g++ -O3 sees a copy of one as maybe uninitialized.
  const bool has_summary = full.committed() && full.tokens_after.has_value();
  const bool has_both = both.committed() && both.tokens_after.has_value();
  const TokenCount summary_tokens = full.tokens_after.value_or(0);
  const TokenCount both_tokens = both.tokens_after.value_or(0);
  const auto shown = [](bool has, TokenCount tokens) {
    return has ? std::to_string(tokens) : std::string("?");
  };
  const auto share = [&](bool has, TokenCount tokens) {
    return has ? percent(tokens) : std::string("?");
  };
  if (line.json) {
    std::string out;
    WireWriter w(out);
    w.String("type", "EvalMasking").String("name", entry.name).Uint("outputs_masked", outputs);
    if (full.tokens_before)
      w.Uint("tokens_before", *full.tokens_before);
    if (both.tokens_before)
      w.Uint("tokens_masked", *both.tokens_before);
    if (has_summary)
      w.Uint("tokens_summary", summary_tokens);
    if (has_both)
      w.Uint("tokens_both", both_tokens);
    if (full.summarizer_read)
      w.Uint("summarizer_read_summary", *full.summarizer_read);
    if (both.summarizer_read)
      w.Uint("summarizer_read_both", *both.summarizer_read);
    if (prepared.facts) {
      w.Uint("facts", prepared.facts->size()).Uint("facts_kept_masked", masked_kept);
      if (both.committed())
        w.Uint("facts_kept_both", both.kept);
    }
    w.Close();
    PrintJson(out);
    return;
  }
  std::string row = fmt::format(
      "{} masking: {} tokens; masked alone {} ({}, {} outputs), summary alone {} ({}), both {} "
      "({})",
      entry.name, Tokens(full.tokens_before), Tokens(both.tokens_before),
      percent(both.tokens_before), outputs, shown(has_summary, summary_tokens),
      share(has_summary, summary_tokens), shown(has_both, both_tokens),
      share(has_both, both_tokens));
  if (full.summarizer_read && both.summarizer_read) {
    row.append(fmt::format("; the summarizer read {} -> {} tokens", *full.summarizer_read,
                           *both.summarizer_read));
  }
  if (prepared.facts) {
    row.append(fmt::format(", facts kept masked alone {}/{}", masked_kept, prepared.facts->size()));
    if (both.committed())
      row.append(fmt::format(", both {}/{}", both.kept, prepared.facts->size()));
  }
  PrintLine(row);
}

// NAME (the full and half windows) or NAME:full / NAME:half / NAME:16k.
struct Requirement {
  std::string name;
  std::optional<Setting> setting;
};

// Whether a requirement of `named` (none: a bare NAME, or no --must-commit at all) is one in
// `setting`. The 16k window is measured for every transcript but required only by NAME:16k: a
// long step's tail does not fit it, and that is what it is there to show.
bool RequiredIn(const std::optional<Setting>& named, Setting setting) {
  return named ? *named == setting : setting != Setting::k16k;
}

Result<std::vector<Requirement>, std::string> Requirements(const std::vector<std::string>& given,
                                                           const std::vector<Entry>& entries) {
  std::vector<Requirement> out;
  for (const std::string& spec : given) {
    Requirement r;
    r.name = spec;
    for (const Setting setting : kSettings) {
      // fmt, not ":" + std::string: g++ 12 -O3 warns a false -Wrestrict on that concatenation.
      const std::string suffix = fmt::format(":{}", SettingName(setting));
      if (EndsWith(spec, suffix)) {
        r.name = spec.substr(0, spec.size() - suffix.size());
        r.setting = setting;
        break;
      }
    }
    if (std::none_of(entries.begin(), entries.end(),
                     [&](const Entry& e) { return e.name == r.name; })) {
      return Fail(
          fmt::format("--must-commit {}: no transcript {}.json in the directory", spec, r.name));
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The transcript and its facts, or why they cannot be used.
Result<Prepared, std::string> Prepare(const Entry& entry) {
  auto text = ReadInput(entry.transcript.string(), kMaxTranscriptBytes, InputFile::kRegularOnly);
  if (!text.ok())
    return Fail(text.error().message);
  auto decoded = DecodeTranscript(*text);
  if (!decoded.ok())
    return Fail("invalid transcript " + decoded.error().Describe());
  Prepared prepared;
  prepared.path = entry.transcript;
  prepared.digest = Sha256(*text);
  Transcript history = std::move(decoded).value();
  prepared.system_prompt = LiftSystemPrompt(history);
  if (entry.facts) {
    const FactsLimits limits;
    auto facts_text = ReadInput(entry.facts->string(), limits.max_bytes, InputFile::kRegularOnly);
    if (!facts_text.ok())
      return Fail(facts_text.error().message);
    auto facts = ParseFacts(*facts_text, limits);
    if (!facts.ok())
      return Fail(fmt::format("invalid facts file {}: {}", entry.facts->filename().string(),
                              facts.error().Describe()));
    prepared.facts = std::move(facts).value();
  }
  return prepared;
}

// DIR/split, when there is one: each entry's split set from it (dev when it names none). True
// when the directory has a split file; an unusable one is why, naming its line.
Result<bool, std::string> ReadSplit(const std::string& dir, std::vector<Entry>& entries) {
  const fs::path path = fs::path(dir) / kSplitFile;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status))
    return false;
  const SplitLimits limits;
  auto text = ReadInput(path.string(), limits.max_bytes, InputFile::kRegularOnly);
  if (!text.ok())
    return Fail(text.error().message);
  auto parsed = ParseSplit(*text, limits);
  if (!parsed.ok())
    return Fail(fmt::format("{} {}", path.string(), parsed.error().Describe()));
  for (const SplitEntry& listed : *parsed) {
    const auto entry = std::find_if(entries.begin(), entries.end(),
                                    [&](const Entry& e) { return e.name == listed.name; });
    if (entry == entries.end()) {
      return Fail(fmt::format("{} line {}: no transcript {}.json in the directory", path.string(),
                              listed.line, listed.name));
    }
    entry->split = listed.split;
  }
  return true;
}

int RunEval(const EvalCommandLine& line) {
  CompactorChoice choice = ChooseCompactor(line.compactor, line.constrain_output);
  if (!choice.compactor)
    return Usage(choice.problem);
  auto entries = ListCorpus(line.dir);
  if (!entries.ok())
    return Usage(entries.error());
  if (entries->empty())
    return Usage(fmt::format("{} holds no NAME.json transcript", line.dir));
  auto required = Requirements(line.must_commit, *entries);
  if (!required.ok())
    return Usage(required.error());
  const auto split = ReadSplit(line.dir, *entries);
  if (!split.ok())
    return Usage(split.error());

  bool invalid_input = false;
  std::set<std::pair<std::string, Setting>> not_committed;
  std::map<Setting, Totals> totals;
  std::map<std::pair<Split, Setting>, Totals> split_totals;
  for (const Entry& entry : *entries) {
    auto prepared = Prepare(entry);
    if (!prepared.ok()) {
      invalid_input = true;
      for (const Setting setting : kSettings)
        not_committed.insert({entry.name, setting});
      if (line.json) {
        std::string out;
        WireWriter w(out);
        w.String("type", "EvalResult").String("name", entry.name);
        if (*split)
          w.String("split", SplitName(entry.split));
        w.String("outcome", "invalid").String("reason", prepared.error());
        w.Close();
        PrintJson(out);
      } else {
        PrintLine(fmt::format("{}: invalid: {}", entry.name, prepared.error()));
      }
      continue;
    }
    std::optional<Run> full;
    for (const Setting setting : kSettings) {
      auto context = ContextFor(line, setting, full);
      Run run;
      if (!context.ok()) {
        run.setting = setting;
        run.outcome = "failed";
        run.reason = context.error();
      } else {
        run = Compact(line, *prepared, setting, *context);
      }
      if (setting == Setting::kFull)
        full = run;
      totals[setting].Add(run, *prepared);
      split_totals[{entry.split, setting}].Add(run, *prepared);
      if (!run.committed())
        not_committed.insert({entry.name, setting});
      if (line.json)
        PrintJsonRun(entry, *prepared, run, *split);
      else
        PrintHuman(entry, *prepared, run);
    }
    if (line.masking && full) {
      if (auto context = ContextFor(line, Setting::kFull, full); context.ok()) {
        auto history = prepared->Load();
        if (!history.ok()) {
          PrintLine(fmt::format("{}: masking: {}", entry.name, history.error()));
          continue;
        }
        Prepared masked;
        masked.system_prompt = prepared->system_prompt;
        masked.facts = prepared->facts;
        std::size_t outputs = 0;
        std::tie(masked.held, outputs) = Masked(*history, *context);
        history->clear();
        const std::size_t masked_kept = masked.facts ? FactsKeptIn(*masked.held, *masked.facts) : 0;
        const Run both = Compact(line, masked, Setting::kFull, *context);
        PrintMasking(line, entry, masked, *full, outputs, masked_kept, both);
      }
    }
  }
  for (const Setting setting : kSettings)
    PrintTotals(setting, std::nullopt, totals[setting], line.json);
  if (*split) {
    for (const Split part : {Split::kTest, Split::kDev}) {
      for (const Setting setting : kSettings)
        PrintTotals(setting, part, split_totals[{part, setting}], line.json);
    }
  }

  if (invalid_input)
    return kExitUsage;
  // Without --must-commit every transcript must commit in the full and half windows.
  bool failed = false;
  if (required->empty()) {
    failed = std::any_of(not_committed.begin(), not_committed.end(),
                         [](const auto& run) { return RequiredIn(std::nullopt, run.second); });
  } else {
    for (const Requirement& r : *required) {
      for (const Setting setting : kSettings) {
        if (RequiredIn(r.setting, setting) && not_committed.contains({r.name, setting})) {
          failed = true;
          std::fprintf(stderr, "harness eval: %s did not commit in the %s window\n",
                       TerminalLine(r.name).c_str(), std::string(SettingName(setting)).c_str());
        }
      }
    }
  }
  return failed ? kExitRejected : kExitOk;
}

}  // namespace

std::shared_ptr<EvalCommandLine> AddEvalCommand(CLI::App& app) {
  auto line = std::make_shared<EvalCommandLine>();
  line->command = app.add_subcommand(
      "eval",
      "Compact every NAME.json transcript of DIR (a fresh in-memory session each, the same path\n"
      "as `harness compact`) three times: in the default window, in a window of half the\n"
      "transcript's measured size and in a 16384-token window. Where NAME.facts.json exists,\n"
      "count the facts the summary plus the retained tail keep; measure each summary (raw\n"
      "output, repeated items, the user's messages kept, tokens). Prints one line per\n"
      "transcript and window, then totals per window, and per split (test, dev) when DIR\n"
      "holds a split file.\n"
      "Exit 0 every required transcript committed (all of them in the full and half windows,\n"
      "or those named by --must-commit); 3 one did not; 2 bad usage, an invalid transcript,\n"
      "facts or split file.");
  auto* c = line->command;
  c->add_option("DIR", line->dir, "the corpus directory")->required();
  c->add_option("--compactor", line->compactor,
                "extractive (offline), scripted:PATH, or PROVIDER:MODEL")
      ->capture_default_str();
  c->add_option("--coverage", line->coverage,
                "the coverage gate: off, report, repair, enforce or enforce:RATIO (default: "
                "repair for a model compactor, report for the extractive one)")
      ->check(
          [](const std::string& value) -> std::string {
            return ParseCoverageOption(value) ? std::string()
                                              : std::string(
                                                    "expected off, report, repair, "
                                                    "enforce or enforce:RATIO");
          },
          "MODE");
  c->add_flag("--json", line->json,
              "NDJSON: one EvalResult per transcript and window, then "
              "one EvalTotals per window");
  c->add_flag("--constrain-output", line->constrain_output,
              "send the model compactor's GBNF grammar with the request (llama.cpp servers)");
  c->add_flag("--masking", line->masking,
              "also report, in the default window, the tokens old tool output masking saves "
              "alone, the summary alone, and both (docs/compactors.md)");
  c->add_option("--must-commit", line->must_commit,
                "NAME (the full and half windows), NAME:full, NAME:half or NAME:16k: only these "
                "decide the exit status (repeatable); without it, every transcript must commit in "
                "the full and half windows");
  return line;
}

std::optional<int> RunEvalCommand(const EvalCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return RunEval(line);
}

}  // namespace harness::cli
