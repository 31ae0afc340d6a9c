// The glue between libmicrohttpd and RequestGuard (request_guard.h): the head of a request as
// the guard reads it, and the percent-decoding libmicrohttpd applies to the path and the query.
// Thread safety: each function touches only the connection it is given.
#pragma once

#include <cstddef>

#include "serve/request_guard.h"

struct MHD_Connection;

namespace harness::serve {

// The head of the request on `connection`, from the access handler's first call (`url`,
// `method`, `version` as it was given them): its headers, and the buffer libmicrohttpd parsed
// them in with every string it made of it, for the guard to find the bytes a NUL hid
// (HiddenBytes). When the layout is not libmicrohttpd 0.9.75's (the path or the version outside
// the head), `raw` stays empty and nothing is judged by it.
RequestHead ReadHead(MHD_Connection* connection, const char* url, const char* method,
                     const char* version);

// libmicrohttpd's unescape callback (MHD_OPTION_UNESCAPE_CALLBACK), for the path and the query
// parameters: DecodePercent, which keeps %00 and %2F as they are, so that neither cuts or splits
// a path; the bytes decoding freed are zeroed, as libmicrohttpd zeroes the separators.
std::size_t UnescapeRequestText(void* cls, MHD_Connection* connection, char* text);

}  // namespace harness::serve
