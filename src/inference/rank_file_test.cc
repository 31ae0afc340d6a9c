// ParseRankFile: the `.tiktoken` format accepted exactly, every refusal typed with its line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/core/base64.h"
#include "harness/inference/tokenizer.h"

namespace harness {
namespace {

// The 256 single bytes, rank = byte value, each line "<base64> <rank>\n".
std::string ByteLines(int count = 256) {
  std::string file;
  for (int b = 0; b < count; ++b) {
    const char c = static_cast<char>(b);
    AppendBase64(file, std::string_view(&c, 1));
    file.append(" ").append(std::to_string(b)).append("\n");
  }
  return file;
}

std::string Line(std::string_view bytes, TokenId rank) {
  std::string line = Base64Encode(bytes);
  line.append(" ").append(std::to_string(rank)).append("\n");
  return line;
}

TEST(ParseRankFile, AcceptsTheFormat) {
  const std::string file = ByteLines() + Line("ab", 256) + Line(" the", 257);
  auto table = ParseRankFile(file);
  ASSERT_TRUE(table.ok()) << table.error().Message();
  EXPECT_EQ(table->size(), 258u);
  EXPECT_EQ(table->Find("ab"), 256u);
  EXPECT_EQ(table->Find(" the"), 257u);
  EXPECT_EQ(table->Find("a"), static_cast<TokenId>('a'));
  EXPECT_EQ(table->Find(std::string_view("\0", 1)), 0u);
  EXPECT_EQ(table->Find("abc"), std::nullopt);
  EXPECT_EQ(table->Find(""), std::nullopt);
  EXPECT_EQ(table->Bytes(257), " the");
}

struct BadCase {
  const char* name;
  std::string file;
  RankFileErrorKind kind;
  std::size_t line;
};

TEST(ParseRankFile, RefusesEveryMalformedFileWithItsKindAndLine) {
  const std::string bytes = ByteLines();
  const std::size_t next = 257;  // the line after the 256 byte lines
  const BadCase cases[] = {
      {"empty file", "", RankFileErrorKind::kEmpty, 0},
      {"no final newline", "QQ== 0", RankFileErrorKind::kLineShape, 1},
      {"no space", "QQ==0\n", RankFileErrorKind::kLineShape, 1},
      {"two spaces", "QQ==  0\n", RankFileErrorKind::kLineShape, 1},
      {"three fields", "QQ== 0 1\n", RankFileErrorKind::kLineShape, 1},
      {"CRLF", "QQ== 0\r\n", RankFileErrorKind::kLineShape, 1},
      {"no token", " 0\n", RankFileErrorKind::kLineShape, 1},
      {"no rank", "QQ== \n", RankFileErrorKind::kLineShape, 1},
      {"empty line", "\n", RankFileErrorKind::kLineShape, 1},
      {"blank line later", bytes + "\n", RankFileErrorKind::kLineShape, next},
      {"base64 not a multiple of 4", "QQ= 0\n", RankFileErrorKind::kBadBase64, 1},
      {"base64 bad character", "Q!== 0\n", RankFileErrorKind::kBadBase64, 1},
      {"base64 unused bits set", "QR== 0\n", RankFileErrorKind::kBadBase64, 1},
      {"base64 without padding", "YWI 0\n", RankFileErrorKind::kBadBase64, 1},
      {"base64 of nothing", "==== 0\n", RankFileErrorKind::kBadBase64, 1},
      {"rank with a leading zero", "QQ== 00\n", RankFileErrorKind::kBadRank, 1},
      {"negative rank", "QQ== -1\n", RankFileErrorKind::kBadRank, 1},
      {"signed rank", "QQ== +0\n", RankFileErrorKind::kBadRank, 1},
      {"rank not a number", "QQ== x\n", RankFileErrorKind::kBadRank, 1},
      {"rank of 2^32-1", "QQ== 4294967295\n", RankFileErrorKind::kBadRank, 1},
      {"rank beyond 32 bits", "QQ== 99999999999\n", RankFileErrorKind::kBadRank, 1},
      {"rank gap", "QQ== 1\n", RankFileErrorKind::kRankGap, 1},
      {"gap after the bytes", bytes + Line("ab", 257), RankFileErrorKind::kRankGap, next},
      {"duplicate rank", bytes + Line("ab", 255), RankFileErrorKind::kDuplicateRank, next},
      {"duplicate token", bytes + Line("a", 256), RankFileErrorKind::kDuplicateToken, next},
      {"duplicate multi-byte token", bytes + Line("ab", 256) + Line("ab", 257),
       RankFileErrorKind::kDuplicateToken, next + 1},
  };
  for (const BadCase& c : cases) {
    auto table = ParseRankFile(c.file);
    ASSERT_FALSE(table.ok()) << c.name;
    EXPECT_EQ(table.error().kind, c.kind) << c.name << ": " << table.error().Message();
    EXPECT_EQ(table.error().line, c.line) << c.name;
  }
}

TEST(ParseRankFile, RefusesATableWithoutEverySingleByte) {
  auto table = ParseRankFile(ByteLines(255));
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().kind, RankFileErrorKind::kMissingByte);
  EXPECT_EQ(table.error().byte, 255);
  EXPECT_EQ(table.error().line, 0u);
  EXPECT_EQ(table.error().Message(), "rank file: missing_byte 0xff");
}

TEST(ParseRankFile, RefusesMoreThanTheSizeLimit) {
  const std::string huge(kMaxRankFileBytes + 1, 'A');
  auto table = ParseRankFile(huge);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().kind, RankFileErrorKind::kTooLarge);
}

TEST(RankFileError, KindNamesAndMessagesNeverQuoteTheFile) {
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kEmpty), "empty");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kLineShape), "line_shape");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kBadBase64), "bad_base64");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kBadRank), "bad_rank");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kDuplicateToken), "duplicate_token");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kDuplicateRank), "duplicate_rank");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kRankGap), "rank_gap");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kMissingByte), "missing_byte");
  EXPECT_EQ(RankFileErrorKindName(RankFileErrorKind::kTooLarge), "too_large");
  EXPECT_EQ(RankFileErrorKindName(static_cast<RankFileErrorKind>(0)), "");
  auto table = ParseRankFile("c2VjcmV0 0\nc2VjcmV0 0\n");  // "secret" twice
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().Message(), "rank file line 2: duplicate_rank");
}

}  // namespace
}  // namespace harness
