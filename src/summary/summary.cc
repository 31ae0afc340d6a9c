#include "harness/summary/summary.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/core/utf8.h"
#include "harness/summary/xml_chars.h"

namespace harness {
namespace {

using xml::IsNameChar;
using xml::IsNameStartChar;
using xml::IsSurrogate;
using xml::IsXmlChar;

using Byte = unsigned char;

constexpr std::string_view kRoot = "conversation_summary";
constexpr std::array<std::string_view, 5> kSections = {"goal", "constraints", "decisions", "state",
                                                       "open_items"};
constexpr std::size_t kGoal = 0;
constexpr std::size_t kState = 3;
constexpr std::size_t kSectionCount = kSections.size();

// What a byte means inside character data and attribute values. kPlain and kSpace come first
// so that the scanning loops can skip both with one comparison.
enum ByteClass : std::uint8_t {
  kPlain,      // printable ASCII that is not white space and needs no further look
  kSpace,      // the ASCII white space XML allows raw: space, tab, LF, CR
  kLess,       // '<': ends character data; forbidden in attribute values
  kAmpersand,  // '&': starts a reference
  kBracket,    // ']': may start the forbidden "]]>"
  kMultiByte,  // 0x80..0xFF: the lead (or a stray continuation) of a UTF-8 sequence
  kForbidden,  // the C0 controls that are not XML Chars
};

constexpr std::array<std::uint8_t, 256> MakeByteClasses() {
  std::array<std::uint8_t, 256> classes{};
  for (int b = 0; b < 256; ++b) {
    std::uint8_t c = kPlain;
    if (b >= 0x80) {
      c = kMultiByte;
    } else if (b == ' ' || b == '\t' || b == '\n' || b == '\r') {
      c = kSpace;
    } else if (b < 0x20) {
      c = kForbidden;
    } else if (b == '<') {
      c = kLess;
    } else if (b == '&') {
      c = kAmpersand;
    } else if (b == ']') {
      c = kBracket;
    }
    classes[static_cast<std::size_t>(b)] = c;
  }
  return classes;
}
constexpr std::array<std::uint8_t, 256> kByteClass = MakeByteClasses();

// Bytes a name is read from: ASCII letters, digits, '_', ':', '.', '-', and every byte of a
// multi-byte sequence. The name is checked against the XML name rules once it is read.
constexpr std::array<bool, 256> MakeNameBytes() {
  std::array<bool, 256> bytes{};
  for (int b = 0; b < 256; ++b) {
    bytes[static_cast<std::size_t>(b)] = b >= 0x80 || (b >= 'a' && b <= 'z') ||
                                         (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
                                         b == '_' || b == ':' || b == '.' || b == '-';
  }
  return bytes;
}
constexpr std::array<bool, 256> kNameByte = MakeNameBytes();

constexpr bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i]))
      return false;
  }
  return true;
}

// The value of a pseudo-attribute in the body of an XML declaration, read as the reference
// decoder reads it: the first `name=` (name including the '=') whose next byte is a quote, up to
// the next equal quote. Empty when absent or unterminated, which counts as "not declared".
std::string_view PseudoAttribute(std::string_view body, std::string_view name) {
  std::size_t from = 0;
  while (from < body.size()) {
    const std::size_t at = body.find(name, from);
    if (at == std::string_view::npos)
      return {};
    const std::size_t quote_at = at + name.size();
    if (quote_at >= body.size())
      return {};
    from = quote_at + 1;  // a byte after '=' that is no quote is skipped, not searched again
    const char quote = body[quote_at];
    if (quote == '"' || quote == '\'') {
      const std::size_t close = body.find(quote, from);
      if (close == std::string_view::npos)
        return {};
      return body.substr(from, close - from);
    }
  }
  return {};
}

// An element or attribute name. `local` is the part after the colon when the name has exactly
// one colon with text on both sides; otherwise it is the whole name and there is no prefix.
struct QualifiedName {
  std::string_view raw;
  std::string_view local;
  bool prefixed = false;
};

