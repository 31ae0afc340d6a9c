#include <gtest/gtest.h>

#include <chrono>

#include "core/internal/json_dom.h"
#include "harness/core/model_key.h"
#include "harness/core/sha256.h"
#include "harness/core/uuid.h"

namespace harness {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(ToHex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256Hasher h;
  h.Update("a").Update("bc");
  EXPECT_EQ(h.Finish(), Sha256("abc"));
  h.Update("abc");
  EXPECT_EQ(h.Finish(), Sha256("abc")) << "the hasher resets after Finish";
}

TEST(Uuid, ParseAcceptsEitherCaseAndFormatsLowercase) {
  auto id = Uuid::Parse("0123ABCD-89ab-4def-8123-456789ABCDEF");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->ToString(), "0123abcd-89ab-4def-8123-456789abcdef");
  EXPECT_FALSE(Uuid::ParseCanonical("0123ABCD-89ab-4def-8123-456789ABCDEF").ok());
  EXPECT_TRUE(Uuid::ParseCanonical("0123abcd-89ab-4def-8123-456789abcdef").ok());
}

TEST(Uuid, ParseRejectsEverythingElse) {
  for (const char* bad :
       {"", "0123abcd89ab4def8123456789abcdef", "0123abcd-89ab-4def-8123-456789abcde",
        "0123abcd-89ab-4def-8123-456789abcdeff", "0123abcd_89ab-4def-8123-456789abcdef",
        "0123abcg-89ab-4def-8123-456789abcdef", "{123abcd-89ab-4def-8123-456789abcde}",
        "0123abcd-89ab-4def-8123-456789abcd-f"}) {
    EXPECT_FALSE(Uuid::Parse(bad).ok()) << bad;
  }
}

TEST(Uuid, GeneratorsSetVersionAndVariant) {
  const Uuid v4 = Uuid::V4();
  const Uuid v7 = Uuid::V7();
  EXPECT_EQ(v4.version(), 4);
  EXPECT_EQ(v7.version(), 7);
  EXPECT_EQ(v4.bytes()[8] & 0xC0, 0x80);
  EXPECT_EQ(v7.bytes()[8] & 0xC0, 0x80);
  EXPECT_NE(Uuid::V4(), v4);
  EXPECT_FALSE(v4.IsZero());
  EXPECT_TRUE(Uuid().IsZero());
}

TEST(Uuid, V7IsTimeOrderedAcrossMilliseconds) {
  const Uuid a = Uuid::V7();
  // The 48-bit prefix is Unix milliseconds: compare prefixes only (the rest is random).
  const Uuid b = Uuid::V7();
  const auto prefix = [](const Uuid& u) {
    std::uint64_t ms = 0;
    for (int i = 0; i < 6; ++i)
      ms = ms << 8 | u.bytes()[i];
    return ms;
  };
  EXPECT_LE(prefix(a), prefix(b));
  EXPECT_GT(prefix(a), 1'700'000'000'000u);
}

// The waiter-reply identifiers of docs/spec/contracts.md §5.5 are DeriveV8 over
// "looprig.compaction.waiter-reply.v1" 0x00 attempt command outcome.
Uuid WaiterReplyId(const char* attempt, const char* command, bool resolved) {
  std::vector<std::uint8_t> material;
  const std::string_view tag = "looprig.compaction.waiter-reply.v1";
  material.insert(material.end(), tag.begin(), tag.end());
  material.push_back(0);
  for (const char* text : {attempt, command}) {
    const auto id = Uuid::Parse(text).value();
    material.insert(material.end(), id.bytes().begin(), id.bytes().end());
  }
  material.push_back(resolved ? 1 : 0);
  return Uuid::DeriveV8(material);
}

