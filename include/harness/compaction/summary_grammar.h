// SummaryGrammar: a llama.cpp GBNF grammar for the summarizer's answer (docs/spec/decisions.md D5:
// a server that supports constrained output may be sent a grammar matching the envelope and the
// five-section XML; the strict validator still runs on whatever comes back).
//
// Contract of BuildSummaryGrammar(input, options), first failure wins:
//   1. input.Validate() fails                        -> SummaryGrammarError{kInputInvalid}
//   2. the canonical envelope of the input's identity does not decode back to that identity
//      (provider or model is not valid UTF-8, so no answer could echo it)
//                                                    -> SummaryGrammarError{kIdentityNotEchoable}
// On success every sentence of `gbnf` is the canonical envelope (EncodeSummaryEnvelope: member
// order fixed, no white space) of the input's basis, model and request_fingerprint, whose summary
// is <conversation_summary><goal>G</goal><constraints>C</constraints><decisions>D</decisions>
// <state>S</state><open_items>O</open_items></conversation_summary>, where each section text is
// printable ASCII from a safe set (letters, digits, space and . , : ; ! ? ( ) / _ + = * # % @ -;
// never < > & quotes backslash or control characters, so it needs neither JSON nor XML
// escaping) and G and S start with a non-space character (the validator's non-blank rule).
// So every sentence passes DecodeSummaryEnvelope, the identity checks and ParseSummary.
//
// Length bound. The answer's byte budget is
//   budget = min(options.max_answer_bytes,
//                (max_summary_tokens - kSummaryGrammarReservedTokens) *
//                options.min_bytes_per_token)
// (0 when max_summary_tokens is at most the reserve). The envelope's fixed bytes (identity,
// tags, goal's and state's first character) are taken from it and the rest is split equally
// between the five sections, each capped at kSummaryGrammarMaxSectionBytes (llama.cpp refuses a
// repetition of 2000 or more). `max_answer_bytes` is the longest sentence, in bytes; it is at most
// the budget unless the budget cannot hold even the shortest sentence, in which case the grammar
// is the shortest one (one character of goal and state, the other sections empty) and the
// validator decides (token_limit). Every token carries at least one byte, so with the default
// min_bytes_per_token = 1 an answer never exceeds max_summary_tokens whatever the tokenizer: a
// random-weight model may pick one-character tokens anywhere. A caller that knows its tokenizer
// packs more bytes per token may raise it, trading that guarantee for longer sections.
// Cost: O(size of the identity); the grammar has seven rules and is a few hundred bytes plus the
// identity. Deterministic: the same input and options give the same grammar.
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/compaction/input.h"
#include "harness/core/result.h"

namespace harness {

// Tokens kept out of the byte budget: the end-of-generation token and any closing tokens a chat
// template adds, which a provider may count as output.
inline constexpr TokenCount kSummaryGrammarReservedTokens = 4;
// The largest section; below llama.cpp's repetition threshold (2000) with a wide margin.
inline constexpr std::size_t kSummaryGrammarMaxSectionBytes = 1000;

struct SummaryGrammarOptions {
  std::size_t min_bytes_per_token = 1;       // 1: the worst case of any tokenizer
  std::size_t max_answer_bytes = 64 * 1024;  // the envelope byte limit (output_bytes)
};

struct SummaryGrammar {
  std::string gbnf;              // the grammar text; its start rule is `root`
  std::size_t max_answer_bytes;  // the longest sentence, in bytes
};

enum class SummaryGrammarErrorKind : std::uint8_t {
  kInputInvalid = 1,         // the input failed CompactionInput::Validate (input is set)
  kIdentityNotEchoable = 2,  // the provider or model is not valid UTF-8
};

struct SummaryGrammarError {
  SummaryGrammarErrorKind kind;
  std::optional<CompactionInputError> input;  // kInputInvalid only

  // "summary grammar: <input error>" or "summary grammar: model key is not valid UTF-8"
  std::string Message() const;
};

Result<SummaryGrammar, SummaryGrammarError> BuildSummaryGrammar(
    const CompactionInput& input, const SummaryGrammarOptions& options = {});

}  // namespace harness
