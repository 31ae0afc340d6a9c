// What the extractive compactor never writes: text that looks like a credential
// (compaction/extractive.h, "Secrets").
//
// Contract:
// - LooksSecret(text) is true when the text assigns a credential-like name (a word whose last
//   part is key, token, secret, password, passwd, pwd, auth, cookie, session, credential(s) or
//   authorization, or such a name's id, followed by '=' or ':' and a value, or a "--token
//   VALUE"-style flag), holds a well-known token shape ("sk-…", "ghp_…", "gho_…",
//   "github_pat_…", "glpat-…", "xoxb-…", "xoxp-…", "AKIA…", "AIza…", "Bearer …", "Basic …"), a
//   password in a URL ("https://user:pass@host"), or a PEM private key marker. Mentioning a
//   secret ("never log the API key") is not one. Callers leave the whole line, command, path or
//   value out: dropping too much is the safe direction.
// - PemBlock, fed every line in order, covers the lines of a "-----BEGIN … -----END" block,
//   the markers included.
// - SafeLines(raw) gives the clean (extractive_text.h Clean), non-blank lines of raw that are
//   neither secret nor in a PEM block; SafeName(name) is a tool's clean name, or "tool".
// Linear in the input. Thread safety: pure functions; a PemBlock is a value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {

bool LooksSecret(std::string_view text);

// Which lines lie in a "-----BEGIN … -----END" block, the marker lines included: fed every line
// in order.
class PemBlock {
 public:
  bool Covers(std::string_view line) {
    if (line.find("-----BEGIN") != std::string_view::npos)
      inside_ = true;
    const bool covered = inside_;
    if (line.find("-----END") != std::string_view::npos)
      inside_ = false;
    return covered;
  }

 private:
  bool inside_ = false;
};

std::string SafeName(std::string_view name);

std::vector<std::string> SafeLines(std::string_view raw);

}  // namespace harness::extractive_detail