TEST(Uuid, DeriveV8MatchesTheWaiterReplyVectors) {
  EXPECT_EQ(WaiterReplyId("01000000-0000-0000-0000-000000000000",
                          "02000000-0000-0000-0000-000000000000", true)
                .ToString(),
            "c9a06d26-7c44-879e-a8c0-d4e98c50ba95");
  EXPECT_EQ(WaiterReplyId("01000000-0000-0000-0000-000000000000",
                          "02000000-0000-0000-0000-000000000000", false)
                .ToString(),
            "69d61834-adac-86ef-b60f-3461ac5f84d6");
  EXPECT_EQ(WaiterReplyId("00000000-0000-4000-8000-000000000001",
                          "00000000-0000-4000-8000-000000000002", true)
                .ToString(),
            "9c82abe1-abb0-8acc-961f-b8d1102ef522");
  EXPECT_EQ(WaiterReplyId("00000000-0000-4000-8000-000000000001",
                          "00000000-0000-4000-8000-000000000002", false)
                .ToString(),
            "b8906249-6e2c-82b8-aec7-585a63a1344a");
}

TEST(Fingerprint, HexIsExactlySixtyFourLowercase) {
  const std::string hex = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";
  auto fp = Fingerprint::ParseHex(hex);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->ToHex(), hex);
  EXPECT_EQ(fp->bytes()[0], 1);
  EXPECT_FALSE(fp->IsZero());
  EXPECT_TRUE(Fingerprint().IsZero());
  std::string upper = hex;
  upper[19] = 'A';
  EXPECT_FALSE(Fingerprint::ParseHex(upper).ok());
  EXPECT_FALSE(Fingerprint::ParseHex(hex.substr(2)).ok());
  EXPECT_FALSE(Fingerprint::ParseHex(hex + "00").ok());
}

TEST(ModelKey, ProviderIsCheckedBeforeModelAndNothingIsTrimmed) {
  EXPECT_EQ((ModelKey{"", ""}.Validate().error().field), ModelKeyField::kProvider);
  EXPECT_EQ((ModelKey{"p", ""}.Validate().error().field), ModelKeyField::kModel);
  EXPECT_TRUE((ModelKey{" ", " "}.Validate().ok()));
}

struct JsonCase {
  const char* name;
  std::string text;
  std::optional<JsonErrorKind> error;
};

TEST(StrictJson, Table) {
  const std::vector<JsonCase> cases = {
      {"object", R"({"a":1,"b":[true,null,"x"]})", std::nullopt},
      {"surrounding white space", " \n{}\t ", std::nullopt},
      {"scalar", "42", std::nullopt},
      {"duplicate at top", R"({"a":1,"a":2})", JsonErrorKind::kDuplicateMember},
      {"duplicate nested deep", R"({"a":[{"b":{"c":1,"c":1}}]})", JsonErrorKind::kDuplicateMember},
      {"names differ in case only", R"({"a":1,"A":2})", std::nullopt},
      {"trailing value", R"({} {})", JsonErrorKind::kSyntax},
      {"trailing garbage", R"({}x)", JsonErrorKind::kSyntax},
      {"empty", "", JsonErrorKind::kSyntax},
      {"invalid utf-8 in string", "\"a\xff\"", JsonErrorKind::kSyntax},
      {"lone surrogate escape", R"("\ud800")", JsonErrorKind::kSyntax},
      {"comment", "{} // x", JsonErrorKind::kSyntax},
      {"leading BOM", "\xEF\xBB\xBF{}", JsonErrorKind::kSyntax},
  };
  for (const auto& c : cases) {
    auto r = ParseStrictJson(c.text);
    if (c.error) {
      ASSERT_FALSE(r.ok()) << c.name;
      EXPECT_EQ(r.error().kind, *c.error) << c.name << ": " << r.error().Describe();
    } else {
      EXPECT_TRUE(r.ok()) << c.name << ": " << r.error().Describe();
    }
  }
}

