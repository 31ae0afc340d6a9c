// MixedCorpus: a deterministic mixed-script text for the differential test and the benchmark
// (docs/tokenizer.md). Fragments of code, English prose with contractions, CJK, other scripts,
// emoji (skin tones, ZWJ sequences, flags, keycaps), combining marks, CR/LF/CRLF, long white
// space runs, numbers in several scripts, punctuation and symbols, mixed-case identifiers and
// special-token strings, joined by random separators. The same seed gives the same bytes on
// every platform (raw mt19937_64 draws, no std distributions). Always valid UTF-8.
// It avoids the characters where the oracles disagree with OpenAI's tokenizer for reasons of
// their own regex engines (U+0085, U+180E, U+FEFF: JavaScript's \s differs) and letters newer
// than Unicode 14 (PCRE2 10.42's tables).
// Test and benchmark support; not part of the library.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "harness/core/chars.h"

namespace harness::inference_internal {

class MixedCorpus {
 public:
  explicit MixedCorpus(std::uint64_t seed) : rng_(seed) {}

  // Appends `count` fragments, each followed by a separator.
  void AppendFragments(std::string& out, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      Fragment(out);
      out.append(Pick(kSeparators));
    }
  }
  // Appends fragments until `out` is at least `bytes` long.
  void AppendUntil(std::string& out, std::size_t bytes) {
    while (out.size() < bytes) {
      Fragment(out);
      out.append(Pick(kSeparators));
    }
  }

