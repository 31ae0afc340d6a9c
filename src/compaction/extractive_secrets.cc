#include "compaction/extractive_secrets.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

// A name whose last part names a credential: "api_key", "x-auth-token", "apikey", "password",
// "session_id". The last part decides ("session-share" names a plugin, "keyboard" a device), so
// that a command or a path that merely begins with such a word is not taken for a secret.
bool IsCredentialName(std::string_view word) {
  constexpr std::array<std::string_view, 11> kParts = {
      "key",  "token",  "secret",  "password",   "passwd",       "pwd",
      "auth", "cookie", "session", "credential", "authorization"};
  const auto ends_with_part = [&](std::string_view text) {
    return std::any_of(kParts.begin(), kParts.end(),
                       [text](std::string_view part) { return text.ends_with(part); });
  };
  while (!word.empty() && (word.front() == '-'))
    word.remove_prefix(1);  // "--token"
  const std::size_t cut = word.find_last_of("-_.");
  const std::string_view last = cut == std::string_view::npos ? word : word.substr(cut + 1);
  if (ends_with_part(last) || last == "credentials" || last == "secrets")
    return true;
  // "session_id", "auth-id": an id of a session or a login is one too.
  if ((last == "id" || last == "sid") && cut != std::string_view::npos)
    return ends_with_part(word.substr(0, cut));
  return false;
}

bool IsNameChar(char c) {
  return IsWordChar(c) || c == '-' || c == '.';
}

// A credential-like word followed by '=' or ':' and a value, or a "--credential-flag value".
bool AssignsCredential(std::string_view lower) {
  std::size_t i = 0;
  while (i < lower.size()) {
    if (!IsNameChar(lower[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < lower.size() && IsNameChar(lower[i]))
      ++i;
    const std::string_view word = lower.substr(start, i - start);
    if (!IsCredentialName(word))
      continue;
    std::size_t j = i;
    while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
      ++j;
    if (j < lower.size() && (lower[j] == '=' || lower[j] == ':')) {
      ++j;
      while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
        ++j;
      if (j < lower.size() && lower[j] != ',' && lower[j] != '}')
        return true;
    } else if (word.starts_with("--") && j > i && j < lower.size() && lower[j] != '-') {
      return true;  // "--password hunter2"
    }
  }
  return false;
}

// `prefix` followed by at least `min_tail` token characters.
bool HasTokenShape(std::string_view lower, std::string_view prefix, std::size_t min_tail) {
  for (std::size_t at = lower.find(prefix); at != std::string_view::npos;
       at = lower.find(prefix, at + 1)) {
    if (at > 0 && IsWordChar(lower[at - 1]))
      continue;
    std::size_t tail = 0;
    for (std::size_t k = at + prefix.size();
         k < lower.size() && (IsWordChar(lower[k]) || lower[k] == '-'); ++k) {
      ++tail;
    }
    if (tail >= min_tail)
      return true;
  }
  return false;
}

// "scheme://user:password@host".
bool HasUrlPassword(std::string_view lower) {
  for (std::size_t at = lower.find("://"); at != std::string_view::npos;
       at = lower.find("://", at + 1)) {
    const std::size_t start = at + 3;
    std::size_t end = start;
    while (end < lower.size() && lower[end] != '/' && lower[end] != ' ' && lower[end] != '@')
      ++end;
    if (end < lower.size() && lower[end] == '@' &&
        lower.substr(start, end - start).find(':') != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool LooksSecret(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower.find("private key") != std::string::npos && lower.find("-----") != std::string::npos)
    return true;
  return AssignsCredential(lower) || HasUrlPassword(lower) || HasTokenShape(lower, "sk-", 16) ||
         HasTokenShape(lower, "ghp_", 16) || HasTokenShape(lower, "gho_", 16) ||
         HasTokenShape(lower, "github_pat_", 16) || HasTokenShape(lower, "xoxb-", 16) ||
         HasTokenShape(lower, "xoxp-", 16) || HasTokenShape(lower, "akia", 16) ||
         HasTokenShape(lower, "aiza", 30) || HasTokenShape(lower, "glpat-", 16) ||
         HasTokenShape(lower, "bearer ", 16) || HasTokenShape(lower, "basic ", 16);
}

// A tool's name as the summary shows it.
std::string SafeName(std::string_view name) {
  std::string clean = LooksSecret(name) ? std::string() : Clean(name);
  return clean.empty() ? std::string("tool") : clean;
}

// The clean, non-blank lines of `raw` that do not look secret.
std::vector<std::string> SafeLines(std::string_view raw) {
  std::vector<std::string> lines;
  PemBlock pem;
  for (const std::string_view line : RawLines(raw)) {
    if (pem.Covers(line) || LooksSecret(line))
      continue;
    std::string clean = Clean(line);
    if (!clean.empty())
      lines.push_back(std::move(clean));
  }
  return lines;
}

}  // namespace harness::extractive_detail
