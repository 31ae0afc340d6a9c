#include "support/json_reference.h"

#include <fmt/format.h>

#include <optional>
#include <unordered_set>
#include <vector>

namespace harness::json_reference {
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

}  // namespace

bool StoppedAtNul(std::string_view input, const JsonError& ours) {
  return ours.kind == JsonErrorKind::kSyntax &&
         ours.detail == "not well-formed JSON: data after the value" &&
         ours.offset < input.size() && input[ours.offset] == '\0';
}

Result<Json, JsonError> ParseStrictJsonWithNlohmann(std::string_view text,
                                                    const JsonLimits& limits) {
  if (auto refused = RefuseJsonBeforeReading(text, limits))
    return Fail(std::move(*refused));
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

}  // namespace harness::json_reference
