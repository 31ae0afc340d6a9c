// Strict JSON as text: the errors every harness wire reports, its limits, and the writing of JSON
// string literals (docs/spec/decisions.md D2). The reader itself, and the document it builds, are
// internal to the modules (src/core/internal/json_dom.h): no public header names a JSON library's
// type, so the API is text and harness's own values.
//
// Every failure of the strict reader is a JsonError with a kind, the path of the value
// ("$.a[2].b"), the byte offset where known, and a short detail that never echoes more than a few
// bytes of the input.
//
// AppendJsonString writes a JSON string literal: '"' and '\\' escaped, control characters as
// \n \r \t or \u00XX, every other character verbatim, and invalid UTF-8 replaced by U+FFFD.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace harness {

enum class JsonErrorKind {
  kTooLarge,         // input longer than the byte limit
  kTooDeep,          // nesting beyond the depth limit
  kSyntax,           // not one well-formed JSON value in UTF-8
  kDuplicateMember,  // an object names a member twice
  kUnknownMember,    // a member the wire does not define
  kMissingMember,    // a required member is absent
  kType,             // a value of the wrong JSON type (null included)
  kRange,            // a number outside the field's range, or a malformed string value
};

std::string_view JsonErrorKindName(JsonErrorKind kind);

struct JsonError {
  JsonErrorKind kind;
  std::string path;        // "$" for the root, "$.a[2].b" below it
  std::size_t offset = 0;  // byte offset for syntax, size and depth errors; 0 otherwise
  std::string detail;      // short, bounded; never more than a few bytes of the input

  std::string Describe() const;
};

struct JsonLimits {
  std::size_t max_bytes = 16u * 1024 * 1024;
  std::size_t max_depth = 512;
};

// What every reader refuses before it reads a byte: more than limits.max_bytes (kTooLarge), and
// a leading byte-order mark (kSyntax; RFC 8259 §8.1 does not allow one). The strict readers
// and the reference reader they are checked against (tests/support/json_reference.h) share it.
std::optional<JsonError> RefuseJsonBeforeReading(std::string_view text, const JsonLimits& limits);

void AppendJsonString(std::string& out, std::string_view text);

// A bounded, printable rendering of untrusted bytes for error details: at most `max_bytes`
// bytes, non-printable bytes as \xNN.
std::string QuoteForDetail(std::string_view bytes, std::size_t max_bytes = 16);

}  // namespace harness
