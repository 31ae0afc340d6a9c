#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/core/chars.h"
#include "harness/core/utf8.h"

namespace harness {
namespace {

// The strict reader: one pass over the bytes, straight into the document (RFC 8259 with the
// contract of json.h). Restore decodes every journal record through here; nlohmann's lexer,
// which copies each byte through an input adapter into a token buffer, was a third of restore's
// decoding time. Iterative, with an explicit stack bounded by max_depth, so no input can exhaust
// the call stack. It accepts and builds exactly what the nlohmann-based reader it replaced did
// (numbers included: non-negative integers unsigned, negative ones signed, everything else and
// integers out of range double); tests/support/json_reference.h keeps that reader to check it
// against.
//
// Error offsets are the offset of the first byte that cannot continue a valid document (the end
// of the input when it stops short); paths name the innermost open container, as before.
class StrictParser {
 public:
  // With a sink, the elements of a root array are handed to it one by one as they complete
  // (ParseStrictJsonArray); the root array then holds at most the element being read.
  StrictParser(std::string_view text, std::size_t max_depth, const JsonElementSink* sink = nullptr)
      : text_(text), max_depth_(max_depth), sink_(sink) {}

  Result<Json, JsonError> Parse() {
    Json root;
    SkipSpace();
    if (!ParseValue(root))
      return Fail(std::move(*error_));
    const bool streaming = sink_ != nullptr && root.is_array();
    while (!frames_.empty()) {
      if (!Continue())
        return Fail(std::move(*error_));
      // Back in the root array with an element in it: that element is complete.
      if (streaming && frames_.size() == 1 && !root.empty() && !HandOver(root))
        return root;
    }
    SkipSpace();
    if (pos_ != text_.size()) {
      Syntax("data after the value");
      return Fail(std::move(*error_));
    }
    return root;
  }

  std::size_t handed_over() const { return handed_over_; }
  bool stopped() const { return stopped_; }

 private:
  using Members = Json::object_t::Container;
  // Up to this many members an object's names are compared one by one.
  static constexpr std::size_t kScannedMembers = 16;

  struct Frame {
    Json* container;
    bool object;
    bool empty = true;                     // nothing read into it yet
    std::unordered_set<std::string> wide;  // its names, once it has kScannedMembers of them
  };

  static Members& MembersOf(Json& object) {
    return static_cast<Members&>(object.get_ref<Json::object_t&>());
  }

  // One step in the innermost open container: its end, or its next member or element.
  bool Continue() {
    Frame& top = frames_.back();
    SkipSpace();
    const char close = top.object ? '}' : ']';
    if (Peek() == close) {
      ++pos_;
      frames_.pop_back();
      return true;
    }
    if (!top.empty) {
      if (Peek() != ',')
        return Syntax(top.object ? "expected ',' or '}'" : "expected ',' or ']'");
      ++pos_;
      SkipSpace();
    }
    top.empty = false;
    if (!top.object) {
      Json::array_t& elements = top.container->get_ref<Json::array_t&>();
      if (frames_.size() == 1)
        element_begin_ = pos_;
      elements.emplace_back();
      return ParseValue(elements.back());
    }
    if (Peek() != '"')
      return Syntax("expected a member name");
    std::string name;
    if (!ParseString(name))
      return false;
    if (IsDuplicate(top, name)) {
      // No offset: json.h gives one to syntax, size and depth errors only.
      error_ = JsonError{JsonErrorKind::kDuplicateMember, Path(), 0,
                         fmt::format("duplicate member {}", QuoteForDetail(name, 40))};
      return false;
    }
    SkipSpace();
    if (Peek() != ':')
      return Syntax("expected ':'");
    ++pos_;
    SkipSpace();
    // The member exists from here on, so its name is in Path() if its value is a container.
    Members& members = MembersOf(*top.container);
    members.emplace_back(std::move(name), Json());
    return ParseValue(members.back().second);
  }

  // Hands the root array's one (complete) element to the sink and releases it; false when the
  // sink stops the parse.
  bool HandOver(Json& root) {
    Json::array_t& elements = root.get_ref<Json::array_t&>();
    const bool go_on = (*sink_)(handed_over_, elements.back(),
                                text_.substr(element_begin_, pos_ - element_begin_));
    elements.clear();
    ++handed_over_;
    stopped_ = !go_on;
    return go_on;
  }

