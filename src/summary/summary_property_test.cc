// Properties of the strict summary grammar over generated documents: generated valid summaries
// are accepted byte for byte, single mutations only ever yield the four xml_* reasons, parsing
// is idempotent and deterministic, and the verdicts agree with expat's well-formedness check
// wherever the grammar does not deliberately differ from plain XML.
#include <expat.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/summary/summary.h"

namespace harness {
namespace {

// ---- Generators ---------------------------------------------------------------------------

std::string Utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// Go's unicode.IsSpace minus U+000B and U+000C, which are no XML characters.
const std::vector<char32_t>& Spaces() {
  static const std::vector<char32_t> spaces = {0x09,   0x0A,   0x0D,   0x20,   0x85,   0xA0,
                                               0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
                                               0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                               0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  return spaces;
}

bool IsSpace(char32_t c) {
  for (const char32_t s : Spaces()) {
    if (s == c)
      return true;
  }
  return false;
}

// A code point that is an XML Char and no surrogate, from every plane the grammar allows.
rc::Gen<char32_t> XmlChar() {
  return rc::gen::oneOf(
      rc::gen::element<char32_t>(0x9, 0xA, 0xD), rc::gen::inRange<char32_t>(0x20, 0x80),
      rc::gen::inRange<char32_t>(0x80, 0x800), rc::gen::inRange<char32_t>(0x800, 0xD800),
      rc::gen::inRange<char32_t>(0xE000, 0xFFFE), rc::gen::inRange<char32_t>(0x10000, 0x110000));
}

// "&#...;" for `c`: decimal or hex (either case of digits), with or without leading zeros.
rc::Gen<std::string> CharacterReference(rc::Gen<char32_t> code_point) {
  return rc::gen::exec([code_point] {
    const char32_t c = *code_point;
    const bool hex = *rc::gen::arbitrary<bool>();
    const bool upper = *rc::gen::arbitrary<bool>();
    const std::size_t zeros = *rc::gen::inRange<std::size_t>(0, 4);
    const std::string_view symbols = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    const std::uint32_t base = hex ? 16 : 10;
    std::string digits;
    for (std::uint32_t v = c; v != 0 || digits.empty(); v /= base)
      digits += symbols[v % base];
    std::reverse(digits.begin(), digits.end());
    return std::string(hex ? "&#x" : "&#") + std::string(zeros, '0') + digits + ";";
  });
}

// A piece of character data that is legal inside a section: never '<', a bare '&' or "]]>".
rc::Gen<std::string> TextPiece() {
  static constexpr std::string_view kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()[{}}>=+-*/\\|~"
      "`@#$%^_\t\n\r";
  return rc::gen::oneOf(
      rc::gen::container<std::string>(rc::gen::elementOf(kSafe)),
      rc::gen::element<std::string>("&lt;", "&gt;", "&amp;", "&apos;", "&quot;", "]]&gt;", "]a",
                                    "]", "\r\n"),
      CharacterReference(XmlChar()),
      rc::gen::map(rc::gen::suchThat(XmlChar(), [](char32_t c) { return c >= 0x80; }), Utf8));
}

rc::Gen<std::string> Text() {
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(TextPiece()),
                      [](const std::vector<std::string>& pieces) {
                        std::string text;
                        for (const std::string& piece : pieces) {
                          // "]" then a piece starting "]>" or ">" could form "]]>": keep the
                          // lone bracket apart with a letter.
                          text += piece;
                          if (piece == "]")
                            text += 'x';
                        }
                        return text;
                      });
}

// Text with at least one character that is not white space after decoding.
rc::Gen<std::string> NonBlankText() {
  const auto visible = rc::gen::oneOf(
      rc::gen::element<std::string>("g", "&lt;", "&amp;", "&#65;", "&#x2713;", "\xc3\xa9",
                                    "\xe2\x80\x8b", "\xef\xbb\xbf"),
      rc::gen::map(rc::gen::suchThat(
                       XmlChar(),
                       [](char32_t c) { return !IsSpace(c) && c != '<' && c != '&' && c != ']'; }),
                   Utf8),
      CharacterReference(rc::gen::suchThat(XmlChar(), [](char32_t c) { return !IsSpace(c); })));
  return rc::gen::apply([](const std::string& before, const std::string& middle,
                           const std::string& after) { return before + middle + after; },
                        Text(), visible, Text());
}

// White space between sections: Unicode spaces raw or as references, possibly none.
rc::Gen<std::string> InterSectionSpace() {
  const auto piece =
      rc::gen::oneOf(rc::gen::map(rc::gen::elementOf(Spaces()), Utf8),
                     CharacterReference(rc::gen::elementOf(Spaces())),
                     rc::gen::element<std::string>("&#32;", "&#x20;", "\r\n", "\n  "));
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(piece),
                      [](const std::vector<std::string>& pieces) {
                        std::string space;
                        for (const std::string& p : pieces)
                          space += p;
                        return space;
                      });
}

// The ASCII white space allowed after a name inside a tag.
rc::Gen<std::string> TagSpace() {
  return rc::gen::oneOf(rc::gen::just(std::string()),
                        rc::gen::container<std::string>(rc::gen::element(' ', '\t', '\r', '\n')));
}

rc::Gen<std::string> Section(std::string name, bool required) {
  return rc::gen::exec([name, required] {
    const int form = required ? 2 : *rc::gen::inRange(0, 3);
    switch (form) {
      case 0:
        return "<" + name + *TagSpace() + "/>";
      case 1:
        return "<" + name + *TagSpace() + "></" + name + *TagSpace() + ">";
      default:
        return "<" + name + *TagSpace() + ">" + (required ? *NonBlankText() : *Text()) + "</" +
               name + *TagSpace() + ">";
    }
  });
}

rc::Gen<std::string> ValidSummary() {
  return rc::gen::exec([] {
    std::string doc = "<conversation_summary" + *TagSpace() + ">";
    doc += *InterSectionSpace() + *Section("goal", true);
    doc += *InterSectionSpace() + *Section("constraints", false);
    doc += *InterSectionSpace() + *Section("decisions", false);
    doc += *InterSectionSpace() + *Section("state", true);
    doc += *InterSectionSpace() + *Section("open_items", false);
    doc += *InterSectionSpace() + "</conversation_summary" + *TagSpace() + ">";
    return doc;
  });
}

// One single-byte edit (insert, delete, replace) or a truncation, biased towards the bytes that
// matter to the grammar.
rc::Gen<std::string> Mutated(const std::string& doc) {
  return rc::gen::exec([doc] {
    const auto byte = rc::gen::oneOf(
        rc::gen::arbitrary<char>(),
        rc::gen::element<char>('<', '>', '&', ']', '/', '!', '?', '-', ':', '"', '\'', '=', ' ',
                               ';', '#', 'x', '\0', '\v', '\x80', '\xa0', '\xc2', '\xed', '\xff'));
    std::string mutated = doc;
    const int kind = *rc::gen::inRange(0, 4);
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, doc.size());
    switch (kind) {
      case 0:
        mutated.insert(mutated.begin() + static_cast<std::ptrdiff_t>(at), *byte);
        break;
      case 1:
        mutated.erase(at, 1);
        break;
      case 2:
        mutated[at] = *byte;
        break;
      default:
        mutated.resize(at);
    }
    return mutated;
  });
}