struct Problem {
  InvalidSummaryReason reason = InvalidSummaryReason::kXmlSyntax;
  const char* detail = "";
  std::size_t offset = 0;
};

// One pass over the document, token by token, in document order (docs/spec/grammar.md §3.3 A and B,
// then C at the end of input). Every member function that returns bool returns false exactly when
// it has recorded the first problem. Memory: a few scalars; nothing is allocated.
class Validator {
 public:
  explicit Validator(std::string_view raw)
      : begin_(reinterpret_cast<const Byte*>(raw.data())), end_(begin_ + raw.size()), p_(begin_) {}

  bool Run() {
    while (p_ < end_) {
      if (*p_ != '<') {
        if (!CharacterData())
          return false;
        continue;
      }
      if (end_ - p_ < 2)
        return Syntax("end of input after '<'", end_);
      switch (p_[1]) {
        case '/':
          if (!EndTag())
            return false;
          break;
        case '?':
          return ProcessingInstruction();
        case '!':
          return MarkupDeclaration();
        default:
          if (!StartTag())
            return false;
      }
    }
    return EndOfInput();
  }

  const Problem& problem() const { return problem_; }

 private:
  enum class Place { kBeforeRoot, kInRoot, kInSection, kAfterRoot };

  bool Report(InvalidSummaryReason reason, const char* detail, const Byte* at) {
    problem_ = {reason, detail, static_cast<std::size_t>(at - begin_)};
    return false;
  }
  bool Syntax(const char* detail, const Byte* at) {
    return Report(InvalidSummaryReason::kXmlSyntax, detail, at);
  }
  bool Structure(const char* detail, const Byte* at) {
    return Report(InvalidSummaryReason::kXmlStructure, detail, at);
  }

  std::string_view View(const Byte* from, const Byte* to) const {
    return {reinterpret_cast<const char*>(from), static_cast<std::size_t>(to - from)};
  }
  const Byte* Find(const Byte* from, std::string_view needle) const {
    const std::size_t at = View(from, end_).find(needle);
    return at == std::string_view::npos ? nullptr : from + at;
  }
  void SkipTagSpace() {
    while (p_ < end_ && kByteClass[*p_] == kSpace)
      ++p_;
  }

  // ---- Character data -------------------------------------------------------------------

  // A text token: everything up to the next '<' or the end of input. The whole token is checked
  // before the structural rule for its place applies (a lexical error in it is xml_syntax even
  // where any text at all would be xml_structure).
  bool CharacterData() {
    const Byte* const start = p_;
    const Byte* nonspace = nullptr;
    // Inside a section only "is there any non-white character" matters, once.
    const bool track = place_ != Place::kInSection || !section_has_text_[next_section_];
    if (!ScanCharacterData(track ? &nonspace : nullptr))
      return false;
    switch (place_) {
      case Place::kBeforeRoot:
        return Structure("text before the root element", start);
      case Place::kAfterRoot:
        return Structure("text after the root element", start);
      case Place::kInRoot:
        if (nonspace != nullptr)
          return Structure("text between sections", nonspace);
        return true;
      case Place::kInSection:
        if (nonspace != nullptr)
          section_has_text_[next_section_] = true;
        return true;
    }
    return true;
  }

  // Scans from p_ to the next '<' or the end of input. If `nonspace` is not null, stores there
  // the first character that is not white space after reference decoding (or leaves it null).
  bool ScanCharacterData(const Byte** nonspace) {
    const Byte* p = p_;
    const Byte* const end = end_;
    bool seen_text = nonspace == nullptr;
    for (;;) {
      if (!seen_text) {
        while (p < end && kByteClass[*p] == kSpace)
          ++p;
        if (p < end && kByteClass[*p] == kPlain) {
          *nonspace = p;
          seen_text = true;
        }
      }
      // The hot loop: plain text and ASCII white space need no further look.
      while (p < end && kByteClass[*p] <= kSpace)
        ++p;
      if (p == end)
        break;
      const Byte* const at = p;
      bool space = false;
      switch (kByteClass[*p]) {
        case kLess:
          p_ = p;
          return true;
        case kAmpersand:
          if (!Reference(&p, &space))
            return false;
          break;
        case kBracket:
          if (!Bracket(&p))
            return false;
          break;
        case kMultiByte:
          if (!MultiByte(&p, &space))
            return false;
          break;
        default:
          return Syntax("control character that XML does not allow", p);
      }
      if (!seen_text && !space) {
        *nonspace = at;
        seen_text = true;
      }
    }
    p_ = p;
    return true;
  }

