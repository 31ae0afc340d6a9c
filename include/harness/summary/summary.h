// The strict <conversation_summary> validator (decisions D1; reference/contracts.md §3).
//
// Contract: ParseSummary accepts exactly the five-section document
//   <conversation_summary><goal/><constraints/><decisions/><state/><open_items/></conversation_summary>
// (sections as elements with character data only, white space between them, nothing before or
// after the root, no attributes, namespaces, comments, processing instructions, directives or
// CDATA), with non-blank goal and state. On success it returns a UserMessage with exactly one
// TextBlock whose text is the input, byte for byte (escapes stay escaped, CR/LF untouched).
// On failure it returns InvalidSummaryError with the first failing reason in the order of
// §3.3: CDATA pre-check, then tokenizer and structure errors in document order, then blank
// goal/state at end of input. The error carries a byte offset and a short detail that never
// quotes the input.
// Cost: one pass over the input, O(n) time, O(1) memory beyond the output copy; no recursion.
// Thread safety: a pure function.
#pragma once

#include <string_view>

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

Result<UserMessage, InvalidSummaryError> ParseSummary(std::string_view raw);

}  // namespace harness
