// BpeTokenizer: the published test vectors, the merge order, the ordinary-text policy for
// special-token strings, ill-formed UTF-8, long inputs, cancellation and the loader's checks.
// Tests named *RealData* need the rank files (test_data.h); the others build small tables.
#include "harness/inference/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/core/base64.h"
#include "inference/byte_pair.h"
#include "inference/mixed_corpus.h"
#include "inference/test_data.h"

namespace harness {
namespace {

using inference_internal::CountSink;
using inference_internal::HeapMerge;
using inference_internal::IdSink;
using inference_internal::LinearMerge;
using inference_internal::WindowedMerge;

// A rank file: the 256 single bytes (rank = byte value), then `merges` in order.
std::string SmallRankFile(const std::vector<std::string>& merges) {
  std::string file;
  TokenId rank = 0;
  const auto line = [&](std::string_view bytes) {
    AppendBase64(file, bytes);
    file.append(" ").append(std::to_string(rank++)).append("\n");
  };
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    line(std::string_view(&c, 1));
  }
  for (const std::string& m : merges)
    line(m);
  return file;
}

BpeTokenizer SmallTokenizer(const std::vector<std::string>& merges) {
  auto ranks = ParseRankFile(SmallRankFile(merges));
  EXPECT_TRUE(ranks.ok());
  auto tokenizer = BpeTokenizer::Create(Encoding::kCl100kBase, std::move(ranks).value());
  EXPECT_TRUE(tokenizer.ok());
  return std::move(tokenizer).value();
}

std::vector<TokenId> Ids(const BpeTokenizer& tokenizer, std::string_view text) {
  auto ids = tokenizer.Encode(text);
  EXPECT_TRUE(ids.ok()) << ids.error().Message();
  return ids.ok() ? *ids : std::vector<TokenId>{};
}

TEST(Encoding, NamesRoundTrip) {
  EXPECT_EQ(EncodingName(Encoding::kCl100kBase), "cl100k_base");
  EXPECT_EQ(EncodingName(Encoding::kO200kBase), "o200k_base");
  EXPECT_EQ(EncodingName(static_cast<Encoding>(0)), "");
  EXPECT_EQ(EncodingFromName("cl100k_base"), Encoding::kCl100kBase);
  EXPECT_EQ(EncodingFromName("o200k_base"), Encoding::kO200kBase);
  EXPECT_EQ(EncodingFromName("p50k_base"), std::nullopt);
  EXPECT_EQ(EncodingFromName("CL100K_BASE"), std::nullopt);
  EXPECT_EQ(EncodingRankFileName(Encoding::kO200kBase), "o200k_base.tiktoken");
  EXPECT_EQ(EncodingSpecialTokens(Encoding::kCl100kBase).size(), 5u);
  EXPECT_EQ(EncodingSpecialTokens(Encoding::kO200kBase).size(), 2u);
}

TEST(TokenizerError, KindNamesAndMessage) {
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kUnreadable), "unreadable");
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kChecksum), "checksum");
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kRankFile), "rank_file");
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kPattern), "pattern");
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kMatch), "match");
  EXPECT_EQ(TokenizerErrorKindName(TokenizerErrorKind::kCanceled), "canceled");
  EXPECT_EQ(TokenizerErrorKindName(static_cast<TokenizerErrorKind>(0)), "");
  const TokenizerError error{TokenizerErrorKind::kRankFile, "x.tiktoken",
                             RankFileError{RankFileErrorKind::kBadBase64, 7, -1}};
  EXPECT_EQ(error.Message(), "tokenizer: rank_file: x.tiktoken: rank file line 7: bad_base64");
}

TEST(BpeTokenizer, MergesLowestRankFirst) {
  // "bc" ranks below "ab", so b joins c first; then "abc" is one token.
  const BpeTokenizer t = SmallTokenizer({"bc", "ab", "abc"});
  EXPECT_EQ(Ids(t, "abc"), (std::vector<TokenId>{258}));
  // Without "abc" the result is a + bc.
  const BpeTokenizer u = SmallTokenizer({"bc", "ab"});
  EXPECT_EQ(Ids(u, "abc"), (std::vector<TokenId>{'a', 256}));
  // With "ab" ranked first: ab + c.
  const BpeTokenizer v = SmallTokenizer({"ab", "bc"});
  EXPECT_EQ(Ids(v, "abc"), (std::vector<TokenId>{256, 'c'}));
}

