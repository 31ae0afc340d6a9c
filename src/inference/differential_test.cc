// The differential tests: the C++ tokenizer must give the token ids of js-tiktoken and of
// tiktoken (OpenAI's Rust tokenizer as WebAssembly), run by node (tools/tiktoken_oracle.js), on
// a generated mixed-script corpus and on long runs of one character class, and of tiktoken on a
// white-space edge corpus, for both encodings. Needs node and the oracles from
// scripts/fetch-tokenizers; fails, never skips, without them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "harness/inference/tokenizer.h"
#include "inference/mixed_corpus.h"
#include "inference/test_data.h"

namespace harness {
namespace {

constexpr std::uint64_t kCorpusSeed = 20250105;
constexpr std::size_t kCorpusFragments = 20000;

std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out.append("'\\''");
    else
      out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// Runs a shell command; returns its exit status and standard output + error.
std::pair<int, std::string> Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr)
    return {-1, "popen failed"};
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<TokenId> ReadIds(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<TokenId> ids(bytes.size() / 4);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + i * 4);
    ids[i] = static_cast<TokenId>(p[0]) | static_cast<TokenId>(p[1]) << 8 |
             static_cast<TokenId>(p[2]) << 16 | static_cast<TokenId>(p[3]) << 24;
  }
  return ids;
}

// The ids `library` gives for `text`, or a failure.
std::optional<std::vector<TokenId>> Oracle(const std::string& library, Encoding encoding,
                                           const std::string& text) {
  const char* source = std::getenv("HARNESS_SOURCE_DIR");
  if (source == nullptr) {
    ADD_FAILURE() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
    return std::nullopt;
  }
  const auto [node_status, node_version] = Shell("node --version");
  if (node_status != 0) {
    ADD_FAILURE() << "node is not available (" << node_version << "); scripts/setup installs it";
    return std::nullopt;
  }
  const std::filesystem::path work = std::filesystem::temp_directory_path() /
                                     ("harness-differential-" + std::to_string(::getpid()) + "-" +
                                      library + "-" + std::string(EncodingName(encoding)));
  std::filesystem::create_directories(work);
  std::ofstream(work / "input.txt", std::ios::binary) << text;
  const std::string command = "node " + Quoted(std::string(source) + "/tools/tiktoken_oracle.js") +
                              " " + Quoted(TokenizerDirFromEnvironment().string()) + " " + library +
                              " " + std::string(EncodingName(encoding)) + " " +
                              Quoted((work / "input.txt").string()) + " " +
                              Quoted((work / "ids.bin").string());
  const auto [status, output] = Shell(command);
  std::optional<std::vector<TokenId>> ids;
  if (status != 0) {
    ADD_FAILURE() << "the oracle failed (exit " << status << "): " << output << "\n"
                  << test::MissingDataHint();
  } else {
    ids = ReadIds(work / "ids.bin");
  }
  std::filesystem::remove_all(work);
  return ids;
}

void ExpectSameIds(const BpeTokenizer& tokenizer, const std::vector<TokenId>& ours,
                   const std::vector<TokenId>& theirs, const std::string& library) {
  if (ours == theirs)
    return;
  std::size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i])
    ++i;
  const auto window = [&](const std::vector<TokenId>& ids) {
    const std::size_t from = i < 3 ? 0 : i - 3;
    const std::size_t to = std::min(ids.size(), i + 4);
    std::string shown;
    for (std::size_t k = from; k < to; ++k) {
      const TokenId one[] = {ids[k]};
      shown.append(std::to_string(ids[k])).append("=[").append(tokenizer.Decode(one).value_or("?"));
      shown.append("] ");
    }
    return shown;
  };
  ADD_FAILURE() << EncodingName(tokenizer.encoding()) << ": " << library << " differs at token "
                << i << " (ours " << ours.size() << " tokens, theirs " << theirs.size()
                << ")\n  ours:   " << window(ours) << "\n  theirs: " << window(theirs);
}

