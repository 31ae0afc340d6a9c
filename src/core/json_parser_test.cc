// The purpose-built strict JSON reader (ParseStrictJson) against the nlohmann-based reader it
// replaced (support/json_reference.h): on every input both accept, they build the same document
// (same types, same member order, same bytes), and on every input either refuses, both refuse
// with the same kind at the same path. Offsets are the new reader's own (the first byte that
// cannot continue a document) and are checked on their own cases. ParseStrictJsonArray, the
// element-by-element reader, agrees with ParseStrictJson on every one of those inputs.
// g++ 12 reports a false -Wrestrict inside std::string's operator+ on "literal" + string chains.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "support/json_reference.h"

namespace harness {
namespace {

// Same JSON types all the way down (nlohmann's == calls 1 and 1u and 1.0 equal) and the same
// serialization.
::testing::AssertionResult SameDocument(const Json& a, const Json& b, const std::string& path) {
  if (a.type() != b.type())
    return ::testing::AssertionFailure()
           << path << ": types " << a.type_name() << " and " << b.type_name();
  if (a.is_object()) {
    if (a.size() != b.size())
      return ::testing::AssertionFailure() << path << ": sizes differ";
    auto ia = a.items().begin();
    auto ib = b.items().begin();
    for (; ia != a.items().end(); ++ia, ++ib) {
      if (ia.key() != ib.key())
        return ::testing::AssertionFailure() << path << ": member order differs";
      if (auto same = SameDocument(ia.value(), ib.value(), path + "." + ia.key()); !same)
        return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (a.is_array()) {
    if (a.size() != b.size())
      return ::testing::AssertionFailure() << path << ": sizes differ";
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (auto same = SameDocument(a[i], b[i], path + "[" + std::to_string(i) + "]"); !same)
        return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (a.dump() != b.dump())
    return ::testing::AssertionFailure() << path << ": " << a.dump() << " vs " << b.dump();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameVerdict(std::string_view input, const JsonLimits& limits = {}) {
  const auto ours = ParseStrictJson(input, limits);
  const auto theirs = json_reference::ParseStrictJsonWithNlohmann(input, limits);
  if (!ours.ok() && theirs.ok() && json_reference::StoppedAtNul(input, ours.error()))
    return ::testing::AssertionSuccess();
  if (ours.ok() != theirs.ok()) {
    return ::testing::AssertionFailure()
           << (ours.ok() ? "only the reference refuses: " + theirs.error().Describe()
                         : "only the new reader refuses: " + ours.error().Describe());
  }
  if (ours.ok())
    return SameDocument(*ours, *theirs, "$");
  if (ours.error().kind != theirs.error().kind || ours.error().path != theirs.error().path) {
    return ::testing::AssertionFailure()
           << "new: " << ours.error().Describe() << "; reference: " << theirs.error().Describe();
  }
  return ::testing::AssertionSuccess();
}

// ParseStrictJsonArray against ParseStrictJson: the same verdict and error (kind, path, offset,
// detail); when both accept, the elements handed over are the root array's, in order, each with
// a text that parses to it, and a root that is not an array comes back whole.
::testing::AssertionResult ArrayReaderAgrees(std::string_view input,
                                             const JsonLimits& limits = {}) {
  const auto whole = ParseStrictJson(input, limits);
  std::vector<Json> elements;
  std::string problem;
  const auto streamed = ParseStrictJsonArray(
      input, limits, [&](std::size_t index, Json& element, std::string_view text) {
        if (index != elements.size())
          problem = "index " + std::to_string(index) + " out of order";
        const auto alone = ParseStrictJson(text, limits);
        if (!alone.ok() || !SameDocument(*alone, element, "$"))
          problem = "the text of element " + std::to_string(index) + " is not the element";
        elements.push_back(std::move(element));
        return true;
      });
  if (!problem.empty())
    return ::testing::AssertionFailure() << problem;
  if (streamed.ok() != whole.ok())
    return ::testing::AssertionFailure()
           << (streamed.ok() ? "only the array reader accepts" : "only the array reader refuses");
  if (!whole.ok()) {
    const JsonError& a = streamed.error();
    const JsonError& b = whole.error();
    if (a.kind != b.kind || a.path != b.path || a.offset != b.offset || a.detail != b.detail)
      return ::testing::AssertionFailure() << a.Describe() << " vs " << b.Describe();
    return ::testing::AssertionSuccess();
  }
  if (streamed->stopped || streamed->elements != elements.size())
    return ::testing::AssertionFailure() << "miscounted";
  if (!whole->is_array()) {
    if (!streamed->root || !elements.empty())
      return ::testing::AssertionFailure() << "a root that is not an array was not returned whole";
    return SameDocument(*streamed->root, *whole, "$");
  }
  if (streamed->root)
    return ::testing::AssertionFailure() << "an array root was returned";
  return SameDocument(Json(std::move(elements)), *whole, "$");
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out.size() > 300 ? out.substr(0, 300) + "…" : out;
}

TEST(StrictJsonReader, AgreesWithTheReferenceOnHandWrittenCases) {
  const std::vector<std::string> cases = {
      // accepted
      "0", "-0", "1", "-1", "0.5", "-0.0", "1e3", "1E+3", "1e-3", "123456789012345678",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808",
      "-9223372036854775809", "123456789012345678901234567890", "1e308", "1e-400", "-1e-400",
      "5e-324", "2.4e-324", "0.000000000000000000000000001e-300", "true", "false", "null", "\"\"",
      "\"a\\u0000b\"", "\"\\ud83d\\ude00\"", "\"\\u00e9\\u20AC\"", "\"\xC3\xA9\"",
      "\"\xF0\x9F\x98\x80\"", "\"\xEF\xBF\xBF\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", " [ ] ", "{}",
      "[1,[2,[3,{}]]]", "{\"a\":1,\"b\":{\"c\":[true,false,null]}}", " \t\r\n{ \"a\" : 1 } ",
      "{\"\":0}", "[\"\x7F\"]",
      // refused
      "", " ", "tru", "truex", "nul", "[1,]", "[,1]", "{,}", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}",
      "{1:2}", "[1 2]", "01", "-", "-a", "1.", ".5", "1e", "1e+", "+1", "0x10", "1e400", "-1e400",
      "1.8e308", "NaN", "Infinity", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"",
      "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"\x01\"", "\"\n\"", "\"\xC0\xAF\"",
      "\"\xE0\x80\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xF8\"", "\"\xC3\"",
      "\"\x80\"", "[1]x", "[1] [2]", "{\"a\":1}}", "]", "}", "{\"a\":1,\"a\":2}",
      "{\"a\":{\"b\":1,\"b\":2}}", "[{\"x\":[1,{\"y\":tru}]}]", "{\"a\":[1,2", "\xEF\xBB\xBF{}",
      std::string("[1,\0]", 5), std::string("\"a\0b\"", 5)};
  for (const std::string& input : cases) {
    EXPECT_TRUE(SameVerdict(input)) << Printable(input);
    EXPECT_TRUE(ArrayReaderAgrees(input)) << Printable(input);
  }
}

// The one difference, a bug of the old reader: nlohmann ends the input at a NUL byte where a
// token may begin, so a value followed by a NUL and anything at all was accepted.
TEST(StrictJsonReader, ANulByteAfterTheValueIsDataNotTheEnd) {
  const std::string input("{\"a\":1}\0{\"hidden\":true}", 24);
  EXPECT_TRUE(json_reference::ParseStrictJsonWithNlohmann(input).ok()) << "the old behaviour";
  const auto refused = ParseStrictJson(input);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, JsonErrorKind::kSyntax);
  EXPECT_EQ(refused.error().offset, 7u);
  EXPECT_FALSE(ParseStrictJson(std::string("\"\"\0", 3)).ok());
  EXPECT_FALSE(ParseStrictJson(std::string("1 \0", 3)).ok());
}

TEST(StrictJsonReader, WideObjectsFindDuplicatesLikeTheReference) {
  std::string wide = "{";
  for (int i = 0; i < 40; ++i)
    wide += (i ? "," : "") + std::string("\"m") + std::to_string(i) + "\":" + std::to_string(i);
  EXPECT_TRUE(SameVerdict(wide + "}"));
  EXPECT_TRUE(ParseStrictJson(wide + "}").ok());
  const auto duplicate = ParseStrictJson(wide + ",\"m3\":0}");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().kind, JsonErrorKind::kDuplicateMember);
  EXPECT_TRUE(SameVerdict(wide + ",\"m3\":0}"));
  EXPECT_TRUE(SameVerdict(wide + ",\"m39\":0}"));
}

TEST(StrictJsonReader, DepthLimitAndPathsAgree) {
  JsonLimits limits;
  limits.max_depth = 8;
  for (int depth = 1; depth <= 10; ++depth) {
    std::string open, close;
    for (int i = 0; i < depth; ++i) {
      open += i % 2 ? "[" : "{\"k\":";
      close.insert(0, i % 2 ? "]" : "}");
    }
    EXPECT_TRUE(SameVerdict(open + "1" + close, limits)) << depth;
    EXPECT_TRUE(SameVerdict(open + "x" + close, limits)) << depth;
  }
  // Far beyond any limit: refused at the limit, without recursion.
  const std::string deep(1'000'000, '[');
  const auto refused = ParseStrictJson(deep);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, JsonErrorKind::kTooDeep);
  EXPECT_EQ(refused.error().offset, 512u) << "the offending bracket";
}

// The array reader hands each element over as soon as it is complete, with its exact text, and
// keeps none of them: what the sink moves away is gone from the document.
TEST(StrictJsonArrayReader, HandsOverEachElementWithItsExactText) {
  const std::string input = R"( [ 1 , "two" , {"three": [3]} , [4, [5]] , null ] )";
  std::vector<std::string> texts;
  const auto read =
      ParseStrictJsonArray(input, {}, [&](std::size_t index, Json& element, std::string_view text) {
        EXPECT_EQ(index, texts.size());
        texts.emplace_back(text);
        Json taken = std::move(element);  // the sink may take the element apart
        return true;
      });
  ASSERT_TRUE(read.ok()) << read.error().Describe();
  EXPECT_EQ(texts,
            (std::vector<std::string>{"1", "\"two\"", R"({"three": [3]})", "[4, [5]]", "null"}));
  EXPECT_EQ(read->elements, 5u);
  EXPECT_FALSE(read->stopped);
  EXPECT_FALSE(read->root.has_value());
  EXPECT_TRUE(ArrayReaderAgrees(input));
}

// Errors are ParseStrictJson's, paths counting the elements already handed over.
TEST(StrictJsonArrayReader, ErrorsNameTheElementAndTheByteAsTheWholeReaderDoes) {
  for (const std::string input : {R"([{"a":1}, {"b": [1, x]}])", R"([1, 2, {"c": 3, "c": 4}])",
                                  R"([1, 2, 3)", R"([1, 2] 3)", R"([[], [[]], [[[1,]]]])"}) {
    EXPECT_TRUE(ArrayReaderAgrees(input)) << input;
  }
  const auto read = ParseStrictJsonArray(R"([{"a":1}, {"b": [1, x]}])", {},
                                         [](std::size_t, Json&, std::string_view) { return true; });
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().path, "$[1].b");
  EXPECT_EQ(read.error().offset, 20u);
  JsonLimits shallow;
  shallow.max_depth = 3;
  EXPECT_TRUE(ArrayReaderAgrees("[1, [2, [3, [4]]]]", shallow));
}

// A sink that returns false stops the read: the rest of the text is not looked at.
TEST(StrictJsonArrayReader, TheSinkStopsTheRead) {
  std::size_t seen = 0;
  const auto read = ParseStrictJsonArray("[1, 2, 3, this is not JSON", {},
                                         [&](std::size_t index, Json&, std::string_view) {
                                           ++seen;
                                           return index < 1;
                                         });
  ASSERT_TRUE(read.ok()) << read.error().Describe();
  EXPECT_TRUE(read->stopped);
  EXPECT_EQ(read->elements, 2u);
  EXPECT_EQ(seen, 2u);
}

// A root that is not an array is read whole and returned; nothing is handed over.
TEST(StrictJsonArrayReader, ARootThatIsNotAnArrayComesBackWhole) {
  for (const std::string input : {R"({"a": [1, 2]})", "7", "null", R"("text")"}) {
    const auto read = ParseStrictJsonArray(input, {}, [](std::size_t, Json&, std::string_view) {
      ADD_FAILURE() << "an element was handed over";
      return true;
    });
    ASSERT_TRUE(read.ok()) << input;
    ASSERT_TRUE(read->root.has_value()) << input;
    EXPECT_EQ(read->root->dump(), ParseStrictJson(input)->dump());
    EXPECT_EQ(read->elements, 0u);
  }
}

TEST(StrictJsonReader, OffsetsNameTheFirstByteThatCannotContinue) {
  struct Case {
    std::string input;
    std::size_t offset;
    std::string path;
  };
  const std::vector<Case> cases = {
      {"[1,]", 3, "$"},  {"{\"a\":tru}", 8, "$"},  {"{\"a\":[1,2", 9, "$.a"},
      {"[1] x", 4, "$"}, {"1e400", 0, "$"},        {"\"\\ud800\\u0041\"", 7, "$"},
      {"\"ab", 3, "$"},  {"[\"a\xC3(\"]", 3, "$"},
  };
  for (const Case& c : cases) {
    const auto result = ParseStrictJson(c.input);
    ASSERT_FALSE(result.ok()) << Printable(c.input);
    EXPECT_EQ(result.error().offset, c.offset)
        << Printable(c.input) << ": " << result.error().Describe();
    EXPECT_EQ(result.error().path, c.path) << Printable(c.input);
  }
}

// Every seed of every fuzz corpus (events, commands, transcripts, wires, summaries, …), whole,
// cut at every length up to 200 bytes and at 64 random lengths, and with 64 random bytes
// changed one at a time.
TEST(StrictJsonReader, AgreesWithTheReferenceOnEveryCorpusAndItsMutations) {
  const char* source = std::getenv("HARNESS_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "HARNESS_SOURCE_DIR is set for every test by CMake";
  const std::filesystem::path corpora = std::filesystem::path(source) / "fuzz" / "corpus";
  std::mt19937_64 rng(20261130);
  std::size_t files = 0, inputs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpora)) {
    if (!entry.is_regular_file())
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string seed = buffer.str();
    ++files;
    auto check = [&](std::string_view input) {
      ++inputs;
      EXPECT_TRUE(SameVerdict(input)) << entry.path().filename() << ": " << Printable(input);
      EXPECT_TRUE(ArrayReaderAgrees(input)) << entry.path().filename() << ": " << Printable(input);
    };
    check(seed);
    for (std::size_t n = 0; n < std::min<std::size_t>(seed.size(), 200); ++n)
      check(std::string_view(seed).substr(0, n));
    if (seed.empty())
      continue;
    for (int i = 0; i < 64; ++i)
      check(std::string_view(seed).substr(0, rng() % seed.size()));
    static const char kBytes[] = "{}[]\":,\\ 0-1.eE+tfnu\x80\xC3\xED\xF0\xFF\x01";
    for (int i = 0; i < 64; ++i) {
      std::string mutated = seed;
      mutated[rng() % mutated.size()] = kBytes[rng() % (sizeof kBytes - 1)];
      check(mutated);
    }
  }
  EXPECT_GT(files, 100u) << "the corpora are missing";
  std::printf("strict JSON differential: %zu corpus files, %zu inputs\n", files, inputs);
}

// Documents assembled from JSON's own tokens, mostly well-formed, sometimes not.
RC_GTEST_PROP(StrictJsonReader, AgreesWithTheReferenceOnTokenSoup, ()) {
  const std::vector<std::string> tokens = {"{",
                                           "}",
                                           "[",
                                           "]",
                                           ",",
                                           ":",
                                           "\"a\"",
                                           "\"b\"",
                                           "\"\\u00e9\"",
                                           "\"\\ud83d\\ude00\"",
                                           "\"\\ud800\"",
                                           "0",
                                           "-0",
                                           "12",
                                           "-7",
                                           "1.5",
                                           "2e3",
                                           "1e999",
                                           "18446744073709551616",
                                           "true",
                                           "false",
                                           "null",
                                           " ",
                                           "\n",
                                           "\"\xC3\xA9\"",
                                           "\"\xED\xA0\x80\"",
                                           "x",
                                           "\"\\q\""};
  const auto picks = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, tokens.size()));
  std::string input;
  for (std::size_t i : picks)
    input += tokens[i];
  RC_ASSERT(SameVerdict(input));
}

}  // namespace
}  // namespace harness
