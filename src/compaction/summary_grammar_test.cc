// BuildSummaryGrammar (docs/spec/decisions.md D5): every sentence of the grammar is an answer the
// strict validators accept for its input, within the budget; checked by drawing sentences with a
// small GBNF walker (gbnf_sampler.h), which also checks that the grammar is well-formed.
#include "harness/compaction/summary_grammar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gbnf_sampler.h"
#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
#include "harness/summary/summary.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::GbnfSampler;
using testing::StandardInput;

constexpr int kSentencesPerInput = 500;

CompactionInput WithModel(std::string provider, std::string model, TokenCount budget) {
  CompactionInput input = StandardInput();
  input.model = ModelKey{std::move(provider), std::move(model)};
  input.max_summary_tokens = budget;
  return input;
}

// Inputs whose identity needs JSON escaping (quotes, backslashes, control characters, DEL),
// GBNF escaping ('"', '\') or is non-ASCII, with budgets from roomy to capped by the sections.
std::vector<CompactionInput> AwkwardInputs() {
  std::vector<CompactionInput> inputs;
  inputs.push_back(WithModel("provider", "model", 1000));
  inputs.push_back(WithModel("llama \"cpp\"", "C:\\models\\tiny.gguf", 700));
  inputs.push_back(WithModel("caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC-\xF0\x9F\x98\x80", 2000));
  inputs.push_back(WithModel("tab\there", "line\nbreak\x01\x1F\x7F end\\\"", 4096));
  inputs.push_back(WithModel("\\x41 \\u0041 [a-z] # not a comment", "{0,5} ::= root", 100000));
  CompactionInput large_revision = StandardInput();
  large_revision.basis.revision = UINT64_MAX;
  large_revision.max_summary_tokens = 600;
  inputs.push_back(large_revision);
  return inputs;
}

SummaryGrammar GrammarFor(const CompactionInput& input, SummaryGrammarOptions options = {}) {
  auto grammar = BuildSummaryGrammar(input, options);
  EXPECT_TRUE(grammar.ok()) << grammar.error().Message();
  return grammar.ok() ? std::move(grammar).value() : SummaryGrammar{};
}

GbnfSampler SamplerFor(const SummaryGrammar& grammar) {
  std::string error;
  auto sampler = GbnfSampler::Parse(grammar.gbnf, &error);
  EXPECT_TRUE(sampler.has_value()) << error << "\n" << grammar.gbnf;
  return sampler ? std::move(*sampler) : GbnfSampler::Parse("root ::= \"\"", &error).value();
}

// The whole validation path the compactor runs, with the usage a byte-per-token tokenizer would
// report plus the reserve: the worst case the budget is derived for.
void ExpectAccepted(const std::string& sentence, const CompactionInput& input) {
  const TokenCount tokens = sentence.size() + kSummaryGrammarReservedTokens;
  const CompactorResponse response{sentence, Usage{0, tokens, 0, 0, 0}};
  auto output = ValidateCompactionResponse(response, input, 64 * 1024);
  ASSERT_TRUE(output.ok()) << output.error().Message() << "\n" << sentence;
  auto envelope = DecodeSummaryEnvelope(sentence);
  ASSERT_TRUE(envelope.ok());
  EXPECT_EQ(envelope->model, input.model);
  EXPECT_TRUE(ParseSummary(envelope->summary).ok());
  // Canonical: the grammar writes exactly what EncodeSummaryEnvelope writes.
  EXPECT_EQ(sentence, EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                                            envelope->summary));
}

TEST(SummaryGrammar, EverySampledSentenceIsAcceptedWithinTheBudget) {
  std::mt19937_64 random(20240607);
  for (const CompactionInput& input : AwkwardInputs()) {
    SCOPED_TRACE(input.model.model);
    const SummaryGrammar grammar = GrammarFor(input);
    const GbnfSampler sampler = SamplerFor(grammar);
    ASSERT_LE(grammar.max_answer_bytes + kSummaryGrammarReservedTokens, input.max_summary_tokens);
    std::size_t longest = 0;
    for (int i = 0; i < kSentencesPerInput; ++i) {
      const std::string sentence = sampler.Sample(random);
      ASSERT_LE(sentence.size(), grammar.max_answer_bytes);
      longest = std::max(longest, sentence.size());
      ExpectAccepted(sentence, input);
    }
    // The random walk does not stay on the short side: some sections reach their caps.
    EXPECT_GT(longest, (grammar.max_answer_bytes * 3) / 4);
  }
}

TEST(SummaryGrammar, TheShortestAndLongestSentencesAreAcceptedAndTheBoundIsExact) {
  std::mt19937_64 unused(1);
  for (const CompactionInput& input : AwkwardInputs()) {
    const SummaryGrammar grammar = GrammarFor(input);
    const GbnfSampler sampler = SamplerFor(grammar);
    const std::string longest = sampler.Sample(unused, GbnfSampler::Walk::kLongest);
    EXPECT_EQ(longest.size(), grammar.max_answer_bytes);
    ExpectAccepted(longest, input);
    const std::string shortest = sampler.Sample(unused, GbnfSampler::Walk::kShortest);
    ExpectAccepted(shortest, input);
    auto envelope = DecodeSummaryEnvelope(shortest);
    ASSERT_TRUE(envelope.ok());
    EXPECT_EQ(envelope->summary,
              "<conversation_summary><goal>a</goal><constraints></constraints>"
              "<decisions></decisions><state>a</state><open_items></open_items>"
              "</conversation_summary>");
  }
}

