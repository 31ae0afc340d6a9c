// Anchors: the exact strings of a compacted span that a continuation needs (file paths, code
// identifiers, commands, error messages, test names, URLs, numbers with units, the user's
// constraints and the current request), and the coverage check of a compaction against them
// (docs/decisions.md P13, docs/runtime.md §5.7).
//
// Contract of ExtractAnchors(head, current_request_in_head):
// - Looks at the messages by source: user prose (text blocks of user messages), assistant prose
//   (text and refusal blocks of assistant messages), tool calls (tool_use blocks: the string
//   members command/cmd of a tool whose name mentions bash, shell, exec, terminal or command,
//   and the members path/file_path/filename/notebook_path of any tool) and tool output (tool
//   messages and tool_result blocks, flattened without recursion).
//   - request: with current_request_in_head, the text of the last user message of the head
//     that has prose (its text blocks joined by a new line), cut to kMaxRequestAnchorBytes.
//   - constraint: each sentence of user prose (split at a new line, or at . ! ? followed by
//     white space) holding a rule word as a whole word, any case: must, mustn't, never, don't,
//     do not, always, only, without, keep, avoid, should, shouldn't, ensure, make sure, require,
//     required, forbidden, prefer, instead of, no more than, at most, at least, cannot, can't.
//   - path: a word (white-space separated, surrounding quotes and brackets and a final . , ; :
//     ! ? removed) of prose or a tool call's path member that is not a URL, made of letters,
//     digits and _ - . / ~ @ + only, and either starts with / ./ ../ ~/ and has a second
//     component, or has a / and a last component with an extension, or is a file name with a
//     letter before its extension (extension 1-8 letters or digits, starting with a letter;
//     the whole word at least 4 bytes, with no two dots in a row).
//   - identifier: the content of a single-backtick code span of prose (not a ``` fence) that
//     is one word (1-64 bytes, no white space) and not a path or URL; a code span with white
//     space is a command.
//   - command: a tool call's command (an array of strings is joined by spaces; `bash -lc X`
//     and `sh -c X` arrays keep X), a prose line starting with "$ ", a code span with white
//     space; the first line only.
//   - error: a line of any source whose first word (up to ':') ends in error, exception,
//     fatal or panic (any case) followed by ':', or that holds ": error:" or ": fatal error:";
//     "Traceback (most recent call last):" is not one.
//   - test: in prose, and in tool output only on a line holding FAIL or ERROR: a word that is
//     a pytest id (holds "::"), starts with test_ or Test followed by a letter, digit or _, or
//     ends in _test or Test; also the word after "[  FAILED  ]".
//   - url: a word of prose starting with http:// or https:// (at least one host byte).
//   - quantity: in prose, a number (digits, optionally one . and digits) directly followed by,
//     or followed after one space by, a unit (any case): ms us ns s sec secs second seconds min
//     mins minute minutes h hr hrs hour hours day days b kb mb gb tb kib mib gib tib byte
//     bytes token tokens k % x px line lines.
//   Every anchor is cut to kMaxAnchorBytes (kMaxRequestAnchorBytes for the request,
//   kMaxConstraintAnchorBytes for a constraint) at a UTF-8 character, and trimmed.
// - Secrets: no anchor comes from a line for which LooksLikeSecret (core/secrets.h) is true (the
//   extractive compactor leaves such a line out whole), and a candidate for which it is true is
//   dropped, whatever its class and wherever it comes from.
// - Bounds: at most kMaxAnchorsPerClass[class] anchors per class, those of the newest messages
//   kept (the head is scanned newest message first, each message in text order); duplicates
//   (same class, same normal form) once. The result is ordered by class, then oldest message
//   first, each message's anchors in text order. Cost: linear in the head's text; no
//   recursion.
//
// Contract of CheckCoverage(anchors, summary_text, retained, required):
// - The haystack is the summary text with its XML references decoded, and the text of every
//   retained message (text, refusal and document text, tool names and inputs, tool results).
//   Matching is on a normal form: ASCII letters folded to lower case, every run of white space
//   one space, trimmed. An anchor is found when its normal form is a substring of one part of
//   the haystack (a summary or one message). Also found: a path by its last component when the
//   path has a / and that component is a file name (has an extension); a quantity written
//   with or without the space between number and unit.
// - The report counts found/total per class (classes with no anchor omitted) and lists the
//   first kMaxReportedMissing missing anchors: required classes first, then by class, each in
//   anchor order, cut to kMaxReportedAnchorBytes at a UTF-8 character. With `all_missing`,
//   every missing anchor is also stored there, whole, in that same order (what coverage repair
//   writes into the summary, compaction/repair.h).
// - Cost: O(haystack + anchors x haystack) with the anchor count bounded (256): linear in the
//   text.
//
// CoverageShort(report, min_ratio, required): true when found x 10 000 < min_ratio x total, or
// a class in `required` has an anchor that was not found. A report with no anchor is never
// short.
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/coverage.h"
#include "harness/content/message.h"
#include "harness/context/limits.h"
#include "harness/core/secrets.h"

namespace harness {

inline constexpr std::size_t kMaxAnchorBytes = 200;
inline constexpr std::size_t kMaxConstraintAnchorBytes = 300;
inline constexpr std::size_t kMaxRequestAnchorBytes = 2048;
// Indexed by AnchorClass (0 unused): request, constraint, path, identifier, command, error,
// test, url, quantity. The sum (256) bounds the anchors of one compaction.
inline constexpr std::array<std::size_t, kMaxAnchorClass + 1> kMaxAnchorsPerClass = {
    0, 1, 48, 48, 32, 24, 24, 32, 16, 31};

struct Anchor {
  AnchorClass anchor_class = AnchorClass::kUnspecified;
  std::string text;
  friend bool operator==(const Anchor&, const Anchor&) = default;
};

// A set of anchor classes: bit (1 << class).
using AnchorClassSet = std::uint16_t;
constexpr AnchorClassSet AnchorClassBit(AnchorClass c) {
  return static_cast<AnchorClassSet>(1u << static_cast<unsigned>(c));
}
// Every valid class: bits 1..kMaxAnchorClass.
inline constexpr AnchorClassSet kAllAnchorClasses =
    static_cast<AnchorClassSet>(((1u << (kMaxAnchorClass + 1)) - 1) & ~1u);

std::vector<Anchor> ExtractAnchors(const std::vector<Message>& head, bool current_request_in_head);

// The text a report lists for an anchor: cut to kMaxReportedAnchorBytes at a UTF-8 character.
std::string ReportedAnchorText(std::string_view text);

CoverageReport CheckCoverage(const std::vector<Anchor>& anchors, std::string_view summary_text,
                             const std::vector<Message>& retained, AnchorClassSet required,
                             std::vector<Anchor>* all_missing = nullptr);

bool CoverageShort(const CoverageReport& report, BasisPoints min_ratio, AnchorClassSet required);

}  // namespace harness