TEST(StrictJson, DuplicateErrorNamesThePath) {
  auto r = ParseStrictJson(R"({"a":[{"b":1},{"b":{"c":1,"c":1}}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "$.a[1].b");
}

// Small objects are checked for duplicates by scanning their members, wide ones with a set
// built at kScannedMembers (16): both sides of that width find every duplicate and no other.
TEST(StrictJson, DuplicatesAreFoundAtEveryWidth) {
  for (int width : {1, 2, 15, 16, 17, 18, 40}) {
    std::string members;
    for (int i = 0; i < width; ++i) {
      members.append(i > 0 ? "," : "").append("\"m").append(std::to_string(i)).append("\":0");
    }
    const std::string object = std::string("{").append(members).append("}");
    EXPECT_TRUE(ParseStrictJson(std::string("[").append(object).append("]")).ok()) << width;
    for (int dup : {0, width / 2, width - 1}) {
      std::string text = std::string("[1,{").append(members);
      text.append(",\"m").append(std::to_string(dup)).append("\":1}]");
      auto r = ParseStrictJson(text);
      ASSERT_FALSE(r.ok()) << width << " " << dup;
      EXPECT_EQ(r.error().kind, JsonErrorKind::kDuplicateMember) << width << " " << dup;
      EXPECT_EQ(r.error().path, "$[1]") << width << " " << dup;
    }
  }
}

// The path of an error names the open containers, for every kind of error found while parsing.
TEST(StrictJson, ErrorsNameThePathOfTheOpenContainers) {
  JsonLimits limits;
  limits.max_depth = 3;
  auto deep = ParseStrictJson(R"({"a":[1,{"b":[]}]})", limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().kind, JsonErrorKind::kTooDeep);
  EXPECT_EQ(deep.error().path, "$.a[1]");
  auto syntax = ParseStrictJson(R"({"a":[1,{"b":[2,x]}]})");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().kind, JsonErrorKind::kSyntax);
  EXPECT_EQ(syntax.error().path, "$.a[1].b");
  auto duplicate = ParseStrictJson(R"({"x":{},"a":[[],{"b":{"c":1,"c":1}}]})");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().path, "$.a[1].b");
  auto top = ParseStrictJson(R"({"a":{},"a":1})");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().path, "$");
}

TEST(StrictJson, SizeIsCheckedBeforeParsing) {
  JsonLimits limits;
  limits.max_bytes = 4;
  EXPECT_EQ(ParseStrictJson("[1,2]", limits).error().kind, JsonErrorKind::kTooLarge);
  EXPECT_TRUE(ParseStrictJson("[12]", limits).ok());
}

TEST(StrictJson, DepthIsLimitedWithoutRecursion) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(ParseStrictJson("[[[1]]]", limits).ok());
  EXPECT_EQ(ParseStrictJson("[[[[1]]]]", limits).error().kind, JsonErrorKind::kTooDeep);
  // A million open brackets is refused at the limit, not parsed.
  const std::string deep(1'000'000, '[');
  EXPECT_EQ(ParseStrictJson(deep).error().kind, JsonErrorKind::kTooDeep);
}

TEST(StrictJson, WideObjectsParseInLinearTime) {
  // 400,000 members: quadratic insertion would take minutes; linear takes well under a second.
  std::string text = "{";
  for (int i = 0; i < 400'000; ++i) {
    if (i > 0)
      text += ',';
    text += "\"m" + std::to_string(i) + "\":" + std::to_string(i);
  }
  text += '}';
  const auto start = std::chrono::steady_clock::now();
  auto r = ParseStrictJson(text);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 400'000u);
  EXPECT_EQ((*r)["m399999"], 399'999);
  EXPECT_EQ(r->begin().key(), "m0") << "document order is kept";
  EXPECT_LT(elapsed, std::chrono::seconds(20));
  text.insert(text.size() - 1, ",\"m17\":0");
  EXPECT_EQ(ParseStrictJson(text).error().kind, JsonErrorKind::kDuplicateMember);
}

TEST(JsonObject, ExactMembersAndUnknownRejected) {
  auto doc = ParseStrictJson(R"({"name":"x","count":3,"flag":true,"extra":null})").value();
  auto obj = JsonObject::Open(doc, "$").value();
  EXPECT_EQ(obj.RequireString("name").value(), "x");
  EXPECT_EQ(obj.RequireUint("count").value(), 3u);
  EXPECT_TRUE(obj.RequireBool("flag").value());
  EXPECT_EQ(obj.RequireString("Name").error().kind, JsonErrorKind::kMissingMember);
  auto unknown = obj.RejectUnknown();
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, JsonErrorKind::kUnknownMember);
  EXPECT_NE(unknown.error().detail.find("extra"), std::string::npos);
  EXPECT_EQ(obj.RequireNonNull("extra").error().kind, JsonErrorKind::kType);
  EXPECT_TRUE(obj.RejectUnknown().ok());
}

