#include "harness/compaction/summary_grammar.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/compaction/wire.h"
#include "harness/core/chars.h"

namespace harness {
namespace {

struct Section {
  std::string_view tag;
  std::string_view rule;  // GBNF rule names allow letters, digits and '-' only
  bool required;          // goal and state must not be blank (ParseSummary)
};

constexpr std::array<Section, 5> kSections{{
    {"goal", "goal", true},
    {"constraints", "constraints", false},
    {"decisions", "decisions", false},
    {"state", "state", true},
    {"open_items", "open-items", false},
}};

constexpr std::string_view kRoot = "conversation_summary";

// The section alphabet. None of these needs JSON escaping (no quote, backslash or control
// character) or XML escaping (no <, > or &), so the summary string's bytes are the XML's bytes
// and "]]>" cannot occur. '-' is written \x2D so that it is never read as a range.
constexpr std::string_view kLeadClass = R"([a-zA-Z0-9.,:;!?()/_+=*#%@\x2D])";
constexpr std::string_view kCharClass = R"([ a-zA-Z0-9.,:;!?()/_+=*#%@\x2D])";

// A GBNF string literal matching exactly `bytes`. llama.cpp reads a literal's characters as
// UTF-8, so non-ASCII bytes (valid UTF-8 here: they come from AppendJsonString) go verbatim;
// '"' and '\' are escaped, and any other byte outside printable ASCII (DEL, which JSON leaves
// raw) as \xHH.
void AppendGbnfLiteral(std::string& out, std::string_view bytes) {
  out.push_back('"');
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (b >= 0x80 || (b >= 0x20 && b < 0x7F)) {
      out.push_back(c);
    } else {
      out.append("\\x");
      AppendHexByte(out, b, HexCase::kUpper);
    }
  }
  out.push_back('"');
}

// The answer's byte budget (header: "Length bound").
std::size_t AnswerBudget(TokenCount max_summary_tokens, const SummaryGrammarOptions& options) {
  if (max_summary_tokens <= kSummaryGrammarReservedTokens)
    return 0;
  const TokenCount tokens = max_summary_tokens - kSummaryGrammarReservedTokens;
  // Saturate instead of overflowing: any budget past max_answer_bytes is max_answer_bytes.
  const std::size_t per_token = std::max<std::size_t>(options.min_bytes_per_token, 1);
  if (tokens > options.max_answer_bytes / per_token)
    return options.max_answer_bytes;
  return static_cast<std::size_t>(tokens) * per_token;
}

}  // namespace

std::string SummaryGrammarError::Message() const {
  std::string message = "summary grammar: ";
  if (kind == SummaryGrammarErrorKind::kInputInvalid && input)
    return message.append(input->Message());
  return message.append("model key is not valid UTF-8");
}

Result<SummaryGrammar, SummaryGrammarError> BuildSummaryGrammar(
    const CompactionInput& input, const SummaryGrammarOptions& options) {
  if (auto valid = input.Validate(); !valid.ok()) {
    return Fail(SummaryGrammarError{SummaryGrammarErrorKind::kInputInvalid, valid.error()});
  }
  // The fixed part is the canonical envelope itself, so the grammar cannot drift from the wire.
  // With an empty summary it ends in `"summary":""}`: everything before the last two bytes opens
  // the summary string, and `"}` closes it.
  const std::string empty =
      EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint, "");
  auto echoed = DecodeSummaryEnvelope(empty);
  if (!echoed.ok() || echoed->model != input.model) {
    // AppendJsonString replaced invalid UTF-8 with U+FFFD: the identity check would fail on
    // every answer.
    return Fail(SummaryGrammarError{SummaryGrammarErrorKind::kIdentityNotEchoable, std::nullopt});
  }
  const std::string_view envelope_open = std::string_view(empty).substr(0, empty.size() - 2);
  constexpr std::string_view kEnvelopeClose = "\"}";

  // Literal pieces between the sections: pieces[i] precedes section i, pieces[5] ends.
  std::array<std::string, kSections.size() + 1> pieces;
  pieces[0].append(envelope_open).append("<").append(kRoot).append(">");
  for (std::size_t i = 0; i < kSections.size(); ++i) {
    pieces[i].append("<").append(kSections[i].tag).append(">");
    pieces[i + 1].append("</").append(kSections[i].tag).append(">");
  }
  pieces.back().append("</").append(kRoot).append(">").append(kEnvelopeClose);

  std::size_t fixed = 0;
  for (const std::string& piece : pieces)
    fixed += piece.size();
  for (const Section& section : kSections)
    fixed += section.required ? 1 : 0;  // the leading non-space character

  const std::size_t budget = AnswerBudget(input.max_summary_tokens, options);
  const std::size_t share = budget > fixed ? (budget - fixed) / kSections.size() : 0;
  // Repetitions after the required leading character, per section.
  std::array<std::size_t, kSections.size()> tails{};
  std::size_t longest = fixed;
  for (std::size_t i = 0; i < kSections.size(); ++i) {
    const std::size_t cap = kSummaryGrammarMaxSectionBytes - (kSections[i].required ? 1 : 0);
    tails[i] = std::min(share, cap);
    longest += tails[i];
  }

  std::string gbnf =
      "# harness summarizer answer: the compaction envelope (version 1) with the five-section\n"
      "# <conversation_summary>; generated by BuildSummaryGrammar.\n"
      "root ::= ";
  std::string literal = pieces[0];
  std::vector<std::size_t> used;  // sections that have a rule
  for (std::size_t i = 0; i < kSections.size(); ++i) {
    if (kSections[i].required || tails[i] > 0) {
      AppendGbnfLiteral(gbnf, literal);
      gbnf.append(" ").append(kSections[i].rule).append(" ");
      literal.clear();
      used.push_back(i);
    }
    literal.append(pieces[i + 1]);  // an empty section is its two tags side by side
  }
  AppendGbnfLiteral(gbnf, literal);
  gbnf.push_back('\n');
  for (const std::size_t i : used) {
    gbnf.append(kSections[i].rule).append(" ::=");
    if (kSections[i].required)
      gbnf.append(" lead");
    if (tails[i] > 0)
      gbnf.append(" char{0,").append(std::to_string(tails[i])).append("}");
    gbnf.push_back('\n');
  }
  gbnf.append("lead ::= ").append(kLeadClass).append("\n");
  gbnf.append("char ::= ").append(kCharClass).append("\n");
  return SummaryGrammar{std::move(gbnf), longest};
}

}  // namespace harness
