// BpeTokenizer: OpenAI's byte-pair encodings cl100k_base and o200k_base, run locally and exactly
// (docs/tokenizer.md has every behaviour with its proof).
//
// Contract:
// - A rank file is OpenAI's `.tiktoken` format: one line per token, "<base64 bytes> <rank>\n".
//   ParseRankFile is strict and every refusal is a typed RankFileError naming the 1-based line:
//   the base64 is canonical (content/base64.h rules) and not empty; the rank is canonical
//   decimal (no sign, no leading zero) and equals the line's index, so ranks run 0, 1, 2, …
//   without a gap or a duplicate; no token's bytes appear twice; every line ends in "\n" (no
//   "\r"); every one of the 256 single bytes is a token, so every text can be encoded.
// - BpeTokenizer::Load reads `<dir>/<encoding>.tiktoken`, checks its SHA-256 against OpenAI's
//   published digest (EncodingRankFileSha256) and parses it. Create builds a tokenizer over any
//   parsed table (tests use small ones) with the encoding's own pre-tokenization pattern.
// - Encode/Count are tiktoken's `encode_ordinary`: the text is split with the encoding's pattern
//   (PCRE2, UTF + UCP, JIT-compiled) and each piece is byte-pair merged by rank, lowest rank
//   first, leftmost on ties. The pattern is the published one with \s and \S spelled as
//   Unicode White_Space classes, which is what tiktoken's Rust regex means by them (PCRE2's own
//   \s also matches U+180E). Special-token strings such as "<|endoftext|>" in the text are
//   ordinary text: they are counted as the tokens of their characters, never as the special
//   token, so user content cannot forge one. The special tokens themselves are only listed
//   (EncodingSpecialTokens) and decoded.
// - Text is UTF-8. Each byte that is not part of well-formed UTF-8 counts as U+FFFD, as the
//   content codec writes it on the wire (AppendJsonString).
// - The merge is O(n log n) in a piece's length (a heap over a linked list of parts above
//   kLinearMergeMax bytes, tiktoken's own scan below), so no input is quadratic. A piece longer
//   than two kMergeWindow is merged window by window where every cut between windows is proved
//   never to be crossed (a run of one character: megabytes of spaces), in memory for two
//   windows; otherwise whole. Nothing is cached across calls.
// - Encode/Count fail only if PCRE2 refuses a match (TokenizerErrorKind::kMatch; not observed
//   with the two patterns, whatever the input) or, with a stop token, when it is requested
//   (kCanceled; checked every few thousand pieces).
// Thread safety: a BpeTokenizer is immutable after construction; every const method may be
// called concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/result.h"

