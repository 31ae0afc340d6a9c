// Codex's code mode: the tool calls inside the JavaScript program of an `exec` call
// (import_internal.h, docs/import.md).
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

// Walks JavaScript source one character at a time, knowing whether it is inside a string, a
// template literal or a comment, so that brackets and names are only seen in code.
class JsScanner {
 public:
  explicit JsScanner(std::string_view text, std::size_t at = 0) : text_(text), at_(at) {}

  bool done() const { return at_ >= text_.size(); }
  std::size_t at() const { return at_; }
  // Whether the character at at() is code (not in a string, template or comment).
  bool in_code() const { return state_ == State::kCode && !Opens(); }

  void Advance() {
    const char c = text_[at_];
    const char next = at_ + 1 < text_.size() ? text_[at_ + 1] : '\0';
    switch (state_) {
      case State::kCode:
        if (c == '/' && next == '/')
          state_ = State::kLineComment;
        else if (c == '/' && next == '*')
          state_ = State::kBlockComment, ++at_;
        else if (c == '"' || c == '\'' || c == '`')
          state_ = State::kString, quote_ = c;
        break;
      case State::kLineComment:
        if (c == '\n')
          state_ = State::kCode;
        break;
      case State::kBlockComment:
        if (c == '*' && next == '/')
          state_ = State::kCode, ++at_;
        break;
      case State::kString:
        if (c == '\\')
          ++at_;
        else if (c == quote_)
          state_ = State::kCode;
        break;
    }
    ++at_;
  }

 private:
  enum class State { kCode, kLineComment, kBlockComment, kString };

  // Whether the character at at() starts a comment or a string (so it is not code itself).
  bool Opens() const {
    const char c = text_[at_];
    const char next = at_ + 1 < text_.size() ? text_[at_ + 1] : '\0';
    return c == '"' || c == '\'' || c == '`' || (c == '/' && (next == '/' || next == '*'));
  }

  std::string_view text_;
  std::size_t at_;
  State state_ = State::kCode;
  char quote_ = 0;
};

// A JavaScript string literal at `at` (quote `'`, `"` or a template without substitutions) as a
// JSON string appended to `out`; false when it is not one this reader can translate. `at` ends
// after the closing quote.
bool AppendJsString(std::string_view text, std::size_t& at, std::string& out) {
  const char quote = text[at++];
  out.push_back('"');
  while (at < text.size() && text[at] != quote) {
    const char c = text[at++];
    if (quote == '`' && c == '$' && at < text.size() && text[at] == '{')
      return false;  // a template with a substitution is an expression, not a value
    if (c == '\\') {
      if (at >= text.size())
        return false;
      const char e = text[at++];
      switch (e) {
        case 'n':
          out.append("\\n");
          break;
        case 't':
          out.append("\\t");
          break;
        case 'r':
          out.append("\\r");
          break;
        case 'b':
          out.append("\\b");
          break;
        case 'f':
          out.append("\\f");
          break;
        case 'v':
          out.append("\\u000b");
          break;
        case '0':
          out.append("\\u0000");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '"':
          out.append("\\\"");
          break;
        case '\n':
          break;  // a line continuation
        case 'u':
          if (at + 4 > text.size() || text[at] == '{')
            return false;
          out.append("\\u").append(text.substr(at, 4));
          at += 4;
          break;
        case 'x':
          if (at + 2 > text.size())
            return false;
          out.append("\\u00").append(text.substr(at, 2));
          at += 2;
          break;
        default:
          out.push_back(e);
          break;  // \' \` \/ and any other: the character itself
      }
      continue;
    }
    if (c == '"') {
      out.append("\\\"");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.append(fmt::format("\\u{:04x}", static_cast<unsigned>(c)));
    } else {
      out.push_back(c);
    }
  }
  if (at >= text.size())
    return false;
  ++at;
  out.push_back('"');
  return true;
}