  // Whether the open object already has a member `name` (its members are exactly the names
  // accepted so far).
  bool IsDuplicate(Frame& frame, const std::string& name) {
    Members& members = MembersOf(*frame.container);
    if (members.size() < kScannedMembers) {
      for (const auto& member : members) {
        if (member.first == name)
          return true;
      }
      return false;
    }
    if (frame.wide.empty()) {
      for (const auto& member : members)
        frame.wide.insert(member.first);
    }
    return !frame.wide.insert(name).second;
  }

  // A value into `slot`; a container is opened (its contents come through Continue()).
  bool ParseValue(Json& slot) {
    switch (Peek()) {
      case '{':
      case '[': {
        const bool object = Peek() == '{';
        if (frames_.size() >= max_depth_) {
          error_ = JsonError{JsonErrorKind::kTooDeep, Path(), pos_,
                             fmt::format("nesting deeper than {}", max_depth_)};
          return false;
        }
        ++pos_;
        slot = object ? Json::object() : Json::array();
        frames_.push_back(Frame{&slot, object, true, {}});
        return true;
      }
      case '"': {
        std::string value;
        if (!ParseString(value))
          return false;
        slot = std::move(value);
        return true;
      }
      case 't':
        return Literal("true", slot, Json(true));
      case 'f':
        return Literal("false", slot, Json(false));
      case 'n':
        return Literal("null", slot, Json(nullptr));
      default:
        return ParseNumber(slot);
    }
  }

  bool Literal(std::string_view word, Json& slot, Json value) {
    for (std::size_t i = 0; i < word.size(); ++i) {
      if (pos_ + i >= text_.size() || text_[pos_ + i] != word[i]) {
        pos_ += i;
        return Syntax("not well-formed JSON");
      }
    }
    pos_ += word.size();
    slot = std::move(value);
    return true;
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool ParseNumber(Json& slot) {
    const std::size_t start = pos_;
    if (Peek() == '-')
      ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (IsDigit(Peek())) {
      while (IsDigit(Peek()))
        ++pos_;
    } else {
      return Syntax("not well-formed JSON");
    }
    bool integer = true;
    if (Peek() == '.') {
      ++pos_;
      if (!IsDigit(Peek()))
        return Syntax("a digit must follow the decimal point");
      while (IsDigit(Peek()))
        ++pos_;
      integer = false;
    }
    std::size_t exponent_at = 0;
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-')
        ++pos_;
      if (!IsDigit(Peek()))
        return Syntax("a digit must follow the exponent");
      exponent_at = pos_;
      while (IsDigit(Peek()))
        ++pos_;
      integer = false;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integer) {
      if (*first == '-') {
        std::int64_t value = 0;
        if (std::from_chars(first, last, value).ec == std::errc()) {
          slot = Json(static_cast<Json::number_integer_t>(value));
          return true;
        }
      } else {
        std::uint64_t value = 0;
        if (std::from_chars(first, last, value).ec == std::errc()) {
          slot = Json(static_cast<Json::number_unsigned_t>(value));
          return true;
        }
      }
      // Out of the integer range: a double, as before.
    }
    double value = 0;
    const auto parsed = std::from_chars(first, last, value);
    if (parsed.ec == std::errc()) {
      slot = Json(value);
      return true;
    }
    // Out of range: too small rounds to zero (as strtod does); too large is refused.
    if (Underflows(start, exponent_at)) {
      slot = Json(*first == '-' ? -0.0 : 0.0);
      return true;
    }
    pos_ = start;
    return Syntax("number out of range");
  }

