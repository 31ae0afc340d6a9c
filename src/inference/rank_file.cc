// The `.tiktoken` rank file parser and the table it fills (tokenizer.h).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "content/base64.h"
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
  arena_.reserve(arena_bytes);
}

std::optional<TokenId> RankTable::Find(std::string_view bytes) const {
  if (slots_.empty() || bytes.size() > max_token_bytes_)
    return std::nullopt;
  const std::uint64_t hash = inference_internal::HashBytes(bytes.data(), bytes.size());
  const auto tag = static_cast<std::uint32_t>(hash >> 32);
  for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
    const Slot slot = slots_[i];
    if (slot.id1 == 0)
      return std::nullopt;
    if (slot.tag == tag) {
      const TokenId id = slot.id1 - 1;
      const std::uint32_t begin = offsets_[id];
      const std::uint32_t length = offsets_[id + 1] - begin;
      if (length == bytes.size() && std::memcmp(arena_.data() + begin, bytes.data(), length) == 0)
        return id;
    }
  }
}

bool RankTable::Insert(std::string_view bytes, TokenId id) {
  // Reserve sized the slots for every line, so the table never fills.
  if (Find(bytes))
    return false;
  if (offsets_.empty())
    offsets_.push_back(0);
  arena_.append(bytes);
  max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
  offsets_.push_back(static_cast<std::uint32_t>(arena_.size()));
  const std::uint64_t hash = inference_internal::HashBytes(bytes.data(), bytes.size());
  std::size_t i = hash & mask_;
  while (slots_[i].id1 != 0)
    i = (i + 1) & mask_;
  slots_[i] = Slot{static_cast<std::uint32_t>(hash >> 32), id + 1};
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
    const std::optional<std::string> bytes = content_internal::Base64Decode(row.substr(0, space));
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
