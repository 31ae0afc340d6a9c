// Test support only (never linked into the library): a reader and random walker for the subset
// of llama.cpp's GBNF that BuildSummaryGrammar writes, so that tests can draw sentences from a
// grammar and check each one against the strict validators.
//
// Subset: one rule per line, `name ::= item item …`, '#' comment lines and blank lines; an item
// is a string literal ("…" with \" \\ \n \r \t \xHH escapes; other bytes, UTF-8 included, taken
// verbatim), a character class ([…] of printable ASCII, ranges a-z and \xHH escapes; no
// negation) or a rule name (letters, digits, '-'), optionally followed by {m,n} (m <= n < 2000,
// llama.cpp's repetition threshold). Anything else (alternation, groups, ?, *, +) is refused.
// Parse also refuses what llama.cpp would: a rule defined twice, a reference to an undefined
// rule, no `root`. It refuses any cycle among rules (stronger than llama.cpp's no-left-recursion
// rule, and what keeps the walk's recursion bounded by the number of rules).
// Walk modes: kRandom picks each repetition count and class character with the generator (the
// count is m, n or uniform in between, so the bounds are exercised often); kShortest and
// kLongest take m or n and the class's first character.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace harness::testing {

class GbnfSampler {
 public:
  enum class Walk { kRandom, kShortest, kLongest };

  // nullopt and `error` set when the text is outside the subset or ill-formed.
  static std::optional<GbnfSampler> Parse(std::string_view text, std::string* error) {
    GbnfSampler grammar;
    std::size_t line_start = 0;
    while (line_start < text.size()) {
      std::size_t line_end = text.find('\n', line_start);
      if (line_end == std::string_view::npos)
        line_end = text.size();
      const std::string_view line = text.substr(line_start, line_end - line_start);
      line_start = line_end + 1;
      if (line.empty() || line[0] == '#')
        continue;
      if (!grammar.ParseRule(line, error))
        return std::nullopt;
    }
    if (!grammar.rules_.contains("root"))
      return Failed(error, "no root rule");
    for (const auto& [name, items] : grammar.rules_) {
      for (const Item& item : items) {
        if (item.kind == Item::kRule && !grammar.rules_.contains(item.text))
          return Failed(error, "undefined rule " + item.text);
      }
    }
    std::map<std::string, int> state;  // 1: on the current path, 2: done
    for (const auto& [name, items] : grammar.rules_) {
      if (!grammar.Acyclic(name, state, 0))
        return Failed(error, "a cycle through rule " + name);
    }
    return grammar;
  }

  std::string Sample(std::mt19937_64& random, Walk walk = Walk::kRandom) const {
    std::string out;
    Expand("root", random, walk, out);
    return out;
  }

 private:
  struct Item {
    enum Kind { kLiteral, kClass, kRule } kind;
    std::string text;  // literal bytes, class characters (expanded), or rule name
    std::size_t min = 1;
    std::size_t max = 1;
  };

  static std::nullopt_t Failed(std::string* error, std::string message) {
    *error = std::move(message);
    return std::nullopt;
  }

  static bool Refuse(std::string* error, std::string message) {
    *error = std::move(message);
    return false;
  }

