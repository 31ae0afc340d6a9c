// The CLI's context and compaction defaults, in one place for every command that runs a loop
// (`harness compact` now, `harness chat` later). The library has no defaults (compaction/policy.h);
// these are the CLI's, documented in docs/cli.md ("Context and compaction defaults"): change
// both together.
//
// Contract of ChooseLoopContext(flags, tokenizer_dir), first failure wins:
// 1. The model is flags.model, or {"harness", "offline"} when absent (the offline compactor's
//    model). Its catalog entry (inference/catalog.h), if any, gives the window, maximum input
//    and maximum output.
// 2. The window is --context-window when given, else the catalog's, else (no --model)
//    kDefaultContextWindow. A model given with --model that is not in the catalog, without
//    --context-window, fails kLimitUnknown with ContextLimitUnknownError's message (cause "no
//    window or input limit known"). A window below kMinContextWindow fails kWindow.
// 3. The output a turn may ask for (ModelLimits::max_output_tokens, also the policy's reserved
//    output) is --max-output-tokens when given; else the catalog's maximum output (or
//    kDefaultMaxOutputTokens when the model is not in the catalog), capped at a quarter of the
//    window, so that at least three quarters stay for the input. A catalog maximum input at or
//    above an overriding window is dropped (the window then limits the input).
// 4. The counter: an OpenAI model in the catalog is counted exactly (ExactLocalCounter with the
//    entry's encoding, loaded from tokenizer_dir; a failure to load is kTokenizer, naming
//    scripts/fetch-tokenizers and HARNESS_TOKENIZER_DIR), with safety margin 0 and counter
//    policy RequireExact. Every other model gets EstimateCounter, a safety margin of a tenth of
//    the window (kEstimateMarginDivisor) and AllowConservative.
// 5. ResolveContextLimits(model, limits, reserved output, safety margin) failing is
//    kLimitUnknown with its message (e.g. an output that fills the window).
// 6. The policy: automatic, compact at kDefaultCompactAt (80 %), re-arm below
//    kDefaultRearmBelow (60 %), the keep-recent and summary budgets from the flags, count
//    timeout kDefaultCountTimeout, coverage from --coverage (default: DefaultCoverage). A budget
//    the command line does not give is its default constant below, but at most a quarter of the
//    resolved input limit (at least 1 token; kBudgetShareDivisor): the defaults were chosen for
//    windows of 32k tokens and more, and in a smaller one a retained tail of 8,000 tokens plus a
//    summary of 4,096 would leave no compaction possible. ValidatePolicy failing is kPolicy.
//
// ParseCoverageOption(text): "off", "report", "repair", "enforce" (ratio 0: the required classes
// only) or "enforce:RATIO" with RATIO a fraction from 0 to 1 with at most four decimals ("0.9",
// "1"); the required classes are the library's default (constraints and the current request).
// Anything else is nullopt.
// Thread safety: pure apart from reading the tokenizer files.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/compaction/policy.h"
#include "harness/context/limits.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/inference/catalog.h"
#include "harness/inference/counter.h"

