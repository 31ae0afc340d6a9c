// LooksLikeSecret: the one rule for text that holds a credential. The extractive compactor
// leaves out whole any line, command, path or value it holds, and the coverage check
// (compaction/anchors.h) never makes an anchor of such text, so the check cannot demand what the
// compactor left out.
//
// Contract: LooksLikeSecret(text) is true when the text
//   - assigns a credential-like name: a name (letters, digits, _ - .) whose last part (after its
//     last -, _ or .) ends in key, token, secret, password, passwd, pwd, auth, cookie, session,
//     credential or authorization, or is credentials or secrets, or is id or sid after such a
//     part ("session_id"), followed by optional quotes and spaces, = or :, optional quotes and
//     spaces, and a value (not , or }); or such a name as a --flag followed by a value that is
//     not another flag ("--password hunter2");
//   - holds a known token prefix at the start of a word (sk-, sk_live_, sk_test_, rk_live_,
//     pk_live_, ghp_, gho_, ghu_, ghs_, ghr_, github_pat_, xoxb-, xoxp-, xoxa-, xoxr-, xapp-,
//     glpat-, hf_, npm_, any case; AKIA, ASIA, AIza, eyJ, this case) making, with the letters,
//     digits, _ and - after it, at least 16 bytes;
//   - holds a token of at least 32 bytes (letters, digits, _ - + .; a path's components and the
//     sides of an = judged one at a time) mixing upper case, lower case and digits;
//   - holds "bearer " followed by at least 8 token bytes, or "basic " by at least 16 (any case);
//   - holds a URL with a password (scheme://user:password@host);
//   - holds "-----begin", or "private key" with "-----" (a PEM marker; any case).
// Mentioning a secret ("never log the API key", "the password must be rotated") is not one.
// Dropping too much is the safe direction. Linear in the text; no allocation beyond one
// lower-cased copy. Proof: src/core/secrets_test.cc.
// Thread safety: a pure function.
#pragma once

#include <string_view>

namespace harness {

bool LooksLikeSecret(std::string_view text);

}  // namespace harness
