// The strict <conversation_summary> validator (docs/spec/decisions.md D1; docs/spec/grammar.md;
// docs/summary.md).
//
// Contract: ParseSummary accepts exactly the five-section document
//   <conversation_summary><goal/><constraints/><decisions/><state/><open_items/></conversation_summary>
// (sections in this order, as elements holding character data only; Unicode white space, raw or
// as references, between them; ASCII white space after a tag's name; nothing before or after
// the root; no attributes, namespace prefixes, comments, processing instructions, directives or
// CDATA), with a goal and a state that are not blank after reference decoding. Text is XML 1.0
// character data in UTF-8: the five predefined entities and numeric character references only,
// no "]]>", every character an XML Char. A reference to a surrogate code point is rejected
// (D1), unlike the reference implementation.
// On success it returns a UserMessage with exactly one TextBlock whose text is the input, byte
// for byte (escapes stay escaped, CR/LF untouched). Accepting is idempotent.
// On failure it returns the first failure in the order of §3.3, as one of four reasons:
//   xml_syntax     not well-formed (a tokenizer error, including truncation);
//   xml_root       the first element is not <conversation_summary>, or the input is empty;
//   xml_structure  well-formed but outside the shape above; any "<![CDATA[" in the input is
//                  this reason before anything else is looked at;
//   xml_content    the shape is perfect but goal or state is blank (judged at the end only).
// The error's offset is the byte offset of what failed: the start of the offending token,
// reference, character or attribute, or the input's length when the input ends inside markup
// or with elements still open. Its detail is a short fixed English phrase that never quotes
// the input.
// Cost: one pass over the input, O(n) time; no recursion and no allocation besides the returned
// copy (or the error's detail).
// Thread safety: a pure function.
#pragma once

#include <string_view>

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

Result<UserMessage, InvalidSummaryError> ParseSummary(std::string_view raw);

}  // namespace harness
