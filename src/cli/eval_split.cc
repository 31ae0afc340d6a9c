// The split file of an eval corpus (eval_split.h).
#include "eval_split.h"

#include <fmt/format.h>

#include <unordered_map>

namespace harness::cli {

namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t';
}

bool IsControl(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

// At most a few bytes of the input, for a detail: the caller shows it on one terminal line.
std::string Quoted(std::string_view text) {
  constexpr std::size_t kShown = 24;
  if (text.size() <= kShown)
    return std::string(text);
  std::size_t cut = kShown;  // not inside a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
    --cut;
  return std::string(text.substr(0, cut)) + "…";
}

Result<SplitEntry, std::string> ParseEntry(std::string_view line, const SplitLimits& limits) {
  std::size_t end = 0;
  while (end < line.size() && !IsBlank(line[end]))
    ++end;
  const std::string_view word = line.substr(0, end);
  SplitEntry entry;
  if (word == "test") {
    entry.split = Split::kTest;
  } else if (word == "dev") {
    entry.split = Split::kDev;
  } else {
    return Fail(fmt::format("expected `test NAME` or `dev NAME`, found `{}`", Quoted(word)));
  }
  std::size_t start = end;
  while (start < line.size() && IsBlank(line[start]))
    ++start;
  const std::string_view name = line.substr(start);
  if (name.empty())
    return Fail(fmt::format("`{}` without a transcript name", word));
  if (name.size() > limits.max_name_bytes)
    return Fail(fmt::format("a name longer than {} bytes", limits.max_name_bytes));
  for (const char c : name) {
    if (IsControl(c))
      return Fail(std::string("a name holds a control character"));
    if (c == '/')
      return Fail(std::string("a name holds `/`: it is a file name in the directory"));
  }
  if (name == "." || name == "..")
    return Fail(fmt::format("`{}` is not a transcript name", name));
  entry.name = std::string(name);
  return entry;
}

}  // namespace

std::string_view SplitName(Split split) {
  return split == Split::kTest ? "test" : "dev";
}

std::string SplitError::Describe() const {
  return line == 0 ? detail : fmt::format("line {}: {}", line, detail);
}

Result<std::vector<SplitEntry>, SplitError> ParseSplit(std::string_view text,
                                                       const SplitLimits& limits) {
  if (text.size() > limits.max_bytes)
    return Fail(SplitError{0, fmt::format("longer than {} bytes", limits.max_bytes)});
  std::vector<SplitEntry> entries;
  std::unordered_map<std::string_view, std::size_t> first_line;  // views into `text`
  std::size_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    ++number;
    std::size_t newline = text.find('\n', at);
    if (newline == std::string_view::npos)
      newline = text.size();
    std::string_view line = text.substr(at, newline - at);
    at = newline + 1;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    while (!line.empty() && IsBlank(line.back()))
      line.remove_suffix(1);
    std::size_t first = 0;
    while (first < line.size() && IsBlank(line[first]))
      ++first;
    line.remove_prefix(first);
    if (line.empty() || line.front() == '#')
      continue;
    auto entry = ParseEntry(line, limits);
    if (!entry.ok())
      return Fail(SplitError{number, std::move(entry).error()});
    const std::string_view name = line.substr(line.size() - entry->name.size());
    if (const auto seen = first_line.find(name); seen != first_line.end()) {
      return Fail(SplitError{number, fmt::format("`{}` is listed again (first on line {})",
                                                 Quoted(name), seen->second)});
    }
    if (entries.size() == limits.max_entries) {
      return Fail(SplitError{number, fmt::format("more than {} entries", limits.max_entries)});
    }
    first_line.emplace(name, number);
    entry->line = number;
    entries.push_back(std::move(entry).value());
  }
  return entries;
}

}  // namespace harness::cli
