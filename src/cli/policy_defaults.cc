#include "policy_defaults.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "harness/inference/tokenizer.h"
#include "number_option.h"

namespace harness::cli {

ModelKey OfflineModel() {
  return ModelKey{"harness", "offline"};
}

std::optional<TokenCount> SummarizerBudget(TokenCount window, TokenCount max_summary_tokens) {
  constexpr TokenCount kPromptAndEnvelope = 4'096;
  const TokenCount reserved = max_summary_tokens + kPromptAndEnvelope;
  if (window <= reserved || (window - reserved) / 4 * 3 < max_summary_tokens)
    return std::nullopt;
  return (window - reserved) / 4 * 3;
}

std::string_view WindowSourceName(WindowSource source) {
  switch (source) {
    case WindowSource::kCatalog:
      return "catalog";
    case WindowSource::kFlag:
      return "flag";
    case WindowSource::kDefault:
      return "default";
  }
  return "";
}

namespace {

LoopContextError Problem(LoopContextErrorKind kind, std::string message) {
  return LoopContextError{kind, std::move(message)};
}

// Steps 2 and 3 of the contract: the window, the maximum input and the turn's output.
Result<ModelLimits, LoopContextError> ChooseLimits(const ContextFlags& flags,
                                                   const std::optional<CatalogModel>& catalog,
                                                   WindowSource& source) {
  ModelLimits limits;
  if (flags.context_window) {
    limits.window_tokens = *flags.context_window;
    source = WindowSource::kFlag;
  } else if (catalog) {
    limits.window_tokens = catalog->window_tokens;
    source = WindowSource::kCatalog;
  } else if (!flags.model) {
    limits.window_tokens = kDefaultContextWindow;
    source = WindowSource::kDefault;
  } else {
    // Nothing is known about this model: ResolveContextLimits names it ContextLimitUnknown.
    return Fail(Problem(LoopContextErrorKind::kLimitUnknown, ""));
  }
  if (limits.window_tokens < kMinContextWindow) {
    return Fail(Problem(LoopContextErrorKind::kWindow,
                        fmt::format("--context-window must be at least {}", kMinContextWindow)));
  }
  if (catalog && catalog->max_input_tokens < limits.window_tokens)
    limits.max_input_tokens = catalog->max_input_tokens;
  if (flags.max_output_tokens) {
    limits.max_output_tokens = *flags.max_output_tokens;
  } else {
    const TokenCount model_output = catalog ? catalog->max_output_tokens : kDefaultMaxOutputTokens;
    limits.max_output_tokens = std::min(model_output, limits.window_tokens / kOutputShareDivisor);
  }
  return limits;
}

}  // namespace

Result<LoopContext, LoopContextError> ChooseLoopContext(
    const ContextFlags& flags, const std::filesystem::path& tokenizer_dir) {
  LoopContext context;
  context.model = flags.model ? *flags.model : OfflineModel();
  context.catalog = LookupModel(context.model);

  auto limits = ChooseLimits(flags, context.catalog, context.window_source);
  if (!limits.ok() && limits.error().kind != LoopContextErrorKind::kLimitUnknown)
    return Fail(std::move(limits).error());
  if (limits.ok())
    context.limits = *limits;  // else all zero: resolving them below names the problem

  const bool exact = context.catalog && context.catalog->encoding;
  if (exact) {
    auto tokenizer = BpeTokenizer::Load(*context.catalog->encoding, tokenizer_dir);
    if (!tokenizer.ok()) {
      return Fail(Problem(LoopContextErrorKind::kTokenizer,
                          fmt::format("{}\nThe rank files come from scripts/fetch-tokenizers; set "
                                      "HARNESS_TOKENIZER_DIR to where they are.",
                                      tokenizer.error().Message())));
    }
    context.counter = std::make_shared<ExactLocalCounter>(
        std::make_shared<const BpeTokenizer>(std::move(tokenizer).value()));
  } else {
    context.counter = std::make_shared<EstimateCounter>();
  }

  CompactionPolicy& policy = context.policy;
  policy.automatic = true;
  policy.counter_policy = exact ? CounterPolicy::kRequireExact : CounterPolicy::kAllowConservative;
  policy.compact_at = kDefaultCompactAt;
  policy.rearm_below = kDefaultRearmBelow;
  policy.keep_recent_segments = flags.keep_recent_segments;
  policy.reserved_output = context.limits.max_output_tokens;
  policy.safety_margin = exact ? 0 : context.limits.window_tokens / kEstimateMarginDivisor;
  policy.count_timeout = kDefaultCountTimeout;
  policy.coverage = flags.coverage ? *flags.coverage : DefaultCoverage(flags.model_compactor);

  auto resolved = ResolveContextLimits(context.model, context.limits, policy.reserved_output,
                                       policy.safety_margin);
  if (!resolved.ok()) {
    std::string message = resolved.error().Message();
    if (resolved.error().cause == ContextLimitUnknownCause::kNoLimit) {
      message.append(
          " (the model is not in the catalog, see `harness models`; give its window with "
          "--context-window)");
    }
    return Fail(Problem(LoopContextErrorKind::kLimitUnknown, std::move(message)));
  }
  context.resolved = *resolved;
  const TokenCount share = std::max<TokenCount>(1, resolved->input_limit / kBudgetShareDivisor);
  policy.keep_recent_tokens =
      flags.keep_recent_tokens.value_or(std::min(kDefaultKeepRecentTokens, share));
  policy.max_summary_tokens =
      flags.max_summary_tokens.value_or(std::min(kDefaultMaxSummaryTokens, share));
  // After the limits: a zero output (from --max-output-tokens 0) is named by the policy.
  if (auto valid = ValidatePolicy(policy, context.counter->quality()); !valid.ok())
    return Fail(Problem(LoopContextErrorKind::kPolicy, valid.error().Message()));
  return context;
}

CoveragePolicy DefaultCoverage(bool model_compactor) {
  CoveragePolicy policy;
  if (model_compactor)
    policy.mode = CoverageMode::kRepair;
  return policy;
}

std::optional<CoveragePolicy> ParseCoverageOption(std::string_view text) {
  CoveragePolicy policy;
  if (text == "off" || text == "report" || text == "repair") {
    policy.mode = text == "off"      ? CoverageMode::kOff
                  : text == "report" ? CoverageMode::kReport
                                     : CoverageMode::kRepair;
    return policy;
  }
  constexpr std::string_view kEnforce = "enforce";
  if (text.substr(0, kEnforce.size()) != kEnforce)
    return std::nullopt;
  policy.mode = CoverageMode::kEnforce;
  text.remove_prefix(kEnforce.size());
  if (text.empty())
    return policy;
  if (text.front() != ':')
    return std::nullopt;
  text.remove_prefix(1);
  // 0, 1, 0.d to 0.dddd, 1.0 to 1.0000: basis points without floating point.
  if (text.empty() || (text.front() != '0' && text.front() != '1'))
    return std::nullopt;
  std::uint32_t points = text.front() == '1' ? kFullScaleBasisPoints : 0;
  text.remove_prefix(1);
  if (!text.empty()) {
    if (text.front() != '.' || text.size() < 2 || text.size() > 5)
      return std::nullopt;
    std::uint32_t scale = 1000;
    for (const char c : text.substr(1)) {
      if (c < '0' || c > '9')
        return std::nullopt;
      points += static_cast<std::uint32_t>(c - '0') * scale;
      scale /= 10;
    }
  }
  if (points > kFullScaleBasisPoints)
    return std::nullopt;
  policy.min_ratio = static_cast<BasisPoints>(points);
  return policy;
}

void ContextOptions::Register(CLI::App& command) {
  const NumberBounds tokens{1, kMaxTokensFlag};
  AddNumberOption(command, "--keep-recent-segments", keep_recent_segments,
                  {1, static_cast<std::uint64_t>(kMaxKeepRecentSegments)},
                  "user-started segments a compaction keeps verbatim");
  keep_recent_tokens_option =
      AddNumberOption(command, "--keep-recent-tokens", keep_recent_tokens, tokens,
                      "token target of the verbatim tail (default 8000, at most a quarter of "
                      "the input limit)");
  max_summary_tokens_option =
      AddNumberOption(command, "--max-summary-tokens", max_summary_tokens, tokens,
                      "summary token budget (default 4096, at most a quarter of the input "
                      "limit)");
  // These two have no fixed default (the catalog's, or the offline one): none is shown.
  context_window_option =
      AddNumberOption(command, "--context-window", context_window,
                      {kMinContextWindow, kMaxTokensFlag},
                      "the model's context window, tokens (default: the catalog's; 200000 "
                      "for a model outside the catalog without --model)")
          ->default_str("");
  max_output_tokens_option =
      AddNumberOption(command, "--max-output-tokens", max_output_tokens, tokens,
                      "the output a turn may ask for, tokens, reserved in the window (default: "
                      "the model's maximum, at most a quarter of the window)")
          ->default_str("");
  command
      .add_option("--coverage", coverage,
                  "the coverage gate: off, report, repair, enforce or enforce:RATIO (0 to 1); "
                  "repair writes the anchors a summary misses into it; enforce rejects a "
                  "summary that drops a user constraint or the current request, or keeps fewer "
                  "anchors than RATIO (default: repair for a model compactor, report for the "
                  "extractive one)")
      ->check(
          [](const std::string& value) -> std::string {
            return ParseCoverageOption(value)
                       ? std::string()
                       : std::string(
                             "expected off, report, repair, enforce or enforce:RATIO with "
                             "RATIO from 0 to 1 (at most four decimals)");
          },
          "MODE");
}

ContextFlags ContextOptions::Flags(std::optional<ModelKey> model, bool model_compactor) const {
  ContextFlags flags;
  flags.model = std::move(model);
  flags.model_compactor = model_compactor;
  if (context_window_option != nullptr && context_window_option->count() > 0)
    flags.context_window = context_window;
  if (max_output_tokens_option != nullptr && max_output_tokens_option->count() > 0)
    flags.max_output_tokens = max_output_tokens;
  flags.keep_recent_segments = keep_recent_segments;
  if (keep_recent_tokens_option != nullptr && keep_recent_tokens_option->count() > 0)
    flags.keep_recent_tokens = keep_recent_tokens;
  if (max_summary_tokens_option != nullptr && max_summary_tokens_option->count() > 0)
    flags.max_summary_tokens = max_summary_tokens;
  // Register's check accepted the text, so it parses; "" is not given.
  if (!coverage.empty())
    flags.coverage = ParseCoverageOption(coverage);
  return flags;
}

}  // namespace harness::cli