  // Whether the number at `start` (grammar checked; exponent digits at `exponent_at`, 0 for
  // none) is smaller than 1 in magnitude: its decimal exponent, integer digits included, < 0.
  bool Underflows(std::size_t start, std::size_t exponent_at) const {
    std::size_t i = start + (text_[start] == '-' ? 1 : 0);
    // Integer digits beyond a leading zero, or the zeros after the point before the first
    // nonzero digit.
    long long magnitude = 0;
    if (text_[i] == '0') {
      ++i;
      if (i < text_.size() && text_[i] == '.') {
        ++i;
        while (i < text_.size() && text_[i] == '0') {
          --magnitude;
          ++i;
        }
        --magnitude;
      } else {
        magnitude = -1;  // zero itself: never out of range, but never "large" either
      }
    } else {
      while (i < text_.size() && IsDigit(text_[i])) {
        ++magnitude;
        ++i;
      }
    }
    long long exponent = 0;
    if (exponent_at != 0) {
      const bool negative = text_[exponent_at - 1] == '-';
      for (std::size_t j = exponent_at; j < text_.size() && IsDigit(text_[j]); ++j)
        exponent = std::min<long long>(exponent * 10 + (text_[j] - '0'), 1'000'000'000);
      if (negative)
        exponent = -exponent;
    }
    return magnitude + exponent < 0;
  }

  // Four hex digits at pos_ (after "\u"); -1 and an error if they are not.
  long Hex4() {
    long value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = pos_ < text_.size() ? HexDigitValue(text_[pos_]) : -1;
      if (digit < 0) {
        Syntax("\\u must be followed by four hex digits");
        return -1;
      }
      value = value * 16 + digit;
      ++pos_;
    }
    return value;
  }

  // A string at pos_ (its opening quote) into `out`; pos_ ends after the closing quote.
  bool ParseString(std::string& out) {
    ++pos_;
    std::size_t run = pos_;  // start of the bytes not yet copied
    for (;;) {
      if (pos_ >= text_.size())
        return Syntax("unterminated string");
      const auto b = static_cast<unsigned char>(text_[pos_]);
      if (b == '"') {
        out.append(text_.data() + run, pos_ - run);
        ++pos_;
        return true;
      }
      if (b < 0x20)
        return Syntax("control character in a string");
      if (b < 0x80 && b != '\\') {
        ++pos_;
        continue;
      }
      if (b >= 0x80) {
        const std::size_t length = DecodeUtf8(text_, pos_).length;
        if (length == 0)
          return Syntax("invalid UTF-8");
        pos_ += length;
        continue;
      }
      out.append(text_.data() + run, pos_ - run);
      ++pos_;  // the backslash
      if (!Escape(out))
        return false;
      run = pos_;
    }
  }

  // The escape after a backslash (pos_ at its letter), appended to `out`.
  bool Escape(std::string& out) {
    const char c = Peek();
    ++pos_;
    switch (c) {
      case '"':
        out.push_back('"');
        return true;
      case '\\':
        out.push_back('\\');
        return true;
      case '/':
        out.push_back('/');
        return true;
      case 'b':
        out.push_back('\b');
        return true;
      case 'f':
        out.push_back('\f');
        return true;
      case 'n':
        out.push_back('\n');
        return true;
      case 'r':
        out.push_back('\r');
        return true;
      case 't':
        out.push_back('\t');
        return true;
      case 'u':
        break;
      default:
        --pos_;
        return Syntax("invalid escape");
    }
    const long unit = Hex4();
    if (unit < 0)
      return false;
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
      pos_ -= 6;
      return Syntax("lone low surrogate escape");
    }
    if (unit < 0xD800 || unit > 0xDBFF) {
      AppendUtf8(out, static_cast<std::uint32_t>(unit));
      return true;
    }
    if (Peek() != '\\' || pos_ + 1 >= text_.size() || text_[pos_ + 1] != 'u')
      return Syntax("a high surrogate escape must be followed by a low one");
    pos_ += 2;
    const long low = Hex4();
    if (low < 0)
      return false;
    if (low < 0xDC00 || low > 0xDFFF) {
      pos_ -= 6;
      return Syntax("a high surrogate escape must be followed by a low one");
    }
    AppendUtf8(out, 0x10000 + ((static_cast<std::uint32_t>(unit) - 0xD800) << 10) +
                        (static_cast<std::uint32_t>(low) - 0xDC00));
    return true;
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
        return;
      ++pos_;
    }
  }

