#include "content/internal/raw_json.h"

#include <exception>
#include <vector>

#include "core/internal/json_dom.h"

namespace harness::raw_json {
namespace {

bool IsJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t SkipSpace(std::string_view text, std::size_t pos) {
  while (pos < text.size() && IsJsonSpace(text[pos]))
    ++pos;
  return pos;
}

// `pos` is at the opening quote; returns the position after the closing quote.
std::size_t SkipString(std::string_view text, std::size_t pos) {
  ++pos;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '\\') {
      pos += 2;  // the escaped character; \uXXXX continues with plain hex digits
    } else if (c == '"') {
      return pos + 1;
    } else {
      ++pos;
    }
  }
  return text.size();
}

// A number or literal: runs up to the next structural character or white space.
std::size_t SkipBareToken(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ',' || c == ']' || c == '}' || c == ':' || IsJsonSpace(c))
      break;
    ++pos;
  }
  return pos;
}

// `pos` is at the first byte of a value; returns the position after it. Iterative.
std::size_t SkipValue(std::string_view text, std::size_t pos) {
  if (pos >= text.size())
    return pos;
  if (text[pos] == '"')
    return SkipString(text, pos);
  if (text[pos] != '{' && text[pos] != '[')
    return SkipBareToken(text, pos);
  std::size_t depth = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '"') {
      pos = SkipString(text, pos);
      continue;
    }
    ++pos;
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        return pos;
    }
  }
  return pos;
}

bool IsRawMemberName(const std::string& name) {
  return name == "input" || name == "provider_state";
}

}  // namespace

void AppendCompactJson(std::string& out, std::string_view valid_json) {
  std::size_t pos = 0;
  while (pos < valid_json.size()) {
    const char c = valid_json[pos];
    if (c == '"') {
      const std::size_t end = SkipString(valid_json, pos);
      out.append(valid_json.substr(pos, end - pos));
      pos = end;
    } else {
      if (!IsJsonSpace(c))
        out.push_back(c);
      ++pos;
    }
  }
}

std::string CompactJson(std::string_view valid_json) {
  std::string out;
  out.reserve(valid_json.size());
  AppendCompactJson(out, valid_json);
  return out;
}

void CollectRawSpans(const Json& root, std::string_view text, RawSpans& spans) {
  struct Frame {
    const Json* node;
    Json::const_iterator next;
    bool first;
  };
  std::vector<Frame> stack;
  std::size_t pos = SkipSpace(text, 0);
  // Enters `value` whose text starts at `pos`.
  const auto enter = [&](const Json& value) {
    if (value.is_object() || value.is_array()) {
      ++pos;  // '{' or '['
      stack.push_back(Frame{&value, value.cbegin(), true});
    } else {
      pos = SkipValue(text, pos);
    }
  };
  enter(root);
  while (!stack.empty() && pos < text.size()) {
    Frame& top = stack.back();
    pos = SkipSpace(text, pos);
    if (top.next == top.node->cend()) {
      ++pos;  // '}' or ']'
      stack.pop_back();
      continue;
    }
    if (!top.first)
      pos = SkipSpace(text, pos + 1);  // ','
    top.first = false;
    const Json& child = *top.next;
    if (top.node->is_object()) {
      const std::string& name = top.next.key();
      pos = SkipString(text, SkipSpace(text, pos));
      pos = SkipSpace(text, SkipSpace(text, pos) + 1);  // ':'
      ++top.next;
      if (IsRawMemberName(name)) {
        const std::size_t begin = pos;
        pos = SkipValue(text, pos);
        spans[&child] = text.substr(begin, pos - begin);
        continue;
      }
    } else {
      ++top.next;
    }
    enter(child);  // may invalidate `top`
  }
}

std::size_t JsonDepth(const Json& value, std::size_t limit) {
  struct Frame {
    const Json* node;
    Json::const_iterator next;
  };
  if (!value.is_object() && !value.is_array())
    return 0;
  std::vector<Frame> stack{Frame{&value, value.cbegin()}};
  std::size_t deepest = 1;
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == top.node->cend()) {
      stack.pop_back();
      continue;
    }
    const Json& child = *top.next;
    ++top.next;
    if (child.is_object() || child.is_array()) {
      if (stack.size() + 1 > limit)
        return limit + 1;
      stack.push_back(Frame{&child, child.cbegin()});
      if (stack.size() > deepest)
        deepest = stack.size();
    }
  }
  return deepest;
}

std::optional<std::string> CompactJsonFromDom(const Json& value) {
  try {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (const std::exception&) {
    return std::nullopt;  // not expected for a DOM the JSON parser built; reported, not hidden
  }
}

}  // namespace harness::raw_json