 private:
  static constexpr std::array<std::string_view, 10> kSeparators{"",   " ",    " ",  " ",  " ",
                                                                "\n", "\r\n", "\t", "  ", ". "};
  static constexpr std::array<std::string_view, 40> kWords{
      "the",     "quick",  "brown",   "fox",       "jumps",     "over",    "lazy",   "dog",
      "context", "window", "summary", "compact",   "session",   "journal", "token",  "model",
      "is",      "a",      "of",      "and",       "to",        "in",      "that",   "it",
      "naïve",   "café",   "résumé",  "coöperate", "Straße",    "façade",  "über",   "piñata",
      "don",     "rock",   "hello",   "world",     "tokenizer", "request", "answer", "tool"};
  static constexpr std::array<std::string_view, 14> kContractions{
      "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "’s", "’t", "''", "'"};
  static constexpr std::array<std::string_view, 12> kCode{
      "fn main() {\n    let x = 42;\n    println!(\"{x}\");\n}\n",
      "int main(int argc, char** argv) {\r\n\treturn argc > 1 ? 0 : -1;\r\n}\r\n",
      "def count_tokens(text: str) -> int:\n    return len(enc.encode(text))  # TODO\n",
      "for (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
      "const re = /[^\\s\\p{L}]+/gu; // x && y || !z",
      "<summary><goal>x &amp; y</goal></summary>",
      "{\"type\":\"tool_use\",\"id\":\"call_01\",\"input\":{\"path\":\"/usr/local/bin\"}}",
      "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
      "git commit -m \"fix: off-by-one\" && ./build/harness count README.md",
      "XMLHttpRequest getElementById iPhone camelCaseIdentifier snake_case_name HTTPServer",
      "    if (x == nullptr) {\n        return std::nullopt;\n    }\n",
      "https://example.com/a/b/c?q=1&r=%20#frag ../../etc/passwd C:\\Windows\\System32"};
  static constexpr std::array<std::string_view, 7> kSpecialStrings{
      "<|endoftext|>",   "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
      "<|endofprompt|>", "<|im_start|>",   "<|im_end|>"};
  static constexpr std::array<std::string_view, 24> kPunctuation{
      "!",  "?",  "...", "—",   "–",   "…",  "«",   "»",   "“",      "”",   "‘",       "’",
      "¿¡", "•·", "©®™", "€£¥", "§¶†", "∀∃", "→≤≥", "∑∏√", "(){}[]", "<>/", "@#$%^&*", "\\|`~"};
  static constexpr std::array<std::string_view, 12> kWhitespace{
      "\n",   "\r\n", "\r", "\n\n\n", "\r\n\r\n", " \n",
      "\t\t", " \t ", "\v", "\f",     "\u3000",   "\u00a0"};
  static constexpr std::array<std::string_view, 16> kEmoji{"😀",
                                                           "🚀",
                                                           "❤️",
                                                           "👍🏽",
                                                           "👨‍👩‍👧‍👦",
                                                           "🏳️‍🌈",
                                                           "👩🏽‍💻",
                                                           "🇩🇪",
                                                           "🇯🇵",
                                                           "1️⃣",
                                                           "🤷‍♀️",
                                                           "🧑🏿‍🤝‍🧑🏻",
                                                           "✨",
                                                           "🎉🎉🎉",
                                                           "😂🤣",
                                                           "🫶"};

  struct Range {
    char32_t first;
    char32_t last;
  };
  static constexpr std::array<Range, 4> kCjk{
      {{0x4E00, 0x9FA5}, {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0xAC00, 0xD7A3}}};
  static constexpr std::array<Range, 8> kScripts{{{0x0410, 0x044F},
                                                  {0x0391, 0x03A9},
                                                  {0x03B1, 0x03C9},
                                                  {0x0621, 0x064A},
                                                  {0x05D0, 0x05EA},
                                                  {0x0905, 0x0939},
                                                  {0x0E01, 0x0E2E},
                                                  {0x00C0, 0x00FF}}};
  static constexpr std::array<Range, 4> kMarks{
      {{0x0300, 0x036F}, {0x093E, 0x094D}, {0x0E34, 0x0E3A}, {0x20D0, 0x20DC}}};
  static constexpr std::array<Range, 7> kDigits{{{'0', '9'},
                                                 {0x0660, 0x0669},
                                                 {0x0966, 0x096F},
                                                 {0xFF10, 0xFF19},
                                                 {0x2160, 0x216F},
                                                 {0x00B2, 0x00B3},
                                                 {0x00BC, 0x00BE}}};
  static constexpr std::array<char32_t, 12> kCaseOddities{0x01C5, 0x01C8, 0x01CB, 0x01F2,
                                                          0x02B0, 0x02B2, 0x02C0, 0x00AA,
                                                          0x00BA, 0x1E9E, 0x0130, 0x0131};

  std::uint64_t Below(std::uint64_t n) { return rng_() % n; }
  template <class A>
  typename A::value_type Pick(const A& items) {
    return items[Below(items.size())];
  }
  char32_t In(Range r) { return r.first + static_cast<char32_t>(Below(r.last - r.first + 1)); }

  void Word(std::string& out) {
    std::string word(Pick(kWords));
    const auto shape = Below(6);
    if (shape == 0 && word[0] >= 'a' && word[0] <= 'z')
      word[0] = static_cast<char>(word[0] - 'a' + 'A');
    if (shape == 1) {
      for (char& c : word) {
        if (c >= 'a' && c <= 'z')
          c = static_cast<char>(c - 'a' + 'A');
      }
    }
    out.append(word);
    if (Below(4) == 0)
      out.append(Pick(kContractions));
  }

  // check-sizes: one short case for each kind of fragment, read as a list.
  void Fragment(std::string& out) {
    switch (Below(13)) {
      case 0:
      case 1: {  // prose
        const auto n = 1 + Below(12);
        for (std::uint64_t i = 0; i < n; ++i) {
          if (i != 0)
            out.push_back(' ');
          Word(out);
        }
        out.append(Pick(kPunctuation));
        break;
      }
      case 2:
        out.append(Pick(kCode));
        break;
      case 3: {  // CJK, with CJK punctuation now and then
        const Range r = Pick(kCjk);
        const auto n = 1 + Below(30);
        for (std::uint64_t i = 0; i < n; ++i)
          AppendUtf8(out, Below(10) == 0 ? char32_t{0x3002} : In(r));
        break;
      }
      case 4: {  // other scripts, in words
        const Range r = Pick(kScripts);
        const auto words = 1 + Below(5);
        for (std::uint64_t w = 0; w < words; ++w) {
          if (w != 0)
            out.push_back(' ');
          const auto n = 1 + Below(9);
          for (std::uint64_t i = 0; i < n; ++i)
            AppendUtf8(out, In(r));
        }
        break;
      }
      case 5: {  // emoji
        const auto n = 1 + Below(4);
        for (std::uint64_t i = 0; i < n; ++i)
          out.append(Pick(kEmoji));
        break;
      }
      case 6: {  // combining marks after letters, digits, spaces or nothing
        const auto n = 1 + Below(5);
        for (std::uint64_t i = 0; i < n; ++i) {
          switch (Below(4)) {
            case 0:
              AppendUtf8(out, In({'a', 'z'}));
              break;
            case 1:
              AppendUtf8(out, In(Pick(kScripts)));
              break;
            case 2:
              out.push_back(Below(2) == 0 ? ' ' : '7');
              break;
            default:
              break;
          }
          const auto marks = 1 + Below(3);
          for (std::uint64_t m = 0; m < marks; ++m)
            AppendUtf8(out, In(Pick(kMarks)));
        }
        break;
      }
      case 7: {  // white space: long runs of spaces, tabs, line breaks
        const auto kind = Below(4);
        if (kind == 0) {
          out.append(static_cast<std::size_t>(1 + Below(300)), ' ');
        } else if (kind == 1) {
          out.append(static_cast<std::size_t>(1 + Below(20)), '\t');
        } else {
          const auto n = 1 + Below(6);
          for (std::uint64_t i = 0; i < n; ++i) {
            out.append(static_cast<std::size_t>(Below(5)), ' ');
            out.append(Pick(kWhitespace));
          }
        }
        break;
      }
      case 8: {  // numbers
        const Range digits = Below(3) == 0 ? Pick(kDigits) : Range{'0', '9'};
        const auto n = 1 + Below(25);
        if (Below(5) == 0)
          out.push_back('-');
        for (std::uint64_t i = 0; i < n; ++i) {
          AppendUtf8(out, In(digits));
          if (Below(8) == 0)
            out.push_back(Below(2) == 0 ? ',' : '.');
        }
        break;
      }
      case 9: {  // punctuation and symbols
        const auto n = 1 + Below(6);
        for (std::uint64_t i = 0; i < n; ++i)
          out.append(Pick(kPunctuation));
        break;
      }
      case 10:
        out.append(Pick(kSpecialStrings));
        break;
      case 11: {  // case: titlecase and modifier letters, mixed-case runs
        const auto n = 1 + Below(8);
        for (std::uint64_t i = 0; i < n; ++i) {
          switch (Below(3)) {
            case 0:
              AppendUtf8(out, Pick(kCaseOddities));
              break;
            case 1:
              AppendUtf8(out, In({'A', 'Z'}));
              break;
            default:
              AppendUtf8(out, In({'a', 'z'}));
              break;
          }
        }
        break;
      }
      default: {  // a word glued to punctuation, digits or another script
        Word(out);
        out.append(Pick(kPunctuation));
        AppendUtf8(out, In(Pick(kDigits)));
        AppendUtf8(out, In(Pick(kScripts)));
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace harness::inference_internal
