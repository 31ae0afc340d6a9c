// libFuzzer target for ParseFacts and the scoring rule of `harness eval` (src/cli/eval_facts.h)
// and its summary measures (src/cli/eval_quality.h): any bytes in, read as a facts file, as the
// text the facts are looked for in, and as a summary, a user's message and a tool's output.
// Invariants: nothing crashes; a parse either fails with a path that starts at "$" or returns
// facts within the limits, each findable (keywords or an alternative, none of them blank);
// NormalizeForMatch is idempotent; a fact whose keywords are cut from the normalized text itself
// is kept; the measures stay within their wholes (raw bytes within the summary's, repeated items
// fewer than the items, the user's messages kept at most those counted); a message's probe is at
// most kMaxProbeBytes long or the whole message, and is found in the message itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eval_facts.h"
#include "eval_quality.h"
#include "fuzz_check.h"

constexpr FuzzCheck Check{"eval_facts_fuzz"};

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
  // The same bytes as a summary (in the grammar's envelope and as they are), a person's message
  // and a tool's output of the span.
  using harness::Message;
  const std::string text(input);
  const std::vector<Message> span = {
      harness::UserMessage{{harness::TextBlock{text}}},
      harness::ToolResultMessage{{harness::TextBlock{text}}, "call", false},
  };
  // What stays verbatim: the person's words when there are some.
  const auto person = PersonText(span[0]);
  const std::string verbatim = person ? *person : text;
  for (const std::string& summary :
       {text, "<conversation_summary><goal>g</goal><constraints/><decisions/><state>" + text +
                  "</state><open_items/></conversation_summary>"}) {
    const SummaryQuality q = MeasureSummary(summary, span, verbatim);
    Check(q.raw_bytes <= q.summary_bytes, "more raw bytes than the summary holds");
    Check(q.repeated < q.items || q.items == 0, "every item repeated");
    Check(q.user_messages == (person ? 1 : 0), "the person's messages miscounted");
    Check(q.user_messages_kept == q.user_messages, "a message in what stayed verbatim not kept");
  }
  if (person) {
    const std::string probe = UserProbe(*person);
    Check(probe.size() <= kMaxProbeBytes || probe == *person, "a probe over the cap");
    Check(probe.empty() || FactMatcher(*person).Present(probe), "a probe not in its message");
  }
  Check(SummarizedCount(span, span) == 0 && SummarizedCount(span, {}) == 2, "the span's size");
  return 0;
}
