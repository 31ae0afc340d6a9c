// A lenient reader of JSON members, enough for the fields of common tools' inputs and for
// Codex's {"output", "metadata"} result envelope. It also reads an input cut short by the
// projection's cap (compaction/input.h), which a strict parser would refuse whole.
//
// Contract:
// - ReadFields(json) gives every "key": value member at any depth, in document order: a string
//   value decoded (escapes, \u surrogate pairs; a lone surrogate or a bad \u as U+FFFD), an
//   array of strings joined by spaces, a scalar as its text. Values that are objects, or arrays
//   holding anything but strings, are not members here: their own members are. Never fails: a
//   string cut short runs to the end of the input. Linear, no recursion.
// - ReadString(text, at, out) decodes the string whose opening quote is at `at` into out and
//   returns the index after its closing quote (or text.size() when it is cut short).
// - FieldValue(fields, keys) is the first member named by the first key that has one, or null.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {

struct Field {
  std::string key;
  std::string value;  // strings decoded; an array of strings joined by spaces; scalars as text
};

std::size_t ReadString(std::string_view text, std::size_t at, std::string& out);
std::vector<Field> ReadFields(std::string_view json);
const std::string* FieldValue(const std::vector<Field>& fields,
                              std::initializer_list<std::string_view> keys);

}  // namespace harness::extractive_detail
