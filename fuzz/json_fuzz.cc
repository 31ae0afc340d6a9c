// libFuzzer target for the strict JSON reader (core/json.h), differential: ParseStrictJson
// against the nlohmann-based reader it replaced (support/json_reference.h).
//
// Invariants: neither crashes, throws or recurses without bound. Both accept or both refuse,
// under the default limits and under a depth limit of 4. When both accept, the documents are
// the same (types included, via the serialization and the type of every value); when both
// refuse, with the same kind at the same path, and the new reader's offset lies within the
// input. One difference is expected: the reference stops at a NUL byte after a value. A document
// the new reader accepts re-reads from its own serialization to itself. ParseStrictJsonArray
// agrees with ParseStrictJson (verdict, error, elements; CheckArray).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/internal/json_dom.h"
#include "support/json_reference.h"

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

// ParseStrictJsonArray reads what ParseStrictJson reads: the same verdict and error (kind, path,
// offset); on success, the elements it hands over, in order, are the root array's, each with
// the exact text that parses to it; a root that is not an array comes back whole.
void CheckArray(std::string_view input, const harness::JsonLimits& limits) {
  const auto whole = harness::ParseStrictJson(input, limits);
  std::size_t count = 0;
  bool in_order = true;
  const auto element = [&](std::size_t index, harness::Json& value, std::string_view text) {
    in_order = in_order && index == count;
    const auto alone = harness::ParseStrictJson(text, limits);
    if (!alone.ok() || alone->dump() != value.dump())
      Violation("an element's text does not parse to the element");
    if (whole.ok() &&
        (!whole->is_array() || count >= whole->size() || (*whole)[count].dump() != value.dump()))
      Violation("an element differs from the document's");
    ++count;
    return true;
  };
  const auto streamed = harness::ParseStrictJsonArray(input, limits, element);
  if (!in_order)
    Violation("elements out of order");
  if (streamed.ok() != whole.ok())
    Violation(streamed.ok() ? "only the array reader accepts" : "only the array reader refuses");
  if (!whole.ok()) {
    const auto& a = streamed.error();
    const auto& b = whole.error();
    if (a.kind != b.kind || a.path != b.path || a.offset != b.offset || a.detail != b.detail)
      Violation("the array reader's error differs");
    return;
  }
  if (streamed->stopped || streamed->elements != count)
    Violation("the array reader miscounts");
  if (whole->is_array() ? (streamed->root || count != whole->size())
                        : (!streamed->root || streamed->root->dump() != whole->dump()))
    Violation("the array reader's root differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input, harness::JsonLimits{});
  harness::JsonLimits shallow;
  shallow.max_depth = 4;
  Check(input, shallow);
  CheckArray(input, harness::JsonLimits{});
  CheckArray(input, shallow);
  return 0;
}