TEST(BpeTokenizer, MergesLeftmostOnEqualRanks) {
  const BpeTokenizer t = SmallTokenizer({"aa"});
  EXPECT_EQ(Ids(t, "aaa"), (std::vector<TokenId>{256, 'a'}));
  EXPECT_EQ(Ids(t, "aaaaa"), (std::vector<TokenId>{256, 256, 'a'}));
}

TEST(BpeTokenizer, WholePieceAndSingleBytes) {
  const BpeTokenizer t = SmallTokenizer({"he", "ll", "hell", "hello"});
  EXPECT_EQ(Ids(t, "hello"), (std::vector<TokenId>{259}));
  EXPECT_EQ(Ids(t, ""), (std::vector<TokenId>{}));
  EXPECT_EQ(Ids(t, "x"), (std::vector<TokenId>{'x'}));
  // " hello" is one piece (the letters take the space before them); without a " h" merge the
  // space stays a token of its own.
  EXPECT_EQ(Ids(t, " hello"), (std::vector<TokenId>{' ', 259}));
}

TEST(BpeTokenizer, CountEqualsTheNumberOfIds) {
  const BpeTokenizer t = SmallTokenizer({"ab", "bc", "abc", "  "});
  for (const std::string text : {"", "abcabc  abc", "x y z\r\n\t", "aaaaaaaaaaaaaaaaaaaaaaa"}) {
    auto count = t.Count(text);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, Ids(t, text).size()) << text;
  }
}

// A table of many overlapping merges over "abc", ranked in no order of length, so that ties and
// re-ranks happen constantly.
BpeTokenizer OverlappingMerges() {
  std::vector<std::string> merges;
  for (const char* m :
       {"ab",  "ba",   "aa",   "bb",   "aab",  "abb",    "bab", "aba", "abab", "baba",
        "bbb", "aaaa", "abba", "aabb", "bbaa", "ababab", "ca",  "ac",  "cab",  "abc"}) {
    merges.emplace_back(m);
  }
  return SmallTokenizer(merges);
}

// The two merges agree on every piece: random pieces over a small alphabet and a table with
// many overlapping merges, so ties and re-ranks happen constantly.
TEST(BytePairMerge, LinearAndHeapAgreeOnASmallTable) {
  const BpeTokenizer t = OverlappingMerges();
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3000; ++round) {
    std::string piece(2 + rng() % (kLinearMergeMax - 1), 'a');
    for (char& c : piece)
      c = "abc"[rng() % 3];
    IdSink linear;
    IdSink heap;
    LinearMerge(t.ranks(), piece, linear);
    HeapMerge(t.ranks(), piece, heap);
    ASSERT_EQ(linear.ids, heap.ids) << piece;
  }
}

// Windowed and whole merges agree on every piece over the same table, whose ranks are in no
// order of length (so merges re-rank below the one just made), with windows of 2 to 9 bytes: a
// cut that a merge crosses must be found, and the whole piece merged instead.
TEST(BytePairMerge, WindowedAndHeapAgreeOnASmallTable) {
  const BpeTokenizer t = OverlappingMerges();
  std::mt19937_64 rng(6);
  std::size_t windowed = 0;
  for (int round = 0; round < 3000; ++round) {
    const std::size_t window = 2 + rng() % 8;
    std::string piece(2 * window + 1 + rng() % 200, 'a');
    const char* alphabet = round % 3 == 0 ? "a" : round % 3 == 1 ? "ab" : "abc";
    const std::size_t letters = std::strlen(alphabet);
    for (char& c : piece)
      c = alphabet[rng() % letters];
    IdSink heap;
    IdSink windows;
    HeapMerge(t.ranks(), piece, heap);
    windowed += WindowedMerge(t.ranks(), piece, windows, window) ? 1 : 0;
    ASSERT_EQ(windows.ids, heap.ids) << piece << ", window " << window;
  }
  // Both ways are taken: the cuts of most runs of "a" hold, those of mixes often do not.
  EXPECT_GT(windowed, 100u);
  EXPECT_LT(windowed, 2900u);
}

