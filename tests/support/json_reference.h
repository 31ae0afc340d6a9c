// The strict JSON reader as it was built on nlohmann's SAX parser, kept as the reference the
// purpose-built parser (ParseStrictJson, src/core/json.cc) is checked against: a differential
// test over every corpus (core_test.cc), a differential fuzz target (fuzz/json_fuzz.cc), and
// the side-by-side benchmark (bench/restore_bench.cc --profile-fold). Not used by the runtime.
//
// Same contract as ParseStrictJson (harness/core/json.h) except for error offsets: nlohmann
// reports the position after it gave up, and depth errors carry offset 0.
#pragma once

#include <optional>
#include <string_view>

#include "core/internal/json_dom.h"

namespace harness::json_reference {

Result<Json, JsonError> ParseStrictJsonWithNlohmann(std::string_view text,
                                                    const JsonLimits& limits = {});

// The one difference between the readers: nlohmann stops reading at a NUL byte where a token
// may begin, so the reference accepts a value followed by a NUL and anything at all, which
// ParseStrictJson refuses as data after the value (`ours`). True for exactly that refusal.
bool StoppedAtNul(std::string_view input, const JsonError& ours);

}  // namespace harness::json_reference