  // '&' at *cursor: one of the five predefined entities or a character reference.
  bool Reference(const Byte** cursor, bool* space) {
    const Byte* const amp = *cursor;
    const Byte* p = amp + 1;
    if (p < end_ && *p == '#') {
      ++p;
      const bool hex = p < end_ && *p == 'x';  // only lower-case 'x' marks hex
      if (hex)
        ++p;
      const Byte* const digits = p;
      std::uint32_t value = 0;
      for (; p < end_; ++p) {
        std::uint32_t digit = 0;
        if (*p >= '0' && *p <= '9') {
          digit = *p - '0';
        } else if (hex && (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f') {
          digit = (*p | 0x20) - 'a' + 10;
        } else {
          break;
        }
        value = value * (hex ? 16 : 10) + digit;
        if (value > 0x10FFFF)
          value = 0x110000;  // saturate: more digits cannot bring it back
      }
      if (p == digits || p == end_ || *p != ';') {
        return Syntax("malformed character reference", amp);
      }
      if (value > 0x10FFFF)
        return Syntax("character reference beyond U+10FFFF", amp);
      if (IsSurrogate(value))
        return Syntax("character reference to a surrogate", amp);
      if (!IsXmlChar(value)) {
        return Syntax("character reference to a character XML does not allow", amp);
      }
      *space = IsUnicodeSpace(value);
      *cursor = p + 1;
      return true;
    }
    static constexpr std::array<std::string_view, 5> kEntities = {"lt;", "gt;", "amp;", "apos;",
                                                                  "quot;"};
    const std::string_view rest = View(p, end_).substr(0, 5);  // the longest is "quot;"
    for (const std::string_view entity : kEntities) {
      if (rest.starts_with(entity)) {
        *space = false;
        *cursor = p + entity.size();
        return true;
      }
    }
    return Syntax("undefined entity or bare '&'", amp);
  }

  // ']' at *cursor: fine unless it starts "]]>".
  bool Bracket(const Byte** cursor) {
    const Byte* const p = *cursor;
    if (end_ - p >= 3 && p[1] == ']' && p[2] == '>')
      return Syntax("']]>' outside CDATA", p);
    *cursor = p + 1;
    return true;
  }

  // A byte >= 0x80 at *cursor: a whole, well-formed UTF-8 sequence of an XML Char.
  bool MultiByte(const Byte** cursor, bool* space) {
    const Utf8Char c = DecodeUtf8(*cursor, end_);
    if (c.length == 0)
      return Syntax("invalid UTF-8", *cursor);
    if (!IsXmlChar(c.code_point))
      return Syntax("character that XML does not allow", *cursor);
    *space = IsUnicodeSpace(c.code_point);
    *cursor += c.length;
    return true;
  }

  // ---- Tags -----------------------------------------------------------------------------

  // Reads a name at p_: the longest run of name bytes, then checked against the XML 1.0 name
  // rules. `missing` is the detail when no name starts at p_.
  bool Name(std::string_view* name, const char* missing) {
    const Byte* const start = p_;
    while (p_ < end_ && kNameByte[*p_])
      ++p_;
    if (p_ == end_)
      return Syntax("end of input inside markup", end_);
    if (p_ == start)
      return Syntax(missing, start);
    *name = View(start, p_);
    if (!IsXmlName(start, p_))
      return Syntax("invalid XML name", start);
    return true;
  }

  static bool IsXmlName(const Byte* p, const Byte* end) {
    bool first = true;
    while (p < end) {
      const Utf8Char c = DecodeUtf8(p, end);
      if (c.length == 0)
        return false;
      if (!(first ? IsNameStartChar(c.code_point) : IsNameChar(c.code_point)))
        return false;
      first = false;
      p += c.length;
    }
    return true;
  }

  bool QualifiedNameAt(QualifiedName* name, const char* missing) {
    const Byte* const start = p_;
    if (!Name(&name->raw, missing))
      return false;
    const std::size_t colon = name->raw.find(':');
    name->local = name->raw;
    name->prefixed = false;
    if (colon == std::string_view::npos)
      return true;
    if (name->raw.find(':', colon + 1) != std::string_view::npos) {
      return Syntax("name with more than one ':'", start);
    }
    if (colon != 0 && colon + 1 != name->raw.size()) {
      name->local = name->raw.substr(colon + 1);
      name->prefixed = true;
    }
    return true;
  }

  bool StartTag() {
    const Byte* const tag = p_;
    ++p_;
    QualifiedName name;
    if (!QualifiedNameAt(&name, "'<' not followed by a name"))
      return false;
    const Byte* first_attribute = nullptr;
    bool self_closing = false;
    for (;;) {
      SkipTagSpace();
      if (p_ == end_)
        return Syntax("end of input inside a start tag", end_);
      if (*p_ == '>') {
        ++p_;
        break;
      }
      if (*p_ == '/') {
        if (end_ - p_ < 2)
          return Syntax("end of input inside a start tag", end_);
        if (p_[1] != '>')
          return Syntax("'/' not followed by '>' in a start tag", p_);
        p_ += 2;
        self_closing = true;
        break;
      }
      if (first_attribute == nullptr)
        first_attribute = p_;
      if (!Attribute())
        return false;
    }
    return OpenElement(name, tag, first_attribute, self_closing);
  }

  // name S? '=' S? quoted-value. Attributes are never allowed, but a malformed one is
  // xml_syntax and the tag must be read to its end before the structural rule applies.
  bool Attribute() {
    QualifiedName name;
    if (!QualifiedNameAt(&name, "expected an attribute name"))
      return false;
    SkipTagSpace();
    if (p_ == end_)
      return Syntax("end of input inside a start tag", end_);
    if (*p_ != '=')
      return Syntax("attribute without '='", p_);
    ++p_;
    SkipTagSpace();
    if (p_ == end_)
      return Syntax("end of input inside a start tag", end_);
    const Byte quote = *p_;
    if (quote != '"' && quote != '\'')
      return Syntax("unquoted attribute value", p_);
    const Byte* p = p_ + 1;
    while (p < end_) {
      if (*p == quote) {
        p_ = p + 1;
        return true;
      }
      bool space = false;
      switch (kByteClass[*p]) {
        case kPlain:
        case kSpace:
          ++p;
          break;
        case kLess:
          return Syntax("'<' inside an attribute value", p);
        case kAmpersand:
          if (!Reference(&p, &space))
            return false;
          break;
        case kBracket:
          if (!Bracket(&p))
            return false;
          break;
        case kMultiByte:
          if (!MultiByte(&p, &space))
            return false;
          break;
        default:
          return Syntax("control character that XML does not allow", p);
      }
    }
    return Syntax("end of input inside an attribute value", end_);
  }

  bool OpenElement(const QualifiedName& name, const Byte* tag, const Byte* first_attribute,
                   bool self_closing) {
    switch (place_) {
      case Place::kBeforeRoot:
        if (name.local != kRoot) {
          return Report(InvalidSummaryReason::kXmlRoot,
                        "the first element is not <conversation_summary>", tag);
        }
        if (name.prefixed)
          return Structure("the root element has a namespace prefix", tag);
        if (first_attribute != nullptr) {
          return Structure("the root element has attributes", first_attribute);
        }
        if (self_closing)
          return Structure("the root element ends before its sections", tag);
        place_ = Place::kInRoot;
        return true;
      case Place::kInRoot:
        if (next_section_ == kSectionCount)
          return Structure("element after <open_items>", tag);
        if (name.raw != kSections[next_section_]) {
          for (const std::string_view section : kSections) {
            if (name.raw == section)
              return Structure("section out of order or repeated", tag);
          }
          return Structure("unexpected element inside <conversation_summary>", tag);
        }
        if (first_attribute != nullptr) {
          return Structure("a section element has attributes", first_attribute);
        }
        section_tag_[next_section_] = static_cast<std::size_t>(tag - begin_);
        if (self_closing) {
          ++next_section_;
        } else {
          place_ = Place::kInSection;
        }
        return true;
      case Place::kInSection:
        return Structure("element inside a section", tag);
      case Place::kAfterRoot:
        return Structure("element after the root element", tag);
    }
    return true;
  }

  bool EndTag() {
    const Byte* const tag = p_;
    p_ += 2;
    QualifiedName name;
    if (!QualifiedNameAt(&name, "'</' not followed by a name"))
      return false;
    SkipTagSpace();
    if (p_ == end_)
      return Syntax("end of input inside an end tag", end_);
    if (*p_ != '>')
      return Syntax("unexpected character in an end tag", p_);
    ++p_;
    switch (place_) {
      case Place::kBeforeRoot:
      case Place::kAfterRoot:
        return Syntax("end tag without a start tag", tag);
      case Place::kInSection:
        if (name.raw != kSections[next_section_])
          return Syntax("end tag does not match", tag);
        ++next_section_;
        place_ = Place::kInRoot;
        return true;
      case Place::kInRoot:
        if (name.raw != kRoot)
          return Syntax("end tag does not match", tag);
        if (next_section_ != kSectionCount) {
          return Structure("the root element ends before all five sections", tag);
        }
        place_ = Place::kAfterRoot;
        return true;
    }
    return true;
  }

  // ---- Markup that is never allowed -----------------------------------------------------

  // "<?target ...?>": xml_structure once it is well-formed, wherever it is.
  bool ProcessingInstruction() {
    const Byte* const tag = p_;
    p_ += 2;
    std::string_view target;
    if (!Name(&target, "'<?' not followed by a target name"))
      return false;
    SkipTagSpace();
    const Byte* const body = p_;
    const Byte* const close = Find(body, "?>");
    if (close == nullptr)
      return Syntax("unterminated processing instruction", tag);
    if (target == "xml") {
      const std::string_view declaration = View(body, close);
      const std::string_view version = PseudoAttribute(declaration, "version=");
      if (!version.empty() && version != "1.0") {
        return Syntax("XML declaration of a version other than 1.0", tag);
      }
      const std::string_view encoding = PseudoAttribute(declaration, "encoding=");
      if (!encoding.empty() && !EqualsIgnoringAsciiCase(encoding, "utf-8")) {
        return Syntax("XML declaration of an encoding other than UTF-8", tag);
      }
      return Structure("XML declaration", tag);
    }
    return Structure("processing instruction", tag);
  }

  // "<!": a comment, a CDATA section or a directive (DOCTYPE, ENTITY, ...). Each is
  // xml_structure once it is well-formed, wherever it is.
  bool MarkupDeclaration() {
    const Byte* const tag = p_;
    const Byte* p = p_ + 2;
    if (p == end_)
      return Syntax("end of input after '<!'", end_);
    if (*p == '-') {
      ++p;
      if (p == end_)
        return Syntax("end of input after '<!-'", end_);
      if (*p != '-')
        return Syntax("'<!-' not followed by '-'", tag);
      // The first "--" in the body must be the start of the closing "-->".
      const Byte* const dashes = Find(p + 1, "--");
      if (dashes == nullptr || dashes + 2 == end_)
        return Syntax("unterminated comment", tag);
      if (dashes[2] != '>')
        return Syntax("'--' inside a comment", dashes);
      return Structure("comment", tag);
    }
    if (*p == '[') {
      static constexpr std::string_view kCdata = "CDATA[";
      for (const char expected : kCdata) {
        if (++p == end_)
          return Syntax("end of input inside '<!['", end_);
        if (*p != static_cast<Byte>(expected))
          return Syntax("'<![' not followed by 'CDATA['", tag);
      }
      return Structure("CDATA section", tag);
    }
    return Directive(tag, p + 1);
  }

  // The body of "<!X...>" from `p`: ends at the first '>' outside quotes that closes it; '<'
  // opens a nested declaration, and "<!--" a comment that ends at the first "-->".
  bool Directive(const Byte* tag, const Byte* p) {
    std::ptrdiff_t depth = 0;
    Byte quote = 0;
    for (;;) {
      if (p == end_)
        return Syntax("unterminated directive", tag);
      Byte b = *p++;
      if (quote == 0 && b == '>' && depth == 0)
        return Structure("directive", tag);
      // A '<' that does not open a comment opens a nested declaration, and the byte that
      // showed it is examined again as ordinary directive text.
      for (bool examine = true; examine;) {
        examine = false;
        if (b == quote) {
          quote = 0;
        } else if (quote != 0) {
          // inside quotes nothing is special
        } else if (b == '\'' || b == '"') {
          quote = b;
        } else if (b == '>') {
          --depth;
        } else if (b == '<') {
          static constexpr std::string_view kComment = "!--";
          bool comment = true;
          for (const char expected : kComment) {
            if (p == end_)
              return Syntax("unterminated directive", tag);
            b = *p++;
            if (b != static_cast<Byte>(expected)) {
              comment = false;
              break;
            }
          }
          if (!comment) {
            ++depth;
            examine = true;
            continue;
          }
          const Byte* const close = Find(p, "-->");
          if (close == nullptr)
            return Syntax("unterminated comment inside a directive", tag);
          p = close + 3;
        }
      }
    }
  }

  // ---- End of input ---------------------------------------------------------------------

  bool EndOfInput() {
    switch (place_) {
      case Place::kBeforeRoot:  // only an empty input gets here: any token fails earlier
        return Report(InvalidSummaryReason::kXmlRoot, "empty input", end_);
      case Place::kInRoot:
      case Place::kInSection:
        return Syntax("end of input before the root element is closed", end_);
      case Place::kAfterRoot:
        break;
    }
    for (const std::size_t section : {kGoal, kState}) {
      if (!section_has_text_[section]) {
        return Report(InvalidSummaryReason::kXmlContent,
                      section == kGoal ? "<goal> is blank" : "<state> is blank",
                      begin_ + section_tag_[section]);
      }
    }
    return true;
  }

  const Byte* const begin_;
  const Byte* const end_;
  const Byte* p_;
  Place place_ = Place::kBeforeRoot;
  // The section expected next inside the root; while place_ is kInSection, the open one.
  std::size_t next_section_ = 0;
  std::array<bool, kSectionCount> section_has_text_{};
  std::array<std::size_t, kSectionCount> section_tag_{};
  Problem problem_;
};

}  // namespace

Result<UserMessage, InvalidSummaryError> ParseSummary(std::string_view raw) {
  Validator validator(raw);
  if (validator.Run()) {
    UserMessage message;
    message.blocks.emplace_back(TextBlock{std::string(raw)});
    return message;
  }
  Problem problem = validator.problem();
  // Step 0 of the classification. It runs here, after the scan, because a document the scan
  // accepts cannot contain "<![CDATA[": every '<' in it opens a tag. So only failures pay for it.
  if (const std::size_t cdata = raw.find("<![CDATA["); cdata != std::string_view::npos) {
    problem = {InvalidSummaryReason::kXmlStructure, "CDATA section", cdata};
  }
  return Fail(InvalidSummaryError{problem.reason, problem.detail, problem.offset});
}

}  // namespace harness
