#include "harness/inference/catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

namespace harness {
namespace {

std::optional<CatalogModel> Lookup(std::string provider, std::string model) {
  return LookupModel(ModelKey{std::move(provider), std::move(model)});
}

// The entry `model` resolves to, by name ("" when it resolves to none).
std::string Resolved(const std::string& provider, const std::string& model) {
  const auto entry = Lookup(provider, model);
  return entry ? std::string(entry->name) : std::string();
}

void ExpectLimits(const ModelLimits& limits, TokenCount window, TokenCount input,
                  TokenCount output) {
  EXPECT_EQ(limits.window_tokens, window);
  EXPECT_EQ(limits.max_input_tokens, input);
  EXPECT_EQ(limits.max_output_tokens, output);
}

TEST(ModelCatalog, ExactNamesFindTheirEntry) {
  const auto gpt4o = Lookup("openai", "gpt-4o");
  ASSERT_TRUE(gpt4o.has_value());
  EXPECT_EQ(gpt4o->window_tokens, 128'000u);
  EXPECT_EQ(gpt4o->max_output_tokens, 16'384u);
  EXPECT_EQ(gpt4o->encoding, Encoding::kO200kBase);
  ExpectLimits(gpt4o->limits(), 128'000, 0, 16'384);

  const auto gpt4 = Lookup("openai", "gpt-4");
  ASSERT_TRUE(gpt4.has_value());
  EXPECT_EQ(gpt4->window_tokens, 8'192u);
  EXPECT_EQ(gpt4->encoding, Encoding::kCl100kBase);

  const auto sonnet = Lookup("anthropic", "claude-sonnet-4-5");
  ASSERT_TRUE(sonnet.has_value());
  EXPECT_EQ(sonnet->window_tokens, 200'000u);
  EXPECT_EQ(sonnet->max_output_tokens, 64'000u);
  EXPECT_FALSE(sonnet->encoding.has_value());

  const auto gpt5 = Lookup("openai", "gpt-5");
  ASSERT_TRUE(gpt5.has_value());
  ExpectLimits(gpt5->limits(), 400'000, 272'000, 128'000);
}

TEST(ModelCatalog, DatedSnapshotsMatchTheirFamily) {
  EXPECT_EQ(Resolved("openai", "gpt-4o-2024-08-06"), "gpt-4o");
  EXPECT_EQ(Resolved("openai", "gpt-4o-2024-11-20"), "gpt-4o");
  EXPECT_EQ(Resolved("openai", "gpt-4.1-2025-04-14"), "gpt-4.1");
  EXPECT_EQ(Resolved("openai", "o3-mini-2025-01-31"), "o3-mini");
  EXPECT_EQ(Resolved("openai", "gpt-4-turbo-2024-04-09"), "gpt-4-turbo");
  EXPECT_EQ(Resolved("openai", "gpt-5-2025-08-07"), "gpt-5");
  EXPECT_EQ(Resolved("anthropic", "claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
  EXPECT_EQ(Resolved("anthropic", "claude-sonnet-4-20250514"), "claude-sonnet-4");
  EXPECT_EQ(Resolved("anthropic", "claude-opus-4-1-20250805"), "claude-opus-4-1");
  EXPECT_EQ(Resolved("anthropic", "claude-3-7-sonnet-20250219"), "claude-3-7-sonnet");
  EXPECT_EQ(Resolved("anthropic", "claude-haiku-4-5-20251001"), "claude-haiku-4-5");
}

TEST(ModelCatalog, TheLongestMatchingNameWins) {
  // "gpt-4o-mini" is its own family, never gpt-4o with a suffix.
  EXPECT_EQ(Resolved("openai", "gpt-4o-mini"), "gpt-4o-mini");
  EXPECT_EQ(Resolved("openai", "gpt-4o-mini-2024-07-18"), "gpt-4o-mini");
  EXPECT_EQ(Resolved("openai", "o4-mini-2025-04-16"), "o4-mini");
  EXPECT_EQ(Resolved("openai", "gpt-4.1-nano-2025-04-14"), "gpt-4.1-nano");
  EXPECT_EQ(Resolved("openai", "gpt-4-turbo"), "gpt-4-turbo");
  // A snapshot listed on its own beats its family, which it also matches.
  const auto first = Lookup("openai", "gpt-4o-2024-05-13");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->name, "gpt-4o-2024-05-13");
  EXPECT_EQ(first->max_output_tokens, 4'096u);
  EXPECT_EQ(Resolved("anthropic", "claude-opus-4-5-20251101"), "claude-opus-4-5");
  EXPECT_EQ(Resolved("anthropic", "claude-opus-4-20250514"), "claude-opus-4");
}

TEST(ModelCatalog, UnknownNamesProvidersAndSuffixesAreNotFound) {
  const std::pair<std::string, std::string> unknown[] = {
      {"openai", "gpt-6"},
      {"openai", ""},
      {"openai", "GPT-4o"},                   // case-sensitive
      {"openai", "gpt-4o-latest"},            // not a date
      {"openai", "gpt-4-0613"},               // four digits: not a snapshot date here
      {"openai", "gpt-3.5-turbo-0613"},       // (that one had a 4,096 window)
      {"openai", "gpt-4o-2024-08-06-extra"},  // something after the date
      {"openai", "gpt-4o-2024-0806"},         // neither shape
      {"openai", "gpt-4o-2024/08/06"},        // neither shape
      {"openai", "gpt-4o-"},                  // an empty suffix
      {"openai", "gpt-4o2024-08-06"},         // no dash before the date
      {"openai", "chatgpt-4o-latest"},        // a different name
      {"openai", "claude-sonnet-4-5"},        // another provider's model
      {"anthropic", "gpt-4o"},                // ditto
      {"anthropic", "claude-sonnet-4-5-1"},   // a version, not a date
      {"anthropic", "claude-sonnet-4-5-2025092"},
      {"mistral", "mistral-large"},  // an unknown provider
      {"", "gpt-4o"},
      {"OpenAI", "gpt-4o"},
  };
  for (const auto& [provider, model] : unknown)
    EXPECT_FALSE(Lookup(provider, model).has_value()) << provider << ":" << model;
}

TEST(ModelCatalog, EveryEntryIsSane) {
  std::set<std::pair<std::string_view, std::string_view>> names;
  ASSERT_GE(ModelCatalog().size(), 30u);
  for (const CatalogModel& entry : ModelCatalog()) {
    SCOPED_TRACE(std::string(entry.provider) + ":" + std::string(entry.name));
    EXPECT_TRUE(entry.provider == "openai" || entry.provider == "anthropic");
    EXPECT_FALSE(entry.name.empty());
    EXPECT_TRUE(names.emplace(entry.provider, entry.name).second) << "listed twice";
    EXPECT_GE(entry.window_tokens, 8'192u);
    EXPECT_GT(entry.max_output_tokens, 0u);
    // gpt-4 may answer with its whole 8,192-token window; every later model answers less.
    EXPECT_LE(entry.max_output_tokens, entry.window_tokens);
    if (entry.name != "gpt-4") {
      EXPECT_LT(entry.max_output_tokens, entry.window_tokens);
    }
    EXPECT_TRUE(entry.max_input_tokens == 0 || entry.max_input_tokens < entry.window_tokens);
    EXPECT_EQ(entry.encoding.has_value(), entry.provider == "openai");
    // Every entry finds itself (no longer entry shadows it), and the library accepts its limits.
    const auto self = LookupModel(ModelKey{std::string(entry.provider), std::string(entry.name)});
    ASSERT_TRUE(self.has_value());
    EXPECT_EQ(self->name, entry.name);
    const ModelKey key{std::string(entry.provider), std::string(entry.name)};
    EXPECT_TRUE(ResolveContextLimits(key, entry.limits(), entry.max_output_tokens / 2, 0).ok());
  }
}

TEST(ModelCatalog, OpenAiEncodingsFollowTheirGeneration) {
  for (const char* model :
       {"gpt-5", "gpt-4.1", "gpt-4o", "gpt-4o-mini", "o1", "o3", "o3-mini", "o4-mini"}) {
    EXPECT_EQ(Lookup("openai", model)->encoding, Encoding::kO200kBase) << model;
  }
  for (const char* model : {"gpt-4-turbo", "gpt-4", "gpt-3.5-turbo"})
    EXPECT_EQ(Lookup("openai", model)->encoding, Encoding::kCl100kBase) << model;
}

TEST(ParseModelSpec, SplitsAtTheFirstColon) {
  auto key = ParseModelSpec("openai:gpt-4o");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, (ModelKey{"openai", "gpt-4o"}));
  // Fine-tuned OpenAI names carry colons of their own.
  key = ParseModelSpec("openai:ft:gpt-4o-mini:org::abc");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, (ModelKey{"openai", "ft:gpt-4o-mini:org::abc"}));
  EXPECT_TRUE(ParseModelSpec(std::string("a:") + std::string(kMaxModelSpecBytes - 2, 'b')).ok());
}

TEST(ParseModelSpec, RefusesEachMalformedSpecWithItsKind) {
  const std::pair<std::string, ModelSpecErrorKind> cases[] = {
      {"", ModelSpecErrorKind::kNoSeparator},
      {"gpt-4o", ModelSpecErrorKind::kNoSeparator},
      {":gpt-4o", ModelSpecErrorKind::kEmptyProvider},
      {":", ModelSpecErrorKind::kEmptyProvider},
      {"openai:", ModelSpecErrorKind::kEmptyModel},
      {"openai: gpt-4o", ModelSpecErrorKind::kCharacter},
      {"openai:gpt-4o\n", ModelSpecErrorKind::kCharacter},
      {"openai:gpt\x1b[31m", ModelSpecErrorKind::kCharacter},
      {"openai:gpt\xc3\xa9", ModelSpecErrorKind::kCharacter},
      {std::string("openai:gpt\0", 11), ModelSpecErrorKind::kCharacter},
      {"a:" + std::string(kMaxModelSpecBytes - 1, 'b'), ModelSpecErrorKind::kTooLong},
  };
  for (const auto& [spec, kind] : cases) {
    const auto parsed = ParseModelSpec(spec);
    ASSERT_FALSE(parsed.ok()) << spec;
    EXPECT_EQ(parsed.error().kind, kind) << spec;
    const std::string message = parsed.error().Message();
    EXPECT_EQ(message.rfind("invalid model ", 0), 0u) << message;
    if (spec.size() > 3) {
      EXPECT_EQ(message.find(spec), std::string::npos) << "the message quotes the input";
    }
  }
}

TEST(ParseModelSpec, KindNames) {
  EXPECT_EQ(ModelSpecErrorKindName(ModelSpecErrorKind::kNoSeparator), "no_separator");
  EXPECT_EQ(ModelSpecErrorKindName(ModelSpecErrorKind::kEmptyProvider), "empty_provider");
  EXPECT_EQ(ModelSpecErrorKindName(ModelSpecErrorKind::kEmptyModel), "empty_model");
  EXPECT_EQ(ModelSpecErrorKindName(ModelSpecErrorKind::kTooLong), "too_long");
  EXPECT_EQ(ModelSpecErrorKindName(ModelSpecErrorKind::kCharacter), "character");
  EXPECT_EQ(ModelSpecErrorKindName(static_cast<ModelSpecErrorKind>(0)), "");
  EXPECT_EQ(ModelSpecError{ModelSpecErrorKind::kEmptyModel}.Message(),
            "invalid model empty_model: expected PROVIDER:MODEL");
}

}  // namespace
}  // namespace harness
