// TokenCount: a number of tokens (a count, a limit, a budget), as every module measures them.
// Thread safety: a plain value.
#pragma once

#include <cstdint>

namespace harness {

using TokenCount = std::uint64_t;

}  // namespace harness
