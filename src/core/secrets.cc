#include "harness/core/secrets.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

namespace harness {
namespace {

char LowerAscii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_';
}
bool IsNameChar(char c) {
  return IsWordChar(c) || c == '-' || c == '.';
}
bool IsTokenByte(char c) {
  return IsWordChar(c) || c == '-' || c == '+' || c == '/' || c == '=' || c == '.';
}
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// A name whose last part names a credential: "api_key", "x-auth-token", "apikey", "password",
// "session_id". The last part decides ("session-share" names a plugin, "keyboard" a device,
// "tokens" a count), so that a command or a path that merely begins with such a word is not
// taken for a secret.
bool IsCredentialName(std::string_view word) {
  constexpr std::array<std::string_view, 11> kParts = {
      "key",  "token",  "secret",  "password",   "passwd",       "pwd",
      "auth", "cookie", "session", "credential", "authorization"};
  const auto ends_with_part = [&](std::string_view text) {
    return std::any_of(kParts.begin(), kParts.end(),
                       [text](std::string_view part) { return text.ends_with(part); });
  };
  while (!word.empty() && word.front() == '-')
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

// A credential-like name followed by '=' or ':' and a value, or a "--credential-flag value".
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

// `prefix` at the start of a word of `text`, making with the word and '-' bytes after it at
// least `min_bytes`.
bool HasPrefixedToken(std::string_view text, std::string_view prefix, std::size_t min_bytes) {
  for (std::size_t at = text.find(prefix); at != std::string_view::npos;
       at = text.find(prefix, at + 1)) {
    if (at > 0 && IsWordChar(text[at - 1]))
      continue;
    std::size_t end = at + prefix.size();
    while (end < text.size() && (IsWordChar(text[end]) || text[end] == '-'))
      ++end;
    if (end - at >= min_bytes)
      return true;
  }
  return false;
}

bool HasKeyPrefix(std::string_view text, std::string_view lower) {
  constexpr std::string_view kAnyCase[] = {
      "sk-",   "sk_live_", "sk_test_", "rk_live_",    "pk_live_", "ghp_",  "gho_",
      "ghu_",  "ghs_",     "ghr_",     "github_pat_", "xoxb-",    "xoxp-", "xoxa-",
      "xoxr-", "xapp-",    "glpat-",   "hf_",         "npm_",
  };
  constexpr std::string_view kThisCase[] = {"AKIA", "ASIA", "AIza", "eyJ"};
  return std::any_of(std::begin(kAnyCase), std::end(kAnyCase),
                     [lower](std::string_view p) { return HasPrefixedToken(lower, p, 16); }) ||
         std::any_of(std::begin(kThisCase), std::end(kThisCase),
                     [text](std::string_view p) { return HasPrefixedToken(text, p, 16); });
}

// A token of 32 bytes or more mixing upper case, lower case and digits. A path's components, and
// the sides of an =, are judged one by one: a long path is not a key, nor is a kernel command
// line's "root=UUID=dccb368a-ae08-48db-9563-9415e327bb90".
bool HasMixedLongToken(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !IsTokenByte(text[i]))
      ++i;
    std::size_t start = i;
    bool upper = false, lower = false, digit = false;
    for (; i <= text.size(); ++i) {
      const bool separator = i < text.size() && (text[i] == '/' || text[i] == '=');
      const bool in_token = i < text.size() && IsTokenByte(text[i]) && !separator;
      if (in_token) {
        upper |= text[i] >= 'A' && text[i] <= 'Z';
        lower |= text[i] >= 'a' && text[i] <= 'z';
        digit |= IsDigit(text[i]);
        continue;
      }
      if (i - start >= 32 && upper && lower && digit)
        return true;
      if (!separator)
        break;
      start = i + 1;  // the next component
      upper = lower = digit = false;
    }
  }
  return false;
}

// "bearer " (or "basic ") and a value of at least `min_bytes` token bytes.
bool HasSchemeValue(std::string_view lower, std::string_view scheme, std::size_t min_bytes) {
  for (std::size_t at = lower.find(scheme); at != std::string_view::npos;
       at = lower.find(scheme, at + 1)) {
    std::size_t end = at + scheme.size();
    while (end < lower.size() && IsTokenByte(lower[end]))
      ++end;
    if (end - at - scheme.size() >= min_bytes)
      return true;
  }
  return false;
}

// "scheme://user:password@host".
bool HasUrlPassword(std::string_view lower) {
  for (std::size_t at = lower.find("://"); at != std::string_view::npos;
       at = lower.find("://", at + 3)) {
    const std::size_t start = at + 3;
    std::size_t end = start;
    while (end < lower.size() && lower[end] != '/' && !IsSpace(lower[end]))
      ++end;
    const std::string_view authority = lower.substr(start, end - start);
    const std::size_t arobase = authority.rfind('@');
    if (arobase != std::string_view::npos &&
        authority.substr(0, arobase).find(':') != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool LooksLikeSecret(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), LowerAscii);
  if (lower.find("-----begin") != std::string::npos ||
      (lower.find("private key") != std::string::npos && lower.find("-----") != std::string::npos))
    return true;
  return AssignsCredential(lower) || HasUrlPassword(lower) || HasKeyPrefix(text, lower) ||
         HasMixedLongToken(text) || HasSchemeValue(lower, "bearer ", 8) ||
         HasSchemeValue(lower, "basic ", 16);
}

}  // namespace harness