  static bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  }

  static std::optional<unsigned> HexDigit(char c) {
    if (c >= '0' && c <= '9')
      return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f')
      return static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
      return static_cast<unsigned>(c - 'A' + 10);
    return std::nullopt;
  }

  // One possibly escaped character at `pos` (advanced past it).
  static std::optional<char> ReadChar(std::string_view s, std::size_t& pos) {
    if (pos >= s.size())
      return std::nullopt;
    if (s[pos] != '\\')
      return s[pos++];
    if (pos + 1 >= s.size())
      return std::nullopt;
    const char e = s[pos + 1];
    pos += 2;
    switch (e) {
      case '"':
      case '\\':
      case '[':
      case ']':
        return e;
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x': {
        if (pos + 2 > s.size())
          return std::nullopt;
        const auto hi = HexDigit(s[pos]);
        const auto lo = HexDigit(s[pos + 1]);
        if (!hi || !lo)
          return std::nullopt;
        pos += 2;
        return static_cast<char>((*hi << 4) | *lo);
      }
      default:
        return std::nullopt;
    }
  }

  static void SkipSpaces(std::string_view s, std::size_t& pos) {
    while (pos < s.size() && s[pos] == ' ')
      ++pos;
  }

  bool ParseRule(std::string_view line, std::string* error) {
    std::size_t pos = 0;
    while (pos < line.size() && IsNameChar(line[pos]))
      ++pos;
    const std::string name(line.substr(0, pos));
    SkipSpaces(line, pos);
    if (name.empty() || line.substr(pos, 3) != "::=")
      return Refuse(error, "not a rule: " + std::string(line));
    if (rules_.contains(name))
      return Refuse(error, "rule defined twice: " + name);
    pos += 3;
    std::vector<Item> items;
    for (SkipSpaces(line, pos); pos < line.size(); SkipSpaces(line, pos)) {
      Item item{Item::kRule, ""};
      if (line[pos] == '"') {
        item.kind = Item::kLiteral;
        ++pos;
        while (pos < line.size() && line[pos] != '"') {
          const auto c = ReadChar(line, pos);
          if (!c)
            return Refuse(error, "bad escape in a literal");
          item.text.push_back(*c);
        }
        if (pos >= line.size())
          return Refuse(error, "unterminated literal");
        ++pos;
      } else if (line[pos] == '[') {
        item.kind = Item::kClass;
        ++pos;
        if (pos < line.size() && line[pos] == '^')
          return Refuse(error, "negated class");
        while (pos < line.size() && line[pos] != ']') {
          const auto first = ReadChar(line, pos);
          if (!first || static_cast<unsigned char>(*first) >= 0x80)
            return Refuse(error, "bad class character");
          char last = *first;
          if (pos + 1 < line.size() && line[pos] == '-' && line[pos + 1] != ']') {
            ++pos;
            const auto end = ReadChar(line, pos);
            if (!end || *end < *first)
              return Refuse(error, "bad class range");
            last = *end;
          }
          for (int c = *first; c <= last; ++c)
            item.text.push_back(static_cast<char>(c));
        }
        if (pos >= line.size() || item.text.empty())
          return Refuse(error, "unterminated or empty class");
        ++pos;
      } else if (IsNameChar(line[pos])) {
        const std::size_t start = pos;
        while (pos < line.size() && IsNameChar(line[pos]))
          ++pos;
        item.text = std::string(line.substr(start, pos - start));
      } else {
        return Refuse(error, "unsupported syntax in rule " + name);
      }
      if (pos < line.size() && line[pos] == '{') {
        const std::size_t close = line.find('}', pos);
        const std::size_t comma = line.find(',', pos);
        if (close == std::string_view::npos || comma == std::string_view::npos || comma > close)
          return Refuse(error, "bad repetition");
        const auto number = [&](std::size_t from, std::size_t to) -> std::optional<std::size_t> {
          if (from == to || to - from > 6)
            return std::nullopt;
          std::size_t n = 0;
          for (std::size_t i = from; i < to; ++i) {
            if (line[i] < '0' || line[i] > '9')
              return std::nullopt;
            n = n * 10 + static_cast<std::size_t>(line[i] - '0');
          }
          return n;
        };
        const auto min = number(pos + 1, comma);
        const auto max = number(comma + 1, close);
        if (!min || !max || *min > *max || *max >= 2000)
          return Refuse(error, "bad repetition bounds");
        item.min = *min;
        item.max = *max;
        pos = close + 1;
      }
      items.push_back(std::move(item));
    }
    rules_.emplace(name, std::move(items));
    return true;
  }

  bool Acyclic(const std::string& name, std::map<std::string, int>& state, int depth) const {
    int& mark = state[name];
    if (mark == 2)
      return true;
    if (mark == 1 || depth > 64)
      return false;
    mark = 1;
    for (const Item& item : rules_.at(name)) {
      if (item.kind == Item::kRule && !Acyclic(item.text, state, depth + 1))
        return false;
    }
    state[name] = 2;
    return true;
  }

  static std::size_t Pick(std::mt19937_64& random, std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(random);
  }

  void Expand(const std::string& name, std::mt19937_64& random, Walk walk, std::string& out) const {
    for (const Item& item : rules_.at(name)) {
      std::size_t count = item.min;
      if (walk == Walk::kLongest) {
        count = item.max;
      } else if (walk == Walk::kRandom) {
        const std::size_t choice = Pick(random, 0, 3);
        count = choice == 0 ? item.min : choice == 1 ? item.max : Pick(random, item.min, item.max);
      }
      for (std::size_t i = 0; i < count; ++i) {
        switch (item.kind) {
          case Item::kLiteral:
            out.append(item.text);
            break;
          case Item::kClass:
            out.push_back(walk == Walk::kRandom ? item.text[Pick(random, 0, item.text.size() - 1)]
                                                : item.text[0]);
            break;
          case Item::kRule:
            Expand(item.text, random, walk, out);
            break;
        }
      }
    }
  }

  std::map<std::string, std::vector<Item>> rules_;
};

}  // namespace harness::testing