TEST(BpeTokenizer, IllFormedUtf8CountsAsReplacementCharacters) {
  const BpeTokenizer t = SmallTokenizer({});
  const std::string fffd = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"a\xFF"
       "b",
       "a" + fffd + "b"},
      {"\xE2\x82", fffd + fffd},                        // a truncated sequence, byte by byte
      {"\xC0\xAF", fffd + fffd},                        // an overlong form
      {"\xED\xA0\x80", fffd + fffd + fffd},             // a surrogate
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"ok\xE2\x82\xAC", "ok\xE2\x82\xAC"},             // well-formed stays as it is
  };
  for (const auto& [input, same_as] : cases)
    EXPECT_EQ(Ids(t, input), Ids(t, same_as));
}

TEST(BpeTokenizer, CanceledBeforeItStarts) {
  const BpeTokenizer t = SmallTokenizer({});
  std::stop_source source;
  source.request_stop();
  auto count = t.Count("some text", source.get_token());
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().kind, TokenizerErrorKind::kCanceled);
}

TEST(BpeTokenizer, CreateRefusesATableWithoutTheSingleBytes) {
  auto t = BpeTokenizer::Create(Encoding::kCl100kBase, RankTable{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, TokenizerErrorKind::kRankFile);
  ASSERT_TRUE(t.error().rank_file.has_value());
  EXPECT_EQ(t.error().rank_file->kind, RankFileErrorKind::kMissingByte);
}

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("harness-tokenizer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(BpeTokenizerLoad, MissingFileIsUnreadable) {
  TempDir dir;
  auto t = BpeTokenizer::Load(Encoding::kCl100kBase, dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, TokenizerErrorKind::kUnreadable);
  EXPECT_NE(t.error().detail.find("cl100k_base.tiktoken"), std::string::npos);
}

TEST(BpeTokenizerLoad, AnotherRankFileFailsTheChecksum) {
  TempDir dir;
  std::ofstream(dir.path() / "o200k_base.tiktoken", std::ios::binary) << SmallRankFile({"ab"});
  auto t = BpeTokenizer::Load(Encoding::kO200kBase, dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, TokenizerErrorKind::kChecksum);
  EXPECT_NE(t.error().detail.find(std::string(EncodingRankFileSha256(Encoding::kO200kBase))),
            std::string::npos);
}

// --- with the real rank files ---

struct TestVector {
  std::string encoding;
  std::string sample;
  std::vector<TokenId> encoded;
};

// gpt-tokenizer's TestPlans.txt: blocks of "EncodingName: …", "Sample: …", "Encoded: [a, b]".
std::vector<TestVector> ReadTestPlans(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<TestVector> out;
  std::string line;
  TestVector current;
  while (std::getline(in, line)) {
    if (line.rfind("EncodingName: ", 0) == 0) {
      current = TestVector{line.substr(14), "", {}};
    } else if (line.rfind("Sample: ", 0) == 0) {
      current.sample = line.substr(8);
    } else if (line.rfind("Encoded: [", 0) == 0) {
      std::string list = line.substr(10, line.size() - 11);
      std::replace(list.begin(), list.end(), ',', ' ');
      std::istringstream ids(list);
      TokenId id;
      while (ids >> id)
        current.encoded.push_back(id);
      out.push_back(current);
    }
  }
  return out;
}

TEST(BpeTokenizerRealData, EveryCl100kAndO200kTestVectorPasses) {
  const std::filesystem::path plans = test::DataFile("TestPlans.txt");
  ASSERT_FALSE(plans.empty());
  int checked[2] = {0, 0};
  for (const TestVector& v : ReadTestPlans(plans)) {
    const std::optional<Encoding> encoding = EncodingFromName(v.encoding);
    if (!encoding)
      continue;  // p50k/r50k vectors: not encodings of this project
    const auto tokenizer = test::RealTokenizer(*encoding);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(Ids(*tokenizer, v.sample), v.encoded) << v.encoding << ": " << v.sample;
    ++checked[*encoding == Encoding::kCl100kBase ? 0 : 1];
  }
  EXPECT_EQ(checked[0], 64);
  EXPECT_EQ(checked[1], 57);
}

TEST(BpeTokenizerRealData, LoadsTheWholeVocabularies) {
  const auto cl100k = test::RealTokenizer(Encoding::kCl100kBase);
  const auto o200k = test::RealTokenizer(Encoding::kO200kBase);
  ASSERT_NE(cl100k, nullptr);
  ASSERT_NE(o200k, nullptr);
  EXPECT_EQ(cl100k->ranks().size(), 100256u);
  EXPECT_EQ(o200k->ranks().size(), 199998u);
  EXPECT_EQ(Ids(*cl100k, "hello world"), (std::vector<TokenId>{15339, 1917}));
  EXPECT_EQ(Ids(*o200k, "hello world"), (std::vector<TokenId>{24912, 2375}));
}

TEST(BpeTokenizerRealData, SpecialTokenStringsAreOrdinaryText) {
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    for (const SpecialToken& special : EncodingSpecialTokens(encoding)) {
      const std::vector<TokenId> ids = Ids(*t, special.text);
      EXPECT_GT(ids.size(), 1u) << special.text;
      for (const TokenId id : ids)
        EXPECT_LT(id, t->ranks().size()) << special.text;
      EXPECT_EQ(t->Decode(ids), std::string(special.text));
      // The special token itself decodes to its text.
      const TokenId one[] = {special.id};
      EXPECT_EQ(t->Decode(one), std::string(special.text));
    }
    const TokenId unknown[] = {static_cast<TokenId>(t->ranks().size())};
    EXPECT_EQ(t->Decode(unknown), std::nullopt);
  }
  const auto cl100k = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(cl100k, nullptr);
  EXPECT_EQ(Ids(*cl100k, "<|endoftext|>"), (std::vector<TokenId>{27, 91, 8862, 728, 428, 91, 29}));
}

