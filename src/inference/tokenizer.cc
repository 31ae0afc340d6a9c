// BpeTokenizer (tokenizer.h): PCRE2 pre-tokenization and tiktoken's byte-pair merge.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness/inference/tokenizer.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "harness/core/sha256.h"
#include "harness/core/utf8.h"
#include "inference/byte_pair.h"

namespace harness {
namespace {

// The patterns and special tokens of tiktoken@1.0.22's encoders/*.json (docs/tokenizer.md).
constexpr std::string_view kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::array<SpecialToken, 5> kCl100kSpecial{{
    {"<|endoftext|>", 100257},
    {"<|fim_prefix|>", 100258},
    {"<|fim_middle|>", 100259},
    {"<|fim_suffix|>", 100260},
    {"<|endofprompt|>", 100276},
}};
constexpr std::array<SpecialToken, 2> kO200kSpecial{{
    {"<|endoftext|>", 199999},
    {"<|endofprompt|>", 200018},
}};

// Unicode's White_Space property, which is what tiktoken's Rust regex means by \s. PCRE2's \s
// (with PCRE2_UCP) also matches U+180E MONGOLIAN VOWEL SEPARATOR, a space before Unicode 6.3.
constexpr std::string_view kWhiteSpaceItems =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// The pattern with \s and \S spelled as White_Space classes; nullopt for \S inside a class
// (which a class cannot spell; neither pattern has one).
std::optional<std::string> WithUnicodeWhiteSpace(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        if (in_class) {
          out.append(kWhiteSpaceItems);
        } else {
          out.append("[").append(kWhiteSpaceItems).append("]");
        }
      } else if (next == 'S') {
        if (in_class)
          return std::nullopt;
        out.append("[^").append(kWhiteSpaceItems).append("]");
      } else {
        out.push_back(c);
        out.push_back(next);
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out.push_back(c);
      // A ']' or '^]' right after the opening bracket is a literal, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') {
        out.push_back('^');
        ++i;
      }
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') {
        out.push_back(']');
        ++i;
      }
      continue;
    }
    if (c == ']' && in_class)
      in_class = false;
    out.push_back(c);
  }
  return out;
}

// A JIT stack for the rare match that outgrows PCRE2's default 32 KiB one.
constexpr std::size_t kJitStackMax = 64u * 1024 * 1024;
// PCRE2's match limit for a text of `size` bytes. A match attempt at the start of a long run
// of one character class backtracks over the whole run once for each alternative that fails
// there (cl100k's `\s*[\r\n]+` on 10 MB of spaces, o200k's lower-case-ending alternative on 10
// MB of capitals) before the one that takes the run: a few steps a byte, and more than PCRE2's
// default of 10 million at about 10 MB. The run is then consumed, so the total stays linear; the
// limit only stops a runaway pattern, which neither encoding's is.
std::uint32_t MatchLimitFor(std::size_t size) {
  constexpr std::uint64_t kFloor = 10'000'000;  // PCRE2's default
  constexpr std::uint64_t kStepsPerByte = 16;
  const std::uint64_t limit = kFloor + kStepsPerByte * static_cast<std::uint64_t>(size);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(limit, std::numeric_limits<std::uint32_t>::max()));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* context) const { pcre2_match_context_free(context); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* stack) const { pcre2_jit_stack_free(stack); }
};

std::string Pcre2Message(int code) {
  std::array<PCRE2_UCHAR, 256> buffer{};
  const int n = pcre2_get_error_message(code, buffer.data(), buffer.size());
  if (n < 0)
    return fmt::format("PCRE2 error {}", code);
  return std::string(reinterpret_cast<const char*>(buffer.data()), static_cast<std::size_t>(n));
}

Result<std::string, TokenizerError> ReadRankFile(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(name.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    return Fail(TokenizerError{TokenizerErrorKind::kUnreadable,
                               fmt::format("cannot open {}: {}", name, std::strerror(errno)),
                               std::nullopt});
  }
  std::string data;
  std::array<char, 1 << 16> buffer;
  while (true) {
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (data.size() + n > kMaxRankFileBytes) {
      return Fail(TokenizerError{TokenizerErrorKind::kRankFile, name,
                                 RankFileError{RankFileErrorKind::kTooLarge, 0, -1}});
    }
    data.append(buffer.data(), n);
    if (n < buffer.size()) {
      if (std::ferror(file.get())) {
        return Fail(TokenizerError{TokenizerErrorKind::kUnreadable,
                                   fmt::format("cannot read {}: {}", name, std::strerror(errno)),
                                   std::nullopt});
      }
      return data;
    }
  }
}

}  // namespace

std::string_view EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kCl100kBase:
      return "cl100k_base";
    case Encoding::kO200kBase:
      return "o200k_base";
  }
  return "";
}

std::optional<Encoding> EncodingFromName(std::string_view name) {
  for (const Encoding e : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    if (EncodingName(e) == name)
      return e;
  }
  return std::nullopt;
}

std::string EncodingRankFileName(Encoding encoding) {
  std::string name(EncodingName(encoding));
  name.append(".tiktoken");
  return name;
}