// ---- Oracle ---------------------------------------------------------------------------------

// Plain XML 1.0 well-formedness as expat judges it (no namespaces, no DTD loading).
bool ExpatWellFormed(std::string_view document) {
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"),
                                                                      &XML_ParserFree);
  return XML_Parse(parser.get(), document.data(), static_cast<int>(document.size()),
                   /*isFinal=*/1) == XML_STATUS_OK;
}

bool IsXmlReason(InvalidSummaryReason reason) {
  return reason == InvalidSummaryReason::kXmlSyntax || reason == InvalidSummaryReason::kXmlRoot ||
         reason == InvalidSummaryReason::kXmlStructure ||
         reason == InvalidSummaryReason::kXmlContent;
}

// ---- Properties -------------------------------------------------------------------------------

RC_GTEST_PROP(SummaryProperty, GeneratedValidSummariesAreAcceptedByteForByte, ()) {
  const std::string doc = *ValidSummary();
  const auto result = ParseSummary(doc);
  RC_ASSERT(result.ok());
  RC_ASSERT(result->blocks.size() == 1u);
  const TextBlock* text = result->blocks[0].as<TextBlock>();
  RC_ASSERT(text != nullptr);
  RC_ASSERT(text->text == doc);
  RC_ASSERT(ExpatWellFormed(doc));
}

RC_GTEST_PROP(SummaryProperty, ParsingIsIdempotent, ()) {
  const std::string doc = *ValidSummary();
  const auto first = ParseSummary(doc);
  RC_ASSERT(first.ok());
  const auto second = ParseSummary(first->blocks[0].as<TextBlock>()->text);
  RC_ASSERT(second.ok());
  RC_ASSERT(*second == *first);
}

RC_GTEST_PROP(SummaryProperty, SingleMutationsYieldOnlyTheFourXmlReasons, ()) {
  const std::string doc = *ValidSummary();
  for (int i = 0; i < 20; ++i) {
    const std::string mutated = *Mutated(doc);
    const auto result = ParseSummary(mutated);
    const auto again = ParseSummary(mutated);
    RC_ASSERT(result.ok() == again.ok());
    if (result.ok()) {
      RC_ASSERT(result->blocks.size() == 1u);
      RC_ASSERT(result->blocks[0].as<TextBlock>()->text == mutated);
      RC_ASSERT(*again == *result);
      // Everything the grammar accepts is well-formed XML.
      RC_ASSERT(ExpatWellFormed(mutated));
      continue;
    }
    const InvalidSummaryError& error = result.error();
    RC_ASSERT(IsXmlReason(error.reason));
    RC_ASSERT(error.offset.has_value());
    RC_ASSERT(*error.offset <= mutated.size());
    RC_ASSERT(!error.detail.empty());
    RC_ASSERT(again.error().reason == error.reason);
    RC_ASSERT(again.error().offset == error.offset);
    // A syntax verdict means expat, too, finds the bytes malformed: no single edit of a valid
    // summary reaches the places where Go's tokenizer is stricter than XML (attribute values
    // containing "]]>", names with two colons, XML declarations).
    if (error.reason == InvalidSummaryReason::kXmlSyntax) {
      RC_ASSERT(!ExpatWellFormed(mutated));
    }
  }
}

}  // namespace
}  // namespace harness