TEST(BpeTokenizerRealData, DecodeInvertsEncodeOnTheMixedCorpus) {
  std::string text;
  inference_internal::MixedCorpus(11).AppendFragments(text, 3000);
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    const std::vector<TokenId> ids = Ids(*t, text);
    EXPECT_EQ(t->Decode(ids), text);
    auto count = t->Count(text);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, ids.size());
  }
}

// Pieces far longer than kLinearMergeMax, through both merges, with the real ranks.
TEST(BpeTokenizerRealData, LinearAndHeapMergeAgreeOnRealPieces) {
  std::string text;
  inference_internal::MixedCorpus(12).AppendFragments(text, 2000);
  std::mt19937_64 rng(13);
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    for (int round = 0; round < 2000; ++round) {
      const std::size_t length = 2 + rng() % (kLinearMergeMax - 1);
      const std::size_t at = rng() % (text.size() - length);
      const std::string piece = text.substr(at, length);
      IdSink linear;
      IdSink heap;
      LinearMerge(t->ranks(), piece, linear);
      HeapMerge(t->ranks(), piece, heap);
      ASSERT_EQ(linear.ids, heap.ids) << EncodingName(encoding) << " at " << at;
    }
  }
}

// A long piece merged window by window gives HeapMerge's tokens, whether its cuts hold or one
// does not and the whole piece is merged at once (random mixes of a few characters): small
// windows put hundreds of cuts through pieces of a few kilobytes, with the real ranks. The cuts
// through runs of one character or one short pattern hold (moved back to the run's own period
// where the window's end is not on it: 16 ideographic spaces in o200k_base), so the bounded
// path is the one such runs take.
TEST(BpeTokenizerRealData, WindowedAndWholeMergeAgreeOnLongPieces) {
  std::vector<std::pair<std::string, bool>> pieces;  // the piece, and whether its cuts hold
  for (const std::string unit :
       {" ", "\t", "\n", "a", "A", "-", "=", "\r\n", " \n", "\xE3\x80\x80"}) {
    std::string run;
    while (run.size() < 6000)
      run += unit;
    pieces.emplace_back(run, true);
  }
  std::mt19937_64 rng(14);
  for (const std::string alphabet : {" \t", " \n\r", "ab", "abc ", " -=", "  \t", "     \n"}) {
    for (int k = 0; k < 4; ++k) {
      std::string mix;
      const std::size_t length = 3000 + rng() % 3000;
      while (mix.size() < length)
        mix += alphabet[rng() % alphabet.size()];
      pieces.emplace_back(mix, false);
    }
  }
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    for (const auto& [piece, holds] : pieces) {
      IdSink whole;
      HeapMerge(t->ranks(), piece, whole);
      for (const std::size_t window : {256u, 300u, 1024u}) {
        IdSink ids;
        CountSink count;
        const bool windowed = WindowedMerge(t->ranks(), piece, ids, window);
        EXPECT_EQ(WindowedMerge(t->ranks(), piece, count, window), windowed);
        ASSERT_EQ(ids.ids, whole.ids)
            << EncodingName(encoding) << ", window " << window << ", " << piece.substr(0, 8);
        EXPECT_EQ(count.count, whole.ids.size());
        if (holds) {
          EXPECT_TRUE(windowed) << EncodingName(encoding) << ", window " << window << ", "
                                << piece.substr(0, 8);
        }
      }
    }
  }
}

