// The lenient JSON member reader of tool inputs (compaction/extractive_fields.h): members at any
// depth in order, string arrays joined, escapes decoded, input cut short still read.
#include "compaction/extractive_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::extractive_detail {
namespace {

std::vector<std::string> Pairs(const std::vector<Field>& fields) {
  std::vector<std::string> out;
  for (const Field& field : fields)
    out.push_back(field.key + "=" + field.value);
  return out;
}

TEST(ExtractiveFields, MembersAtAnyDepthInDocumentOrder) {
  const auto fields =
      ReadFields(R"({"file_path": "/a/b.py", "edits": [{"old_string": "x", "new_string": "y"}],)"
                 R"( "paths": ["a", "b"], "n": 3, "ok": true, "nested": {"command": "ls"}})");
  EXPECT_EQ(Pairs(fields),
            (std::vector<std::string>{"file_path=/a/b.py", "old_string=x", "new_string=y",
                                      "paths=a b", "n=3", "ok=true", "command=ls"}));
}

TEST(ExtractiveFields, EscapesAreDecodedAndABadSurrogateIsReplaced) {
  const auto fields = ReadFields(R"({"s": "a\"b\\c\nd\u00e9\ud83d\ude00\ud800x"})");
  ASSERT_EQ(fields.size(), 1U);
  EXPECT_EQ(fields[0].value, "a\"b\\c\nd\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBDx");
}

TEST(ExtractiveFields, AnInputCutShortIsReadToItsEnd) {
  const auto fields = ReadFields(R"({"command": "echo hi && ls -)");
  ASSERT_EQ(fields.size(), 1U);
  EXPECT_EQ(fields[0].key, "command");
  EXPECT_EQ(fields[0].value, "echo hi && ls -");
  EXPECT_TRUE(ReadFields("not json at all").empty());
  EXPECT_TRUE(ReadFields(R"({"key":)").empty());
}

TEST(ExtractiveFields, TheFirstKeyThatHasAMemberWins) {
  const auto fields = ReadFields(R"({"file_path": "/x", "path": "/y"})");
  ASSERT_NE(FieldValue(fields, {"path", "file_path"}), nullptr);
  EXPECT_EQ(*FieldValue(fields, {"path", "file_path"}), "/y");
  EXPECT_EQ(*FieldValue(fields, {"target_file", "file_path"}), "/x");
  EXPECT_EQ(FieldValue(fields, {"command"}), nullptr);
}

TEST(ExtractiveFields, ReadStringReturnsTheIndexAfterItsClosingQuote) {
  std::string out;
  EXPECT_EQ(ReadString(R"("ab" rest)", 0, out), 4U);
  EXPECT_EQ(out, "ab");
  std::string cut;
  EXPECT_EQ(ReadString(R"("abc)", 0, cut), 4U);
  EXPECT_EQ(cut, "abc");
}

}  // namespace
}  // namespace harness::extractive_detail