TEST(SummaryGrammar, SectionsAreCappedBelowLlamaCppsRepetitionThreshold) {
  // A budget far past what five sections may hold: each section stops at the cap.
  const CompactionInput input = WithModel("provider", "model", 10'000'000);
  const SummaryGrammar grammar = GrammarFor(input, {.min_bytes_per_token = 4});
  const std::size_t fixed =
      EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                            testing::kValidSummaryXml)
          .size() -
      std::string_view("ship &amp; verifyready").size();
  EXPECT_EQ(grammar.max_answer_bytes, fixed + 5 * kSummaryGrammarMaxSectionBytes);
  EXPECT_NE(grammar.gbnf.find("char{0,999}"), std::string::npos);
  EXPECT_NE(grammar.gbnf.find("char{0,1000}"), std::string::npos);
  std::mt19937_64 unused(1);
  ExpectAccepted(SamplerFor(grammar).Sample(unused, GbnfSampler::Walk::kLongest), input);
}

TEST(SummaryGrammar, TheAnswerByteLimitBoundsTheGrammar) {
  const CompactionInput input = WithModel("provider", "model", 100000);
  const SummaryGrammar grammar = GrammarFor(input, {.max_answer_bytes = 1000});
  EXPECT_LE(grammar.max_answer_bytes, 1000u);
  EXPECT_GT(grammar.max_answer_bytes, 1000u - 5);  // the split loses less than one byte a section
  // More bytes per token, more room, up to the byte limit.
  const CompactionInput tight = WithModel("provider", "model", 400);
  EXPECT_LT(GrammarFor(tight).max_answer_bytes,
            GrammarFor(tight, {.min_bytes_per_token = 3}).max_answer_bytes);
}

TEST(SummaryGrammar, ABudgetTooSmallForAnyAnswerGivesTheShortestGrammar) {
  for (const TokenCount budget : {TokenCount{1}, kSummaryGrammarReservedTokens, TokenCount{32}}) {
    const CompactionInput input = WithModel("provider", "model", budget);
    const SummaryGrammar grammar = GrammarFor(input);
    const GbnfSampler sampler = SamplerFor(grammar);
    std::mt19937_64 random(budget);
    const std::string first = sampler.Sample(random);
    EXPECT_EQ(first.size(), grammar.max_answer_bytes);  // only one length is possible
    for (int i = 0; i < 50; ++i) {
      const std::string sentence = sampler.Sample(random);
      EXPECT_EQ(sentence.size(), first.size());
      // Still a valid envelope; only the budget check can refuse it.
      const CompactorResponse response{sentence, Usage{0, 1, 0, 0, 0}};
      EXPECT_TRUE(ValidateCompactionResponse(response, input, 64 * 1024).ok());
    }
  }
}

TEST(SummaryGrammar, TheSameInputGivesTheSameGrammar) {
  for (const CompactionInput& input : AwkwardInputs())
    EXPECT_EQ(GrammarFor(input).gbnf, GrammarFor(input).gbnf);
  CompactionInput other = StandardInput();
  other.max_summary_tokens = 1000;
  CompactionInput moved = other;
  moved.basis.revision += 1;
  EXPECT_NE(GrammarFor(other).gbnf, GrammarFor(moved).gbnf);
}

TEST(SummaryGrammar, AnInvalidInputIsATypedError) {
  CompactionInput no_basis = StandardInput();
  no_basis.basis.revision = 0;
  auto refused = BuildSummaryGrammar(no_basis);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, SummaryGrammarErrorKind::kInputInvalid);
  ASSERT_TRUE(refused.error().input.has_value());
  EXPECT_EQ(refused.error().input->field, CompactionInputField::kBasis);
  EXPECT_EQ(refused.error().Message(), "summary grammar: invalid compaction input field basis");

  CompactionInput no_budget = StandardInput();
  no_budget.max_summary_tokens = 0;
  ASSERT_FALSE(BuildSummaryGrammar(no_budget).ok());
  EXPECT_EQ(BuildSummaryGrammar(no_budget).error().input->field,
            CompactionInputField::kMaxSummaryTokens);
}

TEST(SummaryGrammar, AModelKeyThatIsNotUtf8CannotBeEchoed) {
  for (const auto& [provider, model] : std::vector<std::pair<std::string, std::string>>{
           {"provider", "\xFF"}, {"\xC3", "model"}, {"provider", "\xED\xA0\x80"}}) {
    auto refused = BuildSummaryGrammar(WithModel(provider, model, 1000));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, SummaryGrammarErrorKind::kIdentityNotEchoable);
    EXPECT_EQ(refused.error().Message(), "summary grammar: model key is not valid UTF-8");
  }
}

TEST(GbnfSampler, RefusesGrammarsOutsideTheSubsetOrIllFormed) {
  std::string error;
  for (const char* bad :
       {"", "goal ::= \"a\"\n", "root ::= missing\n", "root ::= a\na ::= b\nb ::= a\n",
        "root ::= \"a\"\nroot ::= \"b\"\n", "root ::= \"a\" | \"b\"\n", "root ::= [a-z]{0,2000}\n",
        "root ::= \"unterminated\n", "root ::= [^a]\n", "root ::= \"\\q\"\n"}) {
    EXPECT_FALSE(GbnfSampler::Parse(bad, &error).has_value()) << bad;
  }
  auto good = GbnfSampler::Parse("root ::= \"\\x41\\\"\" x{2,2}\nx ::= [b-b]\n", &error);
  ASSERT_TRUE(good.has_value()) << error;
  std::mt19937_64 random(3);
  EXPECT_EQ(good->Sample(random), "A\"bb");
}

}  // namespace
}  // namespace harness