// Lookups are remembered by member position: the first 64 in a word, the rest beyond it.
TEST(JsonObject, UnknownMembersAreFoundPastSixtyFour) {
  std::string text = "{";
  for (int i = 0; i < 70; ++i)
    text.append(i > 0 ? "," : "").append("\"m").append(std::to_string(i)).append("\":0");
  text += "}";
  auto doc = ParseStrictJson(text).value();
  for (int skipped : {0, 63, 64, 69}) {
    auto obj = JsonObject::Open(doc, "$").value();
    for (int i = 0; i < 70; ++i) {
      if (i != skipped) {
        EXPECT_NE(obj.Find(std::string("m").append(std::to_string(i))), nullptr);
      }
    }
    EXPECT_EQ(obj.Find("absent"), nullptr);
    auto unknown = obj.RejectUnknown();
    ASSERT_FALSE(unknown.ok()) << skipped;
    EXPECT_EQ(unknown.error().kind, JsonErrorKind::kUnknownMember);
    EXPECT_NE(unknown.error().detail.find(
                  std::string("\"m").append(std::to_string(skipped)).append("\"")),
              std::string::npos)
        << unknown.error().detail;
    EXPECT_NE(obj.Find(std::string("m").append(std::to_string(skipped))), nullptr);
    EXPECT_TRUE(obj.RejectUnknown().ok()) << skipped;
  }
}

// A typed read's error names the member's path (built only when the read fails).
TEST(JsonObject, TypedReadErrorsNameTheMember) {
  auto doc = ParseStrictJson(R"({"s":1,"u":"1","b":0,"n":300})").value();
  auto obj = JsonObject::Open(doc, "$.top").value();
  EXPECT_EQ(obj.RequireString("s").error().path, "$.top.s");
  EXPECT_EQ(obj.RequireUint("u").error().path, "$.top.u");
  EXPECT_EQ(obj.RequireBool("b").error().path, "$.top.b");
  EXPECT_EQ(obj.RequireUint("n", 255).error().path, "$.top.n");
  EXPECT_EQ(obj.RequireUint("n", 300).value(), 300u);
}

TEST(JsonObject, IntegersAreStrict) {
  auto doc = ParseStrictJson(R"({"a":1.0,"b":-1,"c":"1","d":256,"e":1e0})").value();
  auto obj = JsonObject::Open(doc, "$").value();
  EXPECT_EQ(obj.RequireUint("a").error().kind, JsonErrorKind::kType);
  EXPECT_EQ(obj.RequireUint("b").error().kind, JsonErrorKind::kRange);
  EXPECT_EQ(obj.RequireUint("c").error().kind, JsonErrorKind::kType);
  EXPECT_EQ(obj.RequireUint("d", 255).error().kind, JsonErrorKind::kRange);
  EXPECT_EQ(obj.RequireUint("e").error().kind, JsonErrorKind::kType);
}

TEST(AppendJsonString, EscapesAndRepairs) {
  std::string out;
  AppendJsonString(out, std::string("a\"\\\n\r\t\x01<&>\xe7\x95\x8c\xff", 14));
  EXPECT_EQ(out, "\"a\\\"\\\\\\n\\r\\t\\u0001<&>\xe7\x95\x8c\xEF\xBF\xBD\"");
  out.clear();
  AppendJsonString(out, "\xED\xA0\x80");  // an encoded surrogate is three invalid bytes
  EXPECT_EQ(out, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace harness