// A JavaScript literal (objects with bare or quoted keys, arrays, strings, numbers, true, false,
// null, trailing commas) as JSON text; nullopt for anything else (a variable, an expression).
// Nesting is counted, never recursed into, and bounded by what a transcript holds.
std::optional<std::string> JsLiteralToJson(std::string_view text) {
  std::string out;
  std::vector<char> open;  // '{' or '[' of each level
  bool expect_key = false;
  std::size_t at = 0;
  const auto skip_space = [&] {
    while (at < text.size()) {
      if (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r') {
        ++at;
      } else if (text.substr(at, 2) == "//") {
        const std::size_t end = text.find('\n', at);
        at = end == std::string_view::npos ? text.size() : end;
      } else if (text.substr(at, 2) == "/*") {
        const std::size_t end = text.find("*/", at + 2);
        at = end == std::string_view::npos ? text.size() : end + 2;
      } else {
        break;
      }
    }
  };
  while (true) {
    skip_space();
    if (at >= text.size())
      break;
    const char c = text[at];
    if (c == '{' || c == '[') {
      if (open.size() >= kMaxRawJsonDepth)
        return std::nullopt;
      open.push_back(c);
      out.push_back(c);
      expect_key = c == '{';
      ++at;
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != (c == '}' ? '{' : '['))
        return std::nullopt;
      if (!out.empty() && out.back() == ',')  // a trailing comma
        out.pop_back();
      open.pop_back();
      out.push_back(c);
      expect_key = false;
      ++at;
    } else if (c == ',') {
      out.push_back(c);
      expect_key = !open.empty() && open.back() == '{';
      ++at;
    } else if (c == ':') {
      out.push_back(c);
      ++at;
    } else if (c == '"' || c == '\'' || c == '`') {
      if (!AppendJsString(text, at, out))
        return std::nullopt;
      expect_key = false;
    } else if (IsIdentifierChar(c) || c == '-' || c == '.') {
      std::size_t end = at;
      while (end < text.size() && (IsIdentifierChar(text[end]) || text[end] == '-' ||
                                   text[end] == '.' || text[end] == '+'))
        ++end;
      const std::string_view word = text.substr(at, end - at);
      at = end;
      if (expect_key) {
        AppendJsonString(out, word);
        expect_key = false;
      } else if (word == "true" || word == "false" || word == "null" ||
                 (word[0] >= '0' && word[0] <= '9') || word[0] == '-' || word[0] == '.') {
        out.append(word);  // numbers are checked by the strict parse below
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  if (out.empty() || !open.empty())
    return std::nullopt;
  if (!ParseStrictJson(out, JsonLimits{out.size(), kMaxRawJsonDepth}).ok())
    return std::nullopt;
  return out;
}

}  // namespace

std::vector<CodeModeCall> CodeModeCalls(std::string_view program, std::size_t max_calls) {
  std::vector<CodeModeCall> calls;
  constexpr std::string_view kTools = "tools.";
  JsScanner scan(program);
  while (!scan.done() && calls.size() < max_calls) {
    const std::size_t at = scan.at();
    const bool starts = scan.in_code() && program.substr(at, kTools.size()) == kTools &&
                        (at == 0 || (!IsIdentifierChar(program[at - 1]) && program[at - 1] != '.'));
    if (!starts) {
      scan.Advance();
      continue;
    }
    std::size_t end = at + kTools.size();
    while (end < program.size() && IsIdentifierChar(program[end]))
      ++end;
    const std::string_view name = program.substr(at + kTools.size(), end - at - kTools.size());
    std::size_t open = end;
    while (open < program.size() && (program[open] == ' ' || program[open] == '\t'))
      ++open;
    if (name.empty() || open >= program.size() || program[open] != '(') {
      scan.Advance();
      continue;
    }
    // The argument: up to the parenthesis that closes the call, counted in code only.
    JsScanner argument(program, open + 1);
    std::size_t depth = 1;
    while (!argument.done()) {
      const char c = program[argument.at()];
      if (argument.in_code() && (c == '(' || c == '[' || c == '{')) {
        ++depth;
      } else if (argument.in_code() && (c == ')' || c == ']' || c == '}') && --depth == 0) {
        break;
      }
      argument.Advance();
    }
    const std::string_view text = program.substr(open + 1, argument.at() - open - 1);
    CodeModeCall call{std::string(name), "{}"};
    if (text.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      std::optional<std::string> json = JsLiteralToJson(text);
      if (json) {
        call.input = std::move(*json);
      } else {
        call.input.clear();
        AppendJsonString(call.input, text);  // the source as written: nothing is guessed
      }
    }
    calls.push_back(std::move(call));
    scan = JsScanner(program, argument.done() ? program.size() : argument.at() + 1);
  }
  return calls;
}

}  // namespace harness::import_internal
