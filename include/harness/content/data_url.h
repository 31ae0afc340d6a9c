// Binary content as a `data:` URL, the form the OpenAI wires and several agents' logs carry
// images and files in.
//
// Contract:
// - DataUrl writes "data:<media type>;base64,<bytes in canonical standard base64>".
// - ImageFromUrl reads a URL as an image block: a "data:<media type>;base64,<base64>" URL whose
//   base64 is canonical (core/base64.h) becomes an image of those bytes and that media type; any
//   other URL (http, a file id, a data URL of another form) is kept whole as the image's url.
//   ImageFromUrl(DataUrl(t, b)) is an image of bytes b and media type t.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "harness/content/message.h"

namespace harness {

std::string DataUrl(std::string_view media_type, std::string_view bytes);
ImageBlock ImageFromUrl(std::string_view url);

}  // namespace harness
