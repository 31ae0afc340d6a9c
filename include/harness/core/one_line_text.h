// OneLineText(text, max_bytes): text a server or an application controls (a provider's error
// message, a compactor's failure) made fit for one line of a message that is shown to a person
// and journaled: ill-formed bytes become U+FFFD, each control character (C0, DEL, C1: line
// breaks and tabs too) a space, leading and trailing white space is dropped, and the result is
// cut on a character boundary at no more than max_bytes bytes. `cut` is set when the cut
// dropped something. The result holds no control character and is well-formed UTF-8.
// Proof: src/core/utf8_test.cc (OneLineText.*).
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace harness {

std::string OneLineText(std::string_view text, std::size_t max_bytes, bool* cut = nullptr);

}  // namespace harness
