// libFuzzer target for ParseFacts and the scoring rule of `harness eval` (src/cli/eval_facts.h):
// any bytes in, read as a facts file and as the text the facts are looked for in.
// Invariants: nothing crashes; a parse either fails with a path that starts at "$" or returns
// facts within the limits, each findable (keywords or an alternative, none of them blank);
// NormalizeForMatch is idempotent; a fact whose keywords are cut from the normalized text itself
// is kept.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "eval_facts.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "eval_facts_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace harness::cli;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  FactsLimits limits;
  limits.max_bytes = 64 * 1024;
  auto facts = ParseFacts(input, limits);
  if (!facts.ok()) {
    Check(facts.error().path.rfind('$', 0) == 0, "an error path does not start at $");
  } else {
    Check(!facts->empty() && facts->size() <= limits.max_facts, "fact count out of bounds");
    const FactMatcher matcher(input);
    for (const Fact& fact : *facts) {
      Check(!fact.keywords.empty() || !fact.or_keywords.empty(), "a fact that cannot be found");
      Check(fact.keywords.size() <= limits.max_keywords, "too many keywords");
      Check(fact.or_keywords.size() <= limits.max_alternatives, "too many alternatives");
      for (const auto& list : fact.or_keywords)
        Check(!list.empty(), "an empty alternative");
      (void)matcher.Kept(fact);
    }
  }
  const std::string normalized = NormalizeForMatch(input);
  Check(NormalizeForMatch(normalized) == normalized, "NormalizeForMatch is not idempotent");
  if (!normalized.empty()) {
    const FactMatcher matcher(input);
    const std::string half = normalized.substr(0, (normalized.size() + 1) / 2);
    if (!NormalizeForMatch(half).empty()) {
      Check(matcher.Kept(Fact{"", {half}, {}}), "a keyword cut from the text is not found");
    }
  }
  return 0;
}