namespace harness {

using TokenId = std::uint32_t;

enum class Encoding : std::uint8_t {
  kCl100kBase = 1,
  kO200kBase = 2,
};

std::string_view EncodingName(Encoding encoding);  // "cl100k_base", "o200k_base"; "" else
std::optional<Encoding> EncodingFromName(std::string_view name);
// "<name>.tiktoken"
std::string EncodingRankFileName(Encoding encoding);
// OpenAI's published SHA-256 of the rank file, 64 lowercase hex characters.
std::string_view EncodingRankFileSha256(Encoding encoding);
// The pre-tokenization pattern, exactly as tiktoken publishes it.
std::string_view EncodingPattern(Encoding encoding);

struct SpecialToken {
  std::string_view text;
  TokenId id;
};
// cl100k: <|endoftext|> 100257, <|fim_prefix|> 100258, <|fim_middle|> 100259,
// <|fim_suffix|> 100260, <|endofprompt|> 100276. o200k: <|endoftext|> 199999,
// <|endofprompt|> 200018.
std::span<const SpecialToken> EncodingSpecialTokens(Encoding encoding);

// The rank files are 1.7 and 3.6 MB; anything far larger is not one.
inline constexpr std::size_t kMaxRankFileBytes = 64u * 1024 * 1024;

enum class RankFileErrorKind : std::uint8_t {
  kEmpty = 1,           // no line at all
  kLineShape = 2,       // not "<base64> <rank>\n": no single space, "\r", no final newline
  kBadBase64 = 3,       // not canonical base64, or no bytes
  kBadRank = 4,         // not canonical decimal, or beyond 32 bits
  kDuplicateToken = 5,  // the same bytes on an earlier line
  kDuplicateRank = 6,   // a rank below the line's index: it was given before
  kRankGap = 7,         // a rank above the line's index: one is missing
  kMissingByte = 8,     // a single byte is not a token
  kTooLarge = 9,        // more than kMaxRankFileBytes
};

// "empty", "line_shape", "bad_base64", "bad_rank", "duplicate_token", "duplicate_rank",
// "rank_gap", "missing_byte", "too_large"; "" else.
std::string_view RankFileErrorKindName(RankFileErrorKind kind);

struct RankFileError {
  RankFileErrorKind kind = RankFileErrorKind::kLineShape;
  std::size_t line = 0;  // 1-based; 0 when the error is about the whole file
  int byte = -1;         // kMissingByte: the byte that has no token
  // "rank file line 7: bad_base64", "rank file: missing_byte 0x0a"; never quotes the file.
  std::string Message() const;
  friend bool operator==(const RankFileError&, const RankFileError&) = default;
};

// Token bytes <-> rank, in an open-addressing table over one byte arena.
class RankTable {
 public:
  RankTable() = default;
  std::size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  std::optional<TokenId> Find(std::string_view bytes) const;
  // The length of the longest token: no longer byte string can be one.
  std::size_t max_token_bytes() const { return max_token_bytes_; }
  // The bytes of token `id`; `id` < size().
  std::string_view Bytes(TokenId id) const {
    return std::string_view(arena_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }

 private:
  friend Result<RankTable, RankFileError> ParseRankFile(std::string_view text);
  // A slot decides most lookups alone (one cache line): the length and the first 8 bytes,
  // zero-padded; only longer tokens compare the rest in the arena.
  struct Slot {
    std::uint64_t prefix = 0;
    std::uint32_t id1 = 0;  // token id + 1; 0 is an empty slot
    std::uint32_t length = 0;
  };
  bool Insert(std::string_view bytes, TokenId id);  // false: the bytes are there already
  void Reserve(std::size_t tokens, std::size_t arena_bytes);

  std::string arena_;
  std::vector<std::uint32_t> offsets_;  // size() + 1 entries once a token is in
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t max_token_bytes_ = 0;
  // Tokens of one or two bytes by value (kNone if absent): the merges ask for pairs most.
  std::vector<TokenId> short_ids_;
};

Result<RankTable, RankFileError> ParseRankFile(std::string_view text);

enum class TokenizerErrorKind : std::uint8_t {
  kUnreadable = 1,  // the rank file cannot be opened or read
  kChecksum = 2,    // the rank file is not the published one
  kRankFile = 3,    // the rank file does not parse (rank_file says why)
  kPattern = 4,     // PCRE2 refused to compile the pattern
  kMatch = 5,       // PCRE2 refused a match
  kCanceled = 6,    // the stop token was triggered
};

// "unreadable", "checksum", "rank_file", "pattern", "match", "canceled"; "" else.
std::string_view TokenizerErrorKindName(TokenizerErrorKind kind);

struct TokenizerError {
  TokenizerErrorKind kind = TokenizerErrorKind::kUnreadable;
  std::string detail;  // the path, the digest found, PCRE2's message; never the text
  std::optional<RankFileError> rank_file;
  std::string Message() const;  // "tokenizer: <kind>: <detail>"
};

// Pieces up to this many bytes merge with tiktoken's linear scan; longer ones with a heap.
inline constexpr std::size_t kLinearMergeMax = 96;
// Pieces longer than twice this merge window by window where that gives the same tokens
// (docs/tokenizer.md "The merge"), so that the memory a piece needs does not grow with it.
inline constexpr std::size_t kMergeWindow = 64 * 1024;

class BpeTokenizer {
 public:
  static Result<BpeTokenizer, TokenizerError> Create(Encoding encoding, RankTable ranks);
  static Result<BpeTokenizer, TokenizerError> Load(Encoding encoding,
                                                   const std::filesystem::path& dir);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  Encoding encoding() const { return encoding_; }
  const RankTable& ranks() const { return ranks_; }

  Result<std::vector<TokenId>, TokenizerError> Encode(std::string_view text,
                                                      std::stop_token stop = {}) const;
  Result<TokenCount, TokenizerError> Count(std::string_view text, std::stop_token stop = {}) const;
  // The pre-tokenization alone: calls `piece` with each piece the encoding's pattern splits
  // `text` into, in order (ill-formed UTF-8 replaced by U+FFFD first, as Encode does). Encode and
  // Count merge each piece as it comes; this shows the split by itself, for tests and
  // diagnostics. Succeeds on any text in time linear in its size: a long run of one character
  // class (10 MB of spaces) makes the pattern backtrack over the run once per alternative, and
  // PCRE2's match limit grows with the text for it (tokenizer.md).
  Status<TokenizerError> ForEachPiece(std::string_view text,
                                      const std::function<void(std::string_view)>& piece,
                                      std::stop_token stop = {}) const;
  // The bytes of the tokens (special tokens as their text); nullopt for an id that is neither.
  std::optional<std::string> Decode(std::span<const TokenId> ids) const;

 private:
  struct Compiled;  // the JIT-compiled pattern and the single-byte tokens
  BpeTokenizer(Encoding encoding, RankTable ranks, std::unique_ptr<Compiled> compiled);
  template <class Sink>
  Status<TokenizerError> Run(std::string_view text, std::stop_token stop, Sink& sink) const;
  template <class Sink>
  void MergePiece(std::string_view piece, Sink& sink) const;

  Encoding encoding_;
  RankTable ranks_;
  std::unique_ptr<Compiled> compiled_;
};

// Where the tokenizer data lives: $HARNESS_TOKENIZER_DIR, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/harness/tokenizers (what scripts/fetch-tokenizers fills).
std::filesystem::path TokenizerDirFromEnvironment();

}  // namespace harness