namespace harness::cli {

inline constexpr BasisPoints kDefaultCompactAt = 8'000;
inline constexpr BasisPoints kDefaultRearmBelow = 6'000;
inline constexpr std::int64_t kDefaultKeepRecentSegments = 2;
inline constexpr TokenCount kDefaultKeepRecentTokens = 8'000;
inline constexpr TokenCount kDefaultMaxSummaryTokens = 4'096;
inline constexpr std::chrono::seconds kDefaultCountTimeout{10};
// Without --model: the offline model's window and output.
inline constexpr TokenCount kDefaultContextWindow = 200'000;
inline constexpr TokenCount kDefaultMaxOutputTokens = 8'192;
// Below this the reserved output and safety margin leave too little room to be useful.
inline constexpr TokenCount kMinContextWindow = 1'024;
// The largest token count any flag takes (a window, an output, a budget): far above every
// model's window, and far enough below 2^64 that no sum of counts can overflow.
inline constexpr TokenCount kMaxTokensFlag = 100'000'000;
// The most user-started segments --keep-recent-segments may ask to keep.
inline constexpr std::int64_t kMaxKeepRecentSegments = 1'000'000;
// The turn's output is at most a quarter of the window.
inline constexpr TokenCount kOutputShareDivisor = 4;
// A default compaction budget (retained tail, summary) is at most a quarter of the input limit.
inline constexpr TokenCount kBudgetShareDivisor = 4;
// An estimate keeps a tenth of the window free: code and non-English text can take more tokens
// than ceil(bytes / 4).
inline constexpr TokenCount kEstimateMarginDivisor = 10;

ModelKey OfflineModel();  // {"harness", "offline"}

// What one summarizer call may read (Compactor::InputBudget, docs/chunked.md) when the
// summarizer's window is `window`: the window less the summary's budget and 4 096 tokens for the
// prompt, the anchors and the envelope, at three quarters (the estimate counts four bytes a token;
// code and JSON are nearer three). nullopt when that leaves less than the summary's budget: such
// a window cannot take a chunk and a summary of it, and chunking would not help.
std::optional<TokenCount> SummarizerBudget(TokenCount window, TokenCount max_summary_tokens);

// What the command line says; unset optionals take the defaults above.
struct ContextFlags {
  std::optional<ModelKey> model;
  std::optional<TokenCount> context_window;
  std::optional<TokenCount> max_output_tokens;
  std::int64_t keep_recent_segments = kDefaultKeepRecentSegments;
  // Unset: the default, scaled down to a window too small for it (ChooseLoopContext, 6).
  std::optional<TokenCount> keep_recent_tokens;
  std::optional<TokenCount> max_summary_tokens;
  // Unset: DefaultCoverage(model_compactor).
  std::optional<CoveragePolicy> coverage;
  bool model_compactor = false;  // the loop's compactor is a model (or a script of one)
};

// The coverage a loop gets without --coverage: repair for a model compactor (a model's summary
// may drop what the extractive compactor never does: docs/decisions.md P21), report otherwise.
CoveragePolicy DefaultCoverage(bool model_compactor);

std::optional<CoveragePolicy> ParseCoverageOption(std::string_view text);

// Where the window came from, for the command's report.
enum class WindowSource : std::uint8_t { kCatalog, kFlag, kDefault };
std::string_view WindowSourceName(WindowSource source);  // "catalog", "flag", "default"

struct LoopContext {
  ModelKey model;
  std::optional<CatalogModel> catalog;  // the model's catalog entry, if any
  ModelLimits limits;                   // max_output_tokens: what a turn may ask for
  WindowSource window_source = WindowSource::kDefault;
  CompactionPolicy policy;
  ResolvedLimits resolved;
  std::shared_ptr<ContextCounter> counter;
};

// The context options of every command that runs a loop (compact, chat): --keep-recent-segments,
// --keep-recent-tokens, --max-summary-tokens, --context-window, --max-output-tokens and
// --coverage, with
// the defaults above. Register adds them to a command; Flags reads them after parsing (an
// option not given stays unset, so that ChooseLoopContext applies the catalog or the default).
struct ContextOptions {
  std::int64_t keep_recent_segments = kDefaultKeepRecentSegments;
  TokenCount keep_recent_tokens = kDefaultKeepRecentTokens;
  TokenCount max_summary_tokens = kDefaultMaxSummaryTokens;
  TokenCount context_window = 0;
  TokenCount max_output_tokens = 0;
  std::string coverage;  // "": not given (DefaultCoverage)
  CLI::Option* context_window_option = nullptr;
  CLI::Option* max_output_tokens_option = nullptr;
  CLI::Option* keep_recent_tokens_option = nullptr;
  CLI::Option* max_summary_tokens_option = nullptr;

  void Register(CLI::App& command);
  ContextFlags Flags(std::optional<ModelKey> model, bool model_compactor) const;
};

enum class LoopContextErrorKind : std::uint8_t {
  kWindow = 1,        // --context-window below kMinContextWindow
  kLimitUnknown = 2,  // ContextLimitUnknown: no window known, or the limits leave no input
  kTokenizer = 3,     // the exact counter's tokenizer data could not be loaded
  kPolicy = 4,        // ValidatePolicy refused the policy
};

struct LoopContextError {
  LoopContextErrorKind kind;
  std::string message;  // for the user: names the problem and what to do
};

Result<LoopContext, LoopContextError> ChooseLoopContext(const ContextFlags& flags,
                                                        const std::filesystem::path& tokenizer_dir);

}  // namespace harness::cli
