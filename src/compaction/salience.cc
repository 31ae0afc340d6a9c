#include "compaction/salience.h"

#include <algorithm>
#include <array>

namespace harness {
namespace {

bool IsLower(char c) {
  return c >= 'a' && c <= 'z';
}
bool IsUpper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool IsTokenChar(char c) {
  return IsLower(c) || IsUpper(c) || IsDigit(c) || c == '_' || c == '.' || c == ':' || c == '/' ||
         c == '$' || c == '-';
}

bool LooksLikeDigest(std::string_view token) {
  std::size_t hex = 0;
  for (const char c : token) {
    if (IsHex(c))
      ++hex;
    else if (c != '-')
      return false;
  }
  return hex >= 7;
}

bool HasExtension(std::string_view segment) {
  const std::size_t dot = segment.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= segment.size())
    return false;
  const std::string_view extension = segment.substr(dot + 1);
  return extension.size() <= 5 && std::all_of(extension.begin(), extension.end(),
                                              [](char c) { return IsLower(c) || IsDigit(c); });
}

// A dotted token that names a file: its last part is a common file extension.
bool IsFileName(std::string_view token) {
  constexpr std::array<std::string_view, 36> kExtensions = {
      "py",  "js",  "ts",  "tsx", "jsx", "md",  "txt",  "json", "yaml", "yml",  "toml",  "cc",
      "cpp", "h",   "hpp", "c",   "go",  "rs",  "java", "rb",   "sh",   "html", "css",   "lock",
      "cfg", "ini", "xml", "sql", "log", "csv", "mjs",  "cjs",  "vue",  "kt",   "swift", "php"};
  const std::size_t dot = token.rfind('.');
  const std::string_view extension = token.substr(dot + 1);
  return std::find(kExtensions.begin(), kExtensions.end(), extension) != kExtensions.end();
}

// A dotted token with a part of one character.
bool HasShortPart(std::string_view token) {
  std::size_t part = 0;
  for (const char c : token) {
    if (c == '.') {
      if (part < 2)
        return true;
      part = 0;
    } else {
      ++part;
    }
  }
  return part < 2;
}

std::string_view Stripped(std::string_view token) {
  constexpr std::string_view kEdge = ".,:;-$";
  while (!token.empty() && kEdge.find(token.back()) != std::string_view::npos)
    token.remove_suffix(1);
  while (!token.empty() && (token.front() == '.' || token.front() == '-' || token.front() == ':'))
    token.remove_prefix(1);
  if (token.starts_with('$'))  // $HOME_DIR and ${X}: the variable is the name
    token.remove_prefix(1);
  return token;
}

// Product names spelled in camel case: a run mentions them without naming anything.
bool IsWellKnownWord(std::string_view token) {
  constexpr std::array<std::string_view, 20> kWords = {
      "GitHub",     "GitLab",    "JavaScript", "TypeScript", "PostgreSQL", "MySQL",  "MongoDB",
      "YouTube",    "LinkedIn",  "iPhone",     "macOS",      "iOS",        "OpenAI", "ChatGPT",
      "PowerShell", "WordPress", "DevOps",     "NodeJS",     "VSCode",     "OAuth"};
  return std::find(kWords.begin(), kWords.end(), token) != kWords.end();
}

}  // namespace

bool IsNameShaped(std::string_view token) {
  if (token.size() < 3 || token.size() > 64 || LooksLikeDigest(token))
    return false;
  if (token.find("//") != std::string_view::npos || token.find('$') != std::string_view::npos)
    return false;  // a URL, or a shell expansion inside a token
  if (token.starts_with('/')) {
    // An endpoint: /api/v1/users. A file path has an extension or is a machine's directory.
    std::size_t segments = 0;
    std::string_view last;
    std::size_t at = 1;
    while (at <= token.size()) {
      std::size_t end = token.find('/', at);
      if (end == std::string_view::npos)
        end = token.size();
      const std::string_view segment = token.substr(at, end - at);
      if (segment.empty())
        return false;
      last = segment;
      ++segments;
      at = end + 1;
    }
    constexpr std::array<std::string_view, 12> kRoots = {
        "/home/", "/usr/", "/tmp/", "/etc/",   "/var/", "/dev/",
        "/proc/", "/bin/", "/opt/", "/Users/", "/lib/", "/workspace/"};
    for (const std::string_view root : kRoots) {
      if (token.starts_with(root))
        return false;
    }
    return segments >= 2 && !HasExtension(last) &&
           std::none_of(token.begin(), token.end(), [](char c) { return c == '.' || c == ':'; });
  }
  if (token.find('/') != std::string_view::npos)
    return false;  // a relative path: the file ledger's
  if (!IsLower(token.front()) && !IsUpper(token.front()) && token.front() != '_')
    return false;
  bool underscore = false, inner_upper = false, lower = false, dotted = false,
       qualified = token.find("::") != std::string_view::npos;
  for (std::size_t i = 0; i < token.size(); ++i) {
    const char c = token[i];
    underscore = underscore || c == '_';
    lower = lower || IsLower(c);
    // camelCase, and PascalCase after an acronym ("HTTPServer").
    if (IsUpper(c) && i > 0 &&
        (IsLower(token[i - 1]) ||
         (IsUpper(token[i - 1]) && i + 1 < token.size() && IsLower(token[i + 1]))))
      inner_upper = true;
    if (c == '.' && i > 0 && i + 1 < token.size() && !IsDigit(token[i + 1]))
      dotted = true;
  }
  if (token.find('-') != std::string_view::npos && !underscore && !dotted && !qualified)
    return false;  // hyphenated words and flags
  if (dotted && (IsFileName(token) || HasShortPart(token)))
    return false;  // a file name, or an abbreviation ("e.g")
  if (!lower)      // UPPER_CASE: a constant or an environment variable
    return underscore && token.size() >= 4;
  return underscore || inner_upper || dotted || qualified;
}

void SalienceLedger::Observe(std::string_view text, std::size_t weight) {
  ++messages_;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && !IsTokenChar(text[at]))
      ++at;
    const std::size_t start = at;
    while (at < text.size() && IsTokenChar(text[at]))
      ++at;
    std::string_view token = Stripped(text.substr(start, at - start));
    // Inside JSON text: "\nCreate" is a line break then a word, and a member's name
    // ("file_path": …) is the tool's vocabulary, not the run's.
    if (start > 0 && text[start - 1] == '\\' && !token.empty() &&
        (token.front() == 'n' || token.front() == 't' || token.front() == 'r'))
      token.remove_prefix(1);
    if (at + 1 < text.size() && text[at] == '"' && text[at + 1] == ':')
      continue;
    if (!IsNameShaped(token) || IsWellKnownWord(token))
      continue;
    auto found = names_.find(token);
    if (found == names_.end()) {
      if (names_.size() >= kMaxTrackedNames)
        continue;
      found = names_.emplace(std::string(token), Entry{0, names_.size(), 0}).first;
    }
    Entry& entry = found->second;
    if (entry.seen_in == messages_)
      continue;  // once a message
    entry.seen_in = messages_;
    entry.score += weight;
  }
}

std::vector<std::string> SalienceLedger::Top(std::size_t n) const {
  std::vector<std::pair<const std::string*, const Entry*>> ranked;
  for (const auto& [name, entry] : names_) {
    if (entry.score >= kSalientScore)
      ranked.emplace_back(&name, &entry);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second->score != b.second->score)
      return a.second->score > b.second->score;
    return a.second->first < b.second->first;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && i < n; ++i)
    out.push_back(*ranked[i].first);
  return out;
}

}  // namespace harness