// Encodes `text` with ours and with `library`; reports the first difference.
void ExpectIdentical(const std::string& library, const std::string& text, const char* corpus) {
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto tokenizer = test::RealTokenizer(encoding);
    ASSERT_NE(tokenizer, nullptr);
    auto ours = tokenizer->Encode(text);
    ASSERT_TRUE(ours.ok()) << ours.error().Message();
    const auto theirs = Oracle(library, encoding, text);
    ASSERT_TRUE(theirs.has_value());
    ExpectSameIds(*tokenizer, *ours, *theirs, library);
    std::printf("%s, %s: %zu bytes, %zu tokens, identical to %s: %s\n", corpus,
                std::string(EncodingName(encoding)).c_str(), text.size(), ours->size(),
                library.c_str(), *ours == *theirs ? "yes" : "no");
  }
}

std::string MixedScriptCorpus() {
  std::string text;
  inference_internal::MixedCorpus(kCorpusSeed).AppendFragments(text, kCorpusFragments);
  return text;
}

// Characters whose white-space class differs between regex engines (U+0085 NEL, U+180E,
// U+FEFF, U+200B, U+2028, U+00A0, U+3000, VT, FF), among letters, marks, digits and ASCII space.
std::string WhiteSpaceEdgeCorpus() {
  constexpr char32_t kAlphabet[] = {'a',    'B',    ' ',    '\n',   '\r',   '\t',   '!',
                                    '1',    0x00E9, 0x0301, 0x0085, 0x180E, 0xFEFF, 0x200B,
                                    0x2028, 0x00A0, 0x3000, 0x000B, 0x000C, 0x4E2D};
  std::mt19937_64 rng(kCorpusSeed);
  std::string text;
  for (int i = 0; i < 50000; ++i)
    AppendUtf8(text, kAlphabet[rng() % std::size(kAlphabet)]);
  return text;
}

// Runs of one character class, each `run_bytes` long, one after another: white space of
// several kinds, capitals, lower case, punctuation, digits, a two-byte letter, a CJK ideograph.
// The oracles are quadratic in a piece's length (tiktoken took 12 s for 100 KB of spaces,
// js-tiktoken 22 s for 16 KB of capitals), so the runs are as long as each answers in a few
// seconds for the whole corpus; longer runs are the split test's (tokenizer_test.cc).
std::string LongRunsCorpus(std::size_t run_bytes) {
  const std::string units[] = {" ", "\n", "\t", "\r\n",     "A",
                               "a", "!",  "7",  "\xC3\xA9", "\xE4\xB8\xAD"};
  std::string text;
  for (const std::string& unit : units) {
    for (std::size_t n = 0; n < run_bytes; n += unit.size())
      text.append(unit);
  }
  return text;
}

TEST(DifferentialRealData, IdenticalToBothOraclesOnLongRunsOfOneCharacterClass) {
  ExpectIdentical("js-tiktoken", LongRunsCorpus(1024), "1 KB runs");
  ExpectIdentical("tiktoken", LongRunsCorpus(8192), "8 KB runs");
}

TEST(DifferentialRealData, IdenticalToJsTiktokenOnAMixedScriptCorpus) {
  ExpectIdentical("js-tiktoken", MixedScriptCorpus(), "mixed-script");
}

// OpenAI's own tokenizer (Rust, as WebAssembly) is the reference where js-tiktoken cannot be:
// JavaScript's \s differs from Unicode White_Space on U+0085 and U+FEFF.
TEST(DifferentialRealData, IdenticalToTiktokenOnTheMixedAndWhiteSpaceEdgeCorpora) {
  ExpectIdentical("tiktoken", MixedScriptCorpus(), "mixed-script");
  ExpectIdentical("tiktoken", WhiteSpaceEdgeCorpus(), "white-space edge");
}

}  // namespace
}  // namespace harness
