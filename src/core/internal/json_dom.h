// Strict JSON as a document: the one reader every harness wire goes through (docs/spec/
// decisions.md D2), internal to the modules. The public API speaks JSON as text
// (harness/core/json.h holds the errors and limits it reports); this header, and with it
// nlohmann's, reaches only the files of the modules that take a document apart
// (docs/architecture.md, "Internal headers").
//
// Contract of ParseStrictJson:
// - the input is at most limits.max_bytes long (checked before anything is parsed), is exactly
//   one JSON value with optional surrounding white space, and is valid UTF-8 (lone surrogate
//   escapes are errors, not U+FFFD);
// - no object has two members with the same name (exact, case-sensitive), at any depth;
// - arrays and objects nest at most limits.max_depth deep (checked while parsing, so deep input
//   cannot exhaust the stack or the heap before it is refused).
// Every failure is a JsonError (harness/core/json.h).
//
// ParseStrictJsonArray reads the same documents under the same contract, with the same errors
// (kinds, paths, offsets), for a document whose root is an array of many elements (a transcript
// of tens of megabytes): it hands each element of the root array to the caller as soon as the
// element is complete and releases it when the caller returns, so memory holds the DOM of one
// element at a time, never the whole document's (a DOM costs several times its text). The
// elements before the first error have been handed over when the error is returned.
//
// JsonObject reads one object of a wire with exact member names: members are looked up by exact
// name, and RejectUnknown() refuses any member that was never looked up.
// Thread safety: pure functions; a JsonObject is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/json.h"
#include "harness/core/result.h"

namespace harness {

// Objects keep document order, so errors name the first offending member as written.
using Json = nlohmann::ordered_json;

// "null", "an object", "an integer", …: the JSON type of a value, for error details.
const char* JsonTypeName(const Json& value);

Result<Json, JsonError> ParseStrictJson(std::string_view text, const JsonLimits& limits = {});

// Receives element `index` of the root array and its exact text. The element is the caller's to
// take apart (move from); it is released when the call returns. Returning false stops the parse.
using JsonElementSink =
    std::function<bool(std::size_t index, Json& element, std::string_view element_text)>;

// What ParseStrictJsonArray read besides the elements it handed over.
struct JsonArrayRead {
  std::size_t elements = 0;  // how many elements were handed over
  bool stopped = false;      // the sink returned false; the rest of the text was not read
  std::optional<Json> root;  // the whole document when its root is not an array
};

Result<JsonArrayRead, JsonError> ParseStrictJsonArray(std::string_view text,
                                                      const JsonLimits& limits,
                                                      const JsonElementSink& element);

// Typed reads of one value at `path`.
Result<std::string, JsonError> JsonAsString(const Json& value, std::string_view path);
Result<std::uint64_t, JsonError> JsonAsUint(const Json& value, std::string_view path,
                                            std::uint64_t max = UINT64_MAX);
Result<bool, JsonError> JsonAsBool(const Json& value, std::string_view path);

class JsonObject {
 public:
  // Fails with kType unless `value` is an object.
  static Result<JsonObject, JsonError> Open(const Json& value, std::string path);

  const std::string& path() const { return path_; }
  std::string MemberPath(std::string_view name) const;
  std::string ElementPath(std::string_view name, std::size_t index) const;

  // The member, or nullptr when absent. Marks the name as known.
  const Json* Find(std::string_view name);
  // The member; kMissingMember when absent. Null is returned as is.
  Result<const Json*, JsonError> Require(std::string_view name);
  // The member, which must be present and not null.
  Result<const Json*, JsonError> RequireNonNull(std::string_view name);
  Result<std::string, JsonError> RequireString(std::string_view name);
  Result<std::uint64_t, JsonError> RequireUint(std::string_view name,
                                               std::uint64_t max = UINT64_MAX);
  Result<bool, JsonError> RequireBool(std::string_view name);
  // kUnknownMember for the first member (in document order) that was never looked up.
  Status<JsonError> RejectUnknown() const;

 private:
  JsonObject(const Json& value, std::string path) : value_(&value), path_(std::move(path)) {}
  void MarkKnown(std::size_t index);
  bool IsKnown(std::size_t index) const;

  const Json* value_;
  std::string path_;
  // The members looked up, by position (names are unique: ParseStrictJson refuses duplicates
  // and a DOM cannot hold them), so a lookup copies no name: bit i of known_first_ for the
  // first 64 members, known_rest_[i - 64] beyond.
  std::uint64_t known_first_ = 0;
  std::vector<bool> known_rest_;
};

}  // namespace harness
