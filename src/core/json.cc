#include "harness/core/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace harness {
namespace {

// Builds the document while nlohmann's iterative parser walks the input, so that duplicate
// members and excessive depth are refused at the point they occur rather than after a whole
// (possibly huge) tree has been built.
//
// Restore decodes every journal record through here, so the common case allocates nothing
// beyond the document itself: duplicate names are found by scanning the object's members while
// it is small (a hash set of its names is built only once it is wide), and the path of the open
// containers, which only an error needs, is derived from the stack when one occurs.
class StrictDomBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  StrictDomBuilder(Json& root, std::size_t max_depth) : root_(root), max_depth_(max_depth) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return Put(Json(v)); }
  bool string(string_t& v) { return Put(Json(std::move(v))); }
  bool binary(binary_t&) { return Fail(JsonErrorKind::kSyntax, "binary value"); }

  bool start_object(std::size_t) {
    if (!Open(Json::object()))
      return false;
    wide_names_.emplace_back();
    return true;
  }
  bool key(string_t& name) {
    if (IsDuplicate(name)) {
      error_ = JsonError{JsonErrorKind::kDuplicateMember, Path(), 0,
                         fmt::format("duplicate member {}", QuoteForDetail(name, 40))};
      return false;
    }
    pending_key_ = std::move(name);
    return true;
  }
  bool end_object() {
    wide_names_.pop_back();
    return Close();
  }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
    // nlohmann counts positions from 1 at the character after the failure point.
    error_ = JsonError{JsonErrorKind::kSyntax, Path(), position > 0 ? position - 1 : 0,
                       "not well-formed JSON"};
    return false;
  }

  const std::optional<JsonError>& error() const { return error_; }

 private:
  using Members = Json::object_t::Container;
  // Up to this many members an object's names are compared one by one.
  static constexpr std::size_t kScannedMembers = 16;

  static Members& MembersOf(Json& object) {
    return static_cast<Members&>(object.get_ref<Json::object_t&>());
  }

  // Whether the open object (the top of the stack) already has a member `name`. Its members
  // are exactly the names key() accepted so far: each value is inserted before the next key.
  bool IsDuplicate(const string_t& name) {
    Members& members = MembersOf(*stack_.back());
    std::unordered_set<std::string>& wide = wide_names_.back();
    if (members.size() < kScannedMembers) {
      for (const auto& member : members) {
        if (member.first == name)
          return true;
      }
      return false;
    }
    if (wide.empty()) {
      for (const auto& member : members)
        wide.insert(member.first);
    }
    return !wide.insert(name).second;
  }

  bool Fail(JsonErrorKind kind, std::string detail) {
    error_ = JsonError{kind, Path(), 0, std::move(detail)};
    return false;
  }

  Json* Insert(Json&& value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    // key() already refused duplicates, so append directly: ordered_json's own emplace searches
    // the members linearly, which makes a wide object quadratic.
    Members& members = MembersOf(parent);
    members.emplace_back(std::move(pending_key_), std::move(value));
    return &members.back().second;
  }
  bool Put(Json&& value) {
    Insert(std::move(value));
    return true;
  }
  bool Open(Json&& container) {
    if (stack_.size() >= max_depth_) {
      return Fail(JsonErrorKind::kTooDeep, fmt::format("nesting deeper than {}", max_depth_));
    }
    stack_.push_back(Insert(std::move(container)));
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }
  // "$" and one segment per open container below the root: an open container is always the
  // last element of its parent (its own values go into it, not into the parent).
  std::string Path() const {
    std::string path = "$";
    for (std::size_t i = 1; i < stack_.size(); ++i) {
      Json& parent = *stack_[i - 1];
      if (parent.is_array()) {
        path.append(fmt::format("[{}]", parent.size() - 1));
      } else {
        path.push_back('.');
        path.append(MembersOf(parent).back().first);
      }
    }
    return path;
  }

  Json& root_;
  std::size_t max_depth_;
  std::vector<Json*> stack_;
  // Per open object: its names once it has kScannedMembers of them, else empty.
  std::vector<std::unordered_set<std::string>> wide_names_;
  std::string pending_key_;
  std::optional<JsonError> error_;
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

Result<Json, JsonError> ParseStrictJson(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Fail(
        JsonError{JsonErrorKind::kTooLarge, "$", limits.max_bytes,
                  fmt::format("{} bytes exceed the limit of {}", text.size(), limits.max_bytes)});
  }
  // nlohmann skips a leading byte-order mark; JSON (RFC 8259 §8.1) does not allow one.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    return Fail(JsonError{JsonErrorKind::kSyntax, "$", 0, "byte-order mark"});
  }
  Json root;
  StrictDomBuilder builder(root, limits.max_depth);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder,
                                  nlohmann::detail::input_format_t::json, /*strict=*/true,
                                  /*ignore_comments=*/false);
  if (!ok) {
    if (builder.error())
      return Fail(*builder.error());
    return Fail(JsonError{JsonErrorKind::kSyntax, "$", 0, "not well-formed JSON"});
  }
  return root;
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

namespace {

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not one.
std::size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80)
    return 1;
  std::size_t len;
  std::uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < len)
    return 0;
  std::uint32_t cp = b0 & (0xFF >> (len + 1));
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t len = Utf8SequenceLength(text.substr(i));
      if (len == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
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
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
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
