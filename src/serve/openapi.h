// The OpenAPI 3.1 document of `harness serve`'s API, served at GET /v1/openapi.json
// (docs/serve.md).
//
// Contract: OpenApiDocument() is one strict JSON document whose paths and methods are exactly
// the router's (serve/api.h Routes(), with the same {session}/{loop}/{command} placeholders),
// whose error schema names every ApiErrorKind, and whose every $ref resolves
// (openapi_test.cc proves each).
// Thread safety: a constant.
#pragma once

#include <string_view>

namespace harness::serve {

std::string_view OpenApiDocument();

}  // namespace harness::serve
