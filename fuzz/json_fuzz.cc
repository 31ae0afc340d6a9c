// libFuzzer target for the strict JSON reader (core/json.h), differential: ParseStrictJson
// against the nlohmann-based reader it replaced (core/json_reference.h).
//
// Invariants: neither crashes, throws or recurses without bound. Both accept or both refuse,
// under the default limits and under a depth limit of 4. When both accept, the documents are
// the same (types included, via the serialization and the type of every value); when both
// refuse, with the same kind at the same path, and the new reader's offset lies within the
// input. One difference is expected: the reference stops at a NUL byte after a value. A document
// the new reader accepts re-reads from its own serialization to itself.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/json_reference.h"
#include "harness/core/json.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "json_fuzz: %s\n", what);
  std::abort();
}

bool SameTypes(const harness::Json& a, const harness::Json& b) {
  if (a.type() != b.type() || a.size() != b.size())
    return false;
  if (a.is_object()) {
    auto ib = b.items().begin();
    for (auto ia = a.items().begin(); ia != a.items().end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !SameTypes(ia.value(), ib.value()))
        return false;
    }
  } else if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!SameTypes(a[i], b[i]))
        return false;
    }
  }
  return true;
}

void Check(std::string_view input, const harness::JsonLimits& limits) {
  const auto ours = harness::ParseStrictJson(input, limits);
  const auto theirs = harness::json_reference::ParseStrictJsonWithNlohmann(input, limits);
  if (!ours.ok() && theirs.ok() && harness::json_reference::StoppedAtNul(input, ours.error()))
    return;
  if (ours.ok() != theirs.ok())
    Violation(ours.ok() ? "only the reference refuses" : "only the new reader refuses");
  if (!ours.ok()) {
    if (ours.error().kind != theirs.error().kind)
      Violation("different error kinds");
    if (ours.error().path != theirs.error().path)
      Violation("different error paths");
    if (ours.error().offset > input.size() &&
        ours.error().kind != harness::JsonErrorKind::kTooLarge)
      Violation("offset beyond the input");
    return;
  }
  // Depth is bounded by the limit, so this recursion is too.
  if (ours->dump() != theirs->dump() || !SameTypes(*ours, *theirs))
    Violation("different documents");
  const auto again = harness::ParseStrictJson(ours->dump(), limits);
  if (!again.ok() || again->dump() != ours->dump())
    Violation("the serialization does not re-read to the same document");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input, harness::JsonLimits{});
  harness::JsonLimits shallow;
  shallow.max_depth = 4;
  Check(input, shallow);
  return 0;
}