// One piece of a megabyte (a letter run, a white space run, a punctuation run) encodes in
// O(n log n): under a second in a release build, not the hours a quadratic merge would take.
// The bound is for the sanitizer build at -O0 on a loaded machine (about 10 s a megabyte alone,
// 19 s with the machine's two cores shared fifteen ways): generous, since a quadratic merge
// misses it by two orders of magnitude, and a timing test must not fail on a busy machine.
TEST(BpeTokenizerRealData, HugePiecesAreNotQuadratic) {
  constexpr std::size_t kBytes = 1u << 20;
  const std::string inputs[] = {std::string(kBytes, 'a'), std::string(kBytes, ' '),
                                std::string(kBytes, '!'), std::string(kBytes / 2, 'x') + "yz"};
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    for (const std::string& input : inputs) {
      const auto start = std::chrono::steady_clock::now();
      const std::vector<TokenId> ids = Ids(*t, input);
      const auto seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(t->Decode(ids), input);
      EXPECT_LT(seconds, 240.0) << EncodingName(encoding) << " " << input.size() << " bytes";
    }
  }
}

// A long run of one character class makes the pattern backtrack over the run once for each
// alternative that fails at its start, which went past PCRE2's default match limit at about
// 10 MB ("tokenizer: match: match limit exceeded"), so such a transcript could never be counted.
// The split must succeed, cover the text, and take each run whole (digits go three at a time),
// in time linear in the run.
TEST(BpeTokenizerRealData, LongRunsOfOneCharacterClassSplitWithoutAMatchLimit) {
  constexpr std::size_t kBytes = 12u << 20;
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    for (const char c : {' ', '\n', '\t', 'A', 'a', '!', '7'}) {
      const std::string text(kBytes, c);
      std::size_t covered = 0;
      std::size_t pieces = 0;
      std::size_t longest = 0;
      bool in_order = true;
      const auto start = std::chrono::steady_clock::now();
      const auto split = t->ForEachPiece(text, [&](std::string_view piece) {
        in_order = in_order && piece.data() == text.data() + covered;
        covered += piece.size();
        longest = std::max(longest, piece.size());
        ++pieces;
      });
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string what = std::string(EncodingName(encoding)) + ", 12 MiB of " +
                               (c == '\n' ? std::string("\\n") : std::string(1, c));
      ASSERT_TRUE(split.ok()) << what << ": " << split.error().Message();
      EXPECT_TRUE(in_order) << what;
      EXPECT_EQ(covered, kBytes) << what;
      if (c == '7') {
        EXPECT_EQ(pieces, (kBytes + 2) / 3) << what;
      } else {
        EXPECT_EQ(longest, kBytes) << what;
      }
      EXPECT_LT(seconds, 30.0) << what;
    }
  }
}

}  // namespace
}  // namespace harness