  // Every syntax detail starts "not well-formed JSON" (callers and their tests look for it).
  bool Syntax(std::string_view what) {
    std::string detail = "not well-formed JSON";
    if (what != detail)
      detail.append(": ").append(what);
    error_ = JsonError{JsonErrorKind::kSyntax, Path(), pos_, std::move(detail)};
    return false;
  }

  // "$" and one segment per open container below the root: an open container is always the
  // last member or element of its parent.
  std::string Path() const {
    std::string path = "$";
    for (std::size_t i = 1; i < frames_.size(); ++i) {
      Json& parent = *frames_[i - 1].container;
      if (!frames_[i - 1].object) {
        // The root array of a streamed document holds only the element being read.
        const std::size_t released = i == 1 ? handed_over_ : 0;
        path.append(fmt::format("[{}]", released + parent.size() - 1));
      } else {
        path.push_back('.');
        path.append(MembersOf(parent).back().first);
      }
    }
    return path;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t max_depth_;
  std::vector<Frame> frames_;
  std::optional<JsonError> error_;
  const JsonElementSink* sink_;
  std::size_t element_begin_ = 0;  // where the root array's current element starts
  std::size_t handed_over_ = 0;
  bool stopped_ = false;
};

JsonError TypeError(std::string_view path, const Json& v, std::string_view expected) {
  return JsonError{JsonErrorKind::kType, std::string(path), 0,
                   fmt::format("expected {}, found {}", expected, JsonTypeName(v))};
}

}  // namespace

const char* JsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_float:
      return "a non-integer number";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    default:
      return "an unsupported value";
  }
}

std::string_view JsonErrorKindName(JsonErrorKind kind) {
  switch (kind) {
    case JsonErrorKind::kTooLarge:
      return "too_large";
    case JsonErrorKind::kTooDeep:
      return "too_deep";
    case JsonErrorKind::kSyntax:
      return "syntax";
    case JsonErrorKind::kDuplicateMember:
      return "duplicate_member";
    case JsonErrorKind::kUnknownMember:
      return "unknown_member";
    case JsonErrorKind::kMissingMember:
      return "missing_member";
    case JsonErrorKind::kType:
      return "type";
    case JsonErrorKind::kRange:
      return "range";
  }
  return "unknown";
}

std::string JsonError::Describe() const {
  std::string out = fmt::format("{} at {}", JsonErrorKindName(kind), path);
  if (kind == JsonErrorKind::kSyntax || kind == JsonErrorKind::kTooLarge) {
    out += fmt::format(" (byte {})", offset);
  }
  if (!detail.empty())
    out += ": " + detail;
  return out;
}

std::optional<JsonError> RefuseJsonBeforeReading(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return JsonError{JsonErrorKind::kTooLarge, "$", limits.max_bytes,
                     fmt::format("{} bytes exceed the limit of {}", text.size(), limits.max_bytes)};
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    return JsonError{JsonErrorKind::kSyntax, "$", 0, "byte-order mark"};
  return std::nullopt;
}

Result<Json, JsonError> ParseStrictJson(std::string_view text, const JsonLimits& limits) {
  if (auto refused = RefuseJsonBeforeReading(text, limits))
    return Fail(std::move(*refused));
  return StrictParser(text, limits.max_depth).Parse();
}

Result<JsonArrayRead, JsonError> ParseStrictJsonArray(std::string_view text,
                                                      const JsonLimits& limits,
                                                      const JsonElementSink& element) {
  if (auto refused = RefuseJsonBeforeReading(text, limits))
    return Fail(std::move(*refused));
  StrictParser parser(text, limits.max_depth, &element);
  HARNESS_TRY(Json root, parser.Parse());
  JsonArrayRead read;
  read.elements = parser.handed_over();
  read.stopped = parser.stopped();
  if (!root.is_array())
    read.root = std::move(root);
  return read;
}

Result<std::string, JsonError> JsonAsString(const Json& value, std::string_view path) {
  if (!value.is_string())
    return Fail(TypeError(path, value, "a string"));
  return value.get<std::string>();
}

Result<std::uint64_t, JsonError> JsonAsUint(const Json& value, std::string_view path,
                                            std::uint64_t max) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > max) {
      return Fail(JsonError{JsonErrorKind::kRange, std::string(path), 0,
                            fmt::format("{} exceeds the maximum {}", v, max)});
    }
    return v;
  }
  if (value.is_number_integer()) {
    return Fail(JsonError{JsonErrorKind::kRange, std::string(path), 0, "negative integer"});
  }
  return Fail(TypeError(path, value, "a non-negative integer"));
}

