// Standard base64 (RFC 4648 §4, with padding): the binary payloads of the content codec and the
// provider wires, the token ranks of tiktoken files.
//
// Contract:
// - Base64Encode writes the canonical encoding: alphabet A–Z a–z 0–9 + /, '=' padding to a
//   multiple of four characters, no line breaks. The empty input encodes as "".
// - Base64Decode accepts exactly the canonical encodings and nothing else: the length is a
//   multiple of four; only alphabet characters, then at most two '=' at the very end; no white
//   space; the bits a padded final group does not use are zero (so every byte string has exactly
//   one accepted encoding). Anything else yields std::nullopt.
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace harness {

std::string Base64Encode(std::string_view bytes);
void AppendBase64(std::string& out, std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace harness