std::string_view EncodingRankFileSha256(Encoding encoding) {
  switch (encoding) {
    case Encoding::kCl100kBase:
      return "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";
    case Encoding::kO200kBase:
      return "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";
  }
  return "";
}

std::string_view EncodingPattern(Encoding encoding) {
  switch (encoding) {
    case Encoding::kCl100kBase:
      return kCl100kPattern;
    case Encoding::kO200kBase:
      return kO200kPattern;
  }
  return "";
}

std::span<const SpecialToken> EncodingSpecialTokens(Encoding encoding) {
  switch (encoding) {
    case Encoding::kCl100kBase:
      return kCl100kSpecial;
    case Encoding::kO200kBase:
      return kO200kSpecial;
  }
  return {};
}

std::string_view TokenizerErrorKindName(TokenizerErrorKind kind) {
  switch (kind) {
    case TokenizerErrorKind::kUnreadable:
      return "unreadable";
    case TokenizerErrorKind::kChecksum:
      return "checksum";
    case TokenizerErrorKind::kRankFile:
      return "rank_file";
    case TokenizerErrorKind::kPattern:
      return "pattern";
    case TokenizerErrorKind::kMatch:
      return "match";
    case TokenizerErrorKind::kCanceled:
      return "canceled";
  }
  return "";
}

std::string TokenizerError::Message() const {
  std::string out("tokenizer: ");
  out.append(TokenizerErrorKindName(kind));
  if (!detail.empty()) {
    out.append(": ");
    out.append(detail);
  }
  if (rank_file) {
    out.append(": ");
    out.append(rank_file->Message());
  }
  return out;
}

struct BpeTokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  std::array<TokenId, 256> byte_ranks{};
  ~Compiled() { pcre2_code_free(code); }
};

BpeTokenizer::BpeTokenizer(Encoding encoding, RankTable ranks, std::unique_ptr<Compiled> compiled)
    : encoding_(encoding), ranks_(std::move(ranks)), compiled_(std::move(compiled)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

Result<BpeTokenizer, TokenizerError> BpeTokenizer::Create(Encoding encoding, RankTable ranks) {
  const std::string_view published = EncodingPattern(encoding);
  if (published.empty())
    return Fail(TokenizerError{TokenizerErrorKind::kPattern, "unknown encoding", std::nullopt});
  const std::optional<std::string> source = WithUnicodeWhiteSpace(published);
  if (!source)
    return Fail(TokenizerError{TokenizerErrorKind::kPattern, "\\S in a class", std::nullopt});
  auto pattern = std::make_unique<Compiled>();
  int code = 0;
  PCRE2_SIZE offset = 0;
  pattern->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source->data()), source->size(),
                                PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (pattern->code == nullptr) {
    return Fail(TokenizerError{TokenizerErrorKind::kPattern,
                               fmt::format("{} at offset {}", Pcre2Message(code), offset),
                               std::nullopt});
  }
  // Without JIT (a platform that lacks it) the interpreter gives the same matches, slower.
  pattern->jit = pcre2_jit_compile(pattern->code, PCRE2_JIT_COMPLETE) == 0;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const std::optional<TokenId> id = ranks.Find(std::string_view(&c, 1));
    if (!id) {
      return Fail(TokenizerError{TokenizerErrorKind::kRankFile, "",
                                 RankFileError{RankFileErrorKind::kMissingByte, 0, b}});
    }
    pattern->byte_ranks[static_cast<std::size_t>(b)] = *id;
  }
  return BpeTokenizer(encoding, std::move(ranks), std::move(pattern));
}

Result<BpeTokenizer, TokenizerError> BpeTokenizer::Load(Encoding encoding,
                                                        const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / EncodingRankFileName(encoding);
  HARNESS_TRY(std::string text, ReadRankFile(path));
  const std::string digest = ToHex(Sha256(text));
  if (digest != EncodingRankFileSha256(encoding)) {
    return Fail(TokenizerError{TokenizerErrorKind::kChecksum,
                               fmt::format("{} has SHA-256 {}, expected {}", path.string(), digest,
                                           EncodingRankFileSha256(encoding)),
                               std::nullopt});
  }
  auto ranks = ParseRankFile(text);
  if (!ranks.ok())
    return Fail(TokenizerError{TokenizerErrorKind::kRankFile, path.string(), ranks.error()});
  return Create(encoding, std::move(ranks).value());
}

template <class Sink>
void BpeTokenizer::MergePiece(std::string_view piece, Sink& sink) const {
  if (piece.size() == 1) {
    sink.Id(compiled_->byte_ranks[static_cast<unsigned char>(piece[0])]);
  } else if (const std::optional<TokenId> whole = ranks_.Find(piece)) {
    sink.Id(*whole);
  } else if (piece.size() <= kLinearMergeMax) {
    inference_internal::LinearMerge(ranks_, piece, sink);
  } else if (piece.size() <= 2 * kMergeWindow) {
    inference_internal::HeapMerge(ranks_, piece, sink);
  } else {
    inference_internal::WindowedMerge(ranks_, piece, sink, kMergeWindow);
  }
}