Result<bool, JsonError> JsonAsBool(const Json& value, std::string_view path) {
  if (!value.is_boolean())
    return Fail(TypeError(path, value, "a boolean"));
  return value.get<bool>();
}

Result<JsonObject, JsonError> JsonObject::Open(const Json& value, std::string path) {
  if (!value.is_object())
    return Fail(TypeError(path, value, "an object"));
  return JsonObject(value, std::move(path));
}

std::string JsonObject::MemberPath(std::string_view name) const {
  return fmt::format("{}.{}", path_, name);
}

std::string JsonObject::ElementPath(std::string_view name, std::size_t index) const {
  return fmt::format("{}.{}[{}]", path_, name, index);
}

void JsonObject::MarkKnown(std::size_t index) {
  if (index < 64) {
    known_first_ |= std::uint64_t{1} << index;
    return;
  }
  if (known_rest_.size() <= index - 64)
    known_rest_.resize(index - 64 + 1);
  known_rest_[index - 64] = true;
}

bool JsonObject::IsKnown(std::size_t index) const {
  if (index < 64)
    return (known_first_ >> index) & 1u;
  return index - 64 < known_rest_.size() && known_rest_[index - 64];
}

const Json* JsonObject::Find(std::string_view name) {
  const auto& members =
      static_cast<const Json::object_t::Container&>(value_->get_ref<const Json::object_t&>());
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].first == name) {
      MarkKnown(i);
      return &members[i].second;
    }
  }
  return nullptr;
}

Result<const Json*, JsonError> JsonObject::Require(std::string_view name) {
  const Json* member = Find(name);
  if (member == nullptr) {
    return Fail(JsonError{JsonErrorKind::kMissingMember, MemberPath(name), 0,
                          fmt::format("missing member \"{}\"", name)});
  }
  return member;
}

Result<const Json*, JsonError> JsonObject::RequireNonNull(std::string_view name) {
  HARNESS_TRY(const Json* member, Require(name));
  if (member->is_null())
    return Fail(TypeError(MemberPath(name), *member, "a value"));
  return member;
}

// The typed reads name the member's path only when they fail.
Result<std::string, JsonError> JsonObject::RequireString(std::string_view name) {
  HARNESS_TRY(const Json* member, Require(name));
  if (member->is_string())
    return member->get_ref<const std::string&>();
  return JsonAsString(*member, MemberPath(name));
}

Result<std::uint64_t, JsonError> JsonObject::RequireUint(std::string_view name, std::uint64_t max) {
  HARNESS_TRY(const Json* member, Require(name));
  if (member->is_number_unsigned() && member->get<std::uint64_t>() <= max)
    return member->get<std::uint64_t>();
  return JsonAsUint(*member, MemberPath(name), max);
}

Result<bool, JsonError> JsonObject::RequireBool(std::string_view name) {
  HARNESS_TRY(const Json* member, Require(name));
  if (member->is_boolean())
    return member->get<bool>();
  return JsonAsBool(*member, MemberPath(name));
}

Status<JsonError> JsonObject::RejectUnknown() const {
  const auto& members =
      static_cast<const Json::object_t::Container&>(value_->get_ref<const Json::object_t&>());
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!IsKnown(i)) {
      return Fail(
          JsonError{JsonErrorKind::kUnknownMember, path_, 0,
                    fmt::format("unknown member {}", QuoteForDetail(members[i].first, 40))});
    }
  }
  return {};
}

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const Utf8Char character = DecodeUtf8OrReplacement(text, i);
      if (character.replaced)
        out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
      else
        out.append(text.substr(i, character.length));
      i += character.length;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          AppendHexByte(out, c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

std::string QuoteForDetail(std::string_view bytes, std::size_t max_bytes) {
  std::string out = "\"";
  const std::size_t n = std::min(bytes.size(), max_bytes);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out += bytes.size() > max_bytes ? "\"…" : "\"";
  return out;
}

}  // namespace harness
