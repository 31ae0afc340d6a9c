// The facts files of `harness eval` and the rule that scores a compaction against them
// (docs/eval.md).
//
// A facts file is a JSON array of facts, each {"fact": text, "keywords": [..], "or_keywords":
// [[..], ..]}: "fact" (the fact in words, for the report) and "keywords" are required,
// "or_keywords" is optional; no other member is allowed.
//
// Contract of ParseFacts (the file is untrusted input):
// - it is read by ParseStrictJson (strict JSON, UTF-8, no duplicate members) with the limits
//   below, all checked before the facts are built: the text at most max_bytes, at most
//   max_facts facts, each list at most max_keywords keywords, at most max_alternatives
//   alternatives, every string at most max_string_bytes;
// - a keyword is kept as written but must hold something besides white space;
// - a fact must be able to be found: "keywords" or one of "or_keywords" non-empty; an empty
//   alternative list is refused (it would keep the fact on its own);
// - an empty array is refused (a facts file that scores nothing is a mistake);
// - every failure is a JsonError whose path names the value ("$[3].or_keywords[1][0]") and whose
//   detail never echoes more than a few bytes of the input; the first failure in document order
//   wins.
//
// Contract of the scoring rule (FactMatcher): the text (the summary plus the retained tail) and
// every keyword are normalized the same way — ASCII letters folded to lower case, every run of
// white space (space, tab, CR, LF, FF, VT) collapsed to one space, leading and trailing white
// space dropped; other bytes compare exactly — and a keyword is present when its normalized form
// is a substring of the normalized text. A fact is kept when all of its keywords are present
// (and it has some), or when all keywords of one of its or_keywords lists are.
// Thread safety: pure functions; a FactMatcher is immutable after construction.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/json.h"
#include "harness/core/result.h"

namespace harness::cli {

struct FactsLimits {
  std::size_t max_bytes = 1024 * 1024;
  std::size_t max_facts = 1000;
  std::size_t max_keywords = 64;
  std::size_t max_alternatives = 16;
  std::size_t max_string_bytes = 4096;
};

struct Fact {
  std::string fact;
  std::vector<std::string> keywords;
  std::vector<std::vector<std::string>> or_keywords;
};

Result<std::vector<Fact>, JsonError> ParseFacts(std::string_view text,
                                                const FactsLimits& limits = {});

// `text` lower-cased (ASCII) with its white space collapsed and trimmed.
std::string NormalizeForMatch(std::string_view text);

class FactMatcher {
 public:
  explicit FactMatcher(std::string_view text) : text_(NormalizeForMatch(text)) {}
  bool Present(std::string_view keyword) const;
  bool Kept(const Fact& fact) const;

 private:
  std::string text_;
};

}  // namespace harness::cli