template <class Sink>
Status<TokenizerError> BpeTokenizer::Run(std::string_view text, std::stop_token stop,
                                         Sink& sink) const {
  if (stop.stop_requested())
    return Fail(TokenizerError{TokenizerErrorKind::kCanceled, "", std::nullopt});
  std::string replaced;
  // Every byte that is not part of well-formed UTF-8 becomes U+FFFD, as AppendJsonString
  // writes it.
  if (const std::size_t first = FirstIllFormedUtf8(text); first != text.size()) {
    replaced.reserve(text.size() + 16);
    replaced.assign(text.substr(0, first));
    AppendReplacingIllFormedUtf8(replaced, text.substr(first));
    text = replaced;
  }
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr));
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> context(
      pcre2_match_context_create(nullptr));
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> jit_stack;
  if (!match || !context)
    return Fail(TokenizerError{TokenizerErrorKind::kMatch, "out of memory", std::nullopt});
  pcre2_set_match_limit(context.get(), MatchLimitFor(text.size()));
  // The interpreter (no JIT) keeps backtracking points on the heap, one frame per nested group
  // it is in, not per byte; its depth limit follows the match limit all the same.
  pcre2_set_depth_limit(context.get(), MatchLimitFor(text.size()));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const std::size_t size = text.size();
  std::size_t offset = 0;
  std::uint32_t pieces = 0;
  while (offset < size) {
    // The text is well-formed UTF-8 now, so PCRE2 need not check it again (which it would do
    // from the offset on every call: quadratic).
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, size, offset, 0,
                                                    match.get(), context.get())
                                  : pcre2_match(compiled_->code, subject, size, offset,
                                                PCRE2_NO_UTF_CHECK, match.get(), context.get());
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !jit_stack) {
      jit_stack.reset(pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr));
      if (!jit_stack)
        return Fail(TokenizerError{TokenizerErrorKind::kMatch, "out of memory", std::nullopt});
      pcre2_jit_stack_assign(context.get(), nullptr, jit_stack.get());
      continue;
    }
    if (rc < 0)
      return Fail(TokenizerError{TokenizerErrorKind::kMatch, Pcre2Message(rc), std::nullopt});
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const std::size_t begin = ovector[0];
    const std::size_t end = ovector[1];
    if (end <= begin) {
      // Neither pattern matches the empty string; step over one character if one ever did.
      offset = begin + std::max<std::size_t>(1, DecodeUtf8(text, begin).length);
      continue;
    }
    if constexpr (Sink::kPiecesOnly)
      sink.Piece(text.substr(begin, end - begin));
    else
      MergePiece(text.substr(begin, end - begin), sink);
    offset = end;
    if ((++pieces & 0xFFF) == 0 && stop.stop_requested())
      return Fail(TokenizerError{TokenizerErrorKind::kCanceled, "", std::nullopt});
  }
  return {};
}

Result<std::vector<TokenId>, TokenizerError> BpeTokenizer::Encode(std::string_view text,
                                                                  std::stop_token stop) const {
  inference_internal::IdSink sink;
  sink.ids.reserve(text.size() / 4 + 1);
  HARNESS_CHECK(Run(text, std::move(stop), sink));
  return std::move(sink.ids);
}

namespace {
// ForEachPiece's sink: the pieces, unmerged.
struct PieceSink {
  static constexpr bool kPiecesOnly = true;
  const std::function<void(std::string_view)>& piece;
  void Piece(std::string_view p) const { piece(p); }
};
}  // namespace

Status<TokenizerError> BpeTokenizer::ForEachPiece(
    std::string_view text, const std::function<void(std::string_view)>& piece,
    std::stop_token stop) const {
  PieceSink sink{piece};
  return Run(text, std::move(stop), sink);
}

Result<TokenCount, TokenizerError> BpeTokenizer::Count(std::string_view text,
                                                       std::stop_token stop) const {
  inference_internal::CountSink sink;
  HARNESS_CHECK(Run(text, std::move(stop), sink));
  return sink.count;
}

std::optional<std::string> BpeTokenizer::Decode(std::span<const TokenId> ids) const {
  std::string out;
  for (const TokenId id : ids) {
    if (id < ranks_.size()) {
      out.append(ranks_.Bytes(id));
      continue;
    }
    bool special = false;
    for (const SpecialToken& token : EncodingSpecialTokens(encoding_)) {
      if (token.id == id) {
        out.append(token.text);
        special = true;
        break;
      }
    }
    if (!special)
      return std::nullopt;
  }
  return out;
}

std::filesystem::path TokenizerDirFromEnvironment() {
  // The environment is read here only, once per call, by the composition roots (CLI, tests).
  if (const char* dir = std::getenv("HARNESS_TOKENIZER_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  std::filesystem::path cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    cache = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    cache = std::filesystem::path(home) / ".cache";
  } else {
    cache = ".cache";
  }
  return cache / "harness" / "tokenizers";
}

}  // namespace harness
