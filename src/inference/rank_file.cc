// The `.tiktoken` rank file parser and the table it fills (tokenizer.h).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "harness/core/base64.h"
#include "harness/inference/tokenizer.h"
#include "inference/bytes_hash.h"

namespace harness {
namespace {

constexpr std::size_t kMaxRankDigits = 10;  // 4294967295

// Canonical decimal of at most 32 bits: digits only, no leading zero except "0".
std::optional<std::uint32_t> ParseRank(std::string_view text) {
  if (text.empty() || text.size() > kMaxRankDigits || (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  // The largest id is reserved: the merge uses it as "no rank".
  if (value >= UINT32_MAX)
    return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

// Tokens of one and two bytes have their own table: 2-byte strings at b0 * 256 + b1, single
// bytes after them.
constexpr std::size_t kShortIds = 65536 + 256;
constexpr TokenId kNoShortId = UINT32_MAX;

std::size_t ShortIndex(std::string_view bytes) {
  const auto b0 = static_cast<unsigned char>(bytes[0]);
  return bytes.size() == 1 ? 65536 + b0
                           : b0 * std::size_t{256} + static_cast<unsigned char>(bytes[1]);
}

// The first 8 bytes, zero-padded, as one word.
std::uint64_t Prefix(std::string_view bytes) {
  std::uint64_t prefix = 0;
  if (!bytes.empty())
    std::memcpy(&prefix, bytes.data(), std::min<std::size_t>(bytes.size(), 8));
  return prefix;
}

Failure<RankFileError> LineError(RankFileErrorKind kind, std::size_t line) {
  return Fail(RankFileError{kind, line, -1});
}

}  // namespace

std::string_view RankFileErrorKindName(RankFileErrorKind kind) {
  switch (kind) {
    case RankFileErrorKind::kEmpty:
      return "empty";
    case RankFileErrorKind::kLineShape:
      return "line_shape";
    case RankFileErrorKind::kBadBase64:
      return "bad_base64";
    case RankFileErrorKind::kBadRank:
      return "bad_rank";
    case RankFileErrorKind::kDuplicateToken:
      return "duplicate_token";
    case RankFileErrorKind::kDuplicateRank:
      return "duplicate_rank";
    case RankFileErrorKind::kRankGap:
      return "rank_gap";
    case RankFileErrorKind::kMissingByte:
      return "missing_byte";
    case RankFileErrorKind::kTooLarge:
      return "too_large";
  }
  return "";
}

std::string RankFileError::Message() const {
  std::string out("rank file");
  if (line != 0)
    out.append(fmt::format(" line {}", line));
  out.append(": ");
  out.append(RankFileErrorKindName(kind));
  if (kind == RankFileErrorKind::kMissingByte && byte >= 0)
    out.append(fmt::format(" 0x{:02x}", byte));
  return out;
}

void RankTable::Reserve(std::size_t tokens, std::size_t arena_bytes) {
  // A load factor of at most 1/2 keeps linear probes short.
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(16, tokens * 2));
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  offsets_.reserve(tokens + 1);
  short_ids_.assign(kShortIds, kNoShortId);
  arena_.reserve(arena_bytes);
}

std::optional<TokenId> RankTable::Find(std::string_view bytes) const {
  if (slots_.empty() || bytes.size() > max_token_bytes_)
    return std::nullopt;
  if (bytes.size() <= 2 && !bytes.empty()) {
    const TokenId id = short_ids_[ShortIndex(bytes)];
    return id == kNoShortId ? std::nullopt : std::optional<TokenId>(id);
  }
  const std::uint64_t prefix = Prefix(bytes);
  const auto length = static_cast<std::uint32_t>(bytes.size());
  for (std::size_t i = inference_internal::HashBytes(bytes.data(), bytes.size()) & mask_;;
       i = (i + 1) & mask_) {
    const Slot& slot = slots_[i];
    if (slot.id1 == 0)
      return std::nullopt;
    if (slot.length == length && slot.prefix == prefix &&
        (length <= 8 || std::memcmp(arena_.data() + offsets_[slot.id1 - 1] + 8, bytes.data() + 8,
                                    length - 8) == 0)) {
      return slot.id1 - 1;
    }
  }
}

bool RankTable::Insert(std::string_view bytes, TokenId id) {
  // Reserve sized the slots for every line, so the table never fills.
  if (offsets_.empty())
    offsets_.push_back(0);
  max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
  if (Find(bytes))
    return false;
  arena_.append(bytes);
  offsets_.push_back(static_cast<std::uint32_t>(arena_.size()));
  std::size_t i = inference_internal::HashBytes(bytes.data(), bytes.size()) & mask_;
  while (slots_[i].id1 != 0)
    i = (i + 1) & mask_;
  slots_[i] = Slot{Prefix(bytes), id + 1, static_cast<std::uint32_t>(bytes.size())};
  if (bytes.size() <= 2)
    short_ids_[ShortIndex(bytes)] = id;
  return true;
}

Result<RankTable, RankFileError> ParseRankFile(std::string_view text) {
  if (text.size() > kMaxRankFileBytes)
    return Fail(RankFileError{RankFileErrorKind::kTooLarge, 0, -1});
  if (text.empty())
    return Fail(RankFileError{RankFileErrorKind::kEmpty, 0, -1});
  RankTable table;
  // Each line holds at most one token and its base64 decodes to 3/4 of its length.
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  table.Reserve(lines, text.size() / 4 * 3 + 3);
  std::size_t pos = 0;
  std::size_t line = 0;
  while (pos < text.size()) {
    ++line;
    const std::size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos)
      return LineError(RankFileErrorKind::kLineShape, line);
    const std::string_view row = text.substr(pos, newline - pos);
    pos = newline + 1;
    const std::size_t space = row.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == row.size() ||
        row.find(' ', space + 1) != std::string_view::npos ||
        row.find('\r') != std::string_view::npos) {
      return LineError(RankFileErrorKind::kLineShape, line);
    }
    const std::optional<std::string> bytes = Base64Decode(row.substr(0, space));
    if (!bytes || bytes->empty())
      return LineError(RankFileErrorKind::kBadBase64, line);
    const std::optional<std::uint32_t> rank = ParseRank(row.substr(space + 1));
    if (!rank)
      return LineError(RankFileErrorKind::kBadRank, line);
    const std::size_t expected = line - 1;
    if (*rank < expected)
      return LineError(RankFileErrorKind::kDuplicateRank, line);
    if (*rank > expected)
      return LineError(RankFileErrorKind::kRankGap, line);
    if (!table.Insert(*bytes, *rank))
      return LineError(RankFileErrorKind::kDuplicateToken, line);
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    if (!table.Find(std::string_view(&c, 1)))
      return Fail(RankFileError{RankFileErrorKind::kMissingByte, 0, b});
  }
  return table;
}

}  // namespace harness
