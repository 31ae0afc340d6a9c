#include "compaction/extractive_fields.h"

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/core/chars.h"

namespace harness::extractive_detail {

namespace {

std::optional<char32_t> Hex4(std::string_view text, std::size_t at) {
  if (at + 4 > text.size())
    return std::nullopt;
  char32_t value = 0;
  for (std::size_t k = at; k < at + 4; ++k) {
    const int digit = HexDigitValue(text[k]);
    if (digit < 0)
      return std::nullopt;
    value = (value << 4) | static_cast<char32_t>(digit);
  }
  return value;
}

std::size_t SkipSpace(std::string_view text, std::size_t at) {
  while (at < text.size() &&
         (text[at] == ' ' || text[at] == '\n' || text[at] == '\r' || text[at] == '\t'))
    ++at;
  return at;
}

}  // namespace

// Reads the string whose opening quote is at `at`; returns the index after its closing quote
// (or the end when it is cut short).
std::size_t ReadString(std::string_view text, std::size_t at, std::string& out) {
  std::size_t i = at + 1;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"')
      return i + 1;
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= text.size())
      return text.size();
    const char escape = text[i + 1];
    i += 2;
    switch (escape) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
      case 'f':
        out.push_back(' ');
        break;
      case 'u': {
        auto unit = Hex4(text, i);
        if (!unit) {
          out.append("\xEF\xBF\xBD");
          break;
        }
        i += 4;
        char32_t code = *unit;
        if (code >= 0xD800 && code <= 0xDBFF && i + 6 <= text.size() && text[i] == '\\' &&
            text[i + 1] == 'u') {
          if (auto low = Hex4(text, i + 2); low && *low >= 0xDC00 && *low <= 0xDFFF) {
            code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
            i += 6;
          }
        }
        AppendUtf8(out, code >= 0xD800 && code <= 0xDFFF ? char32_t{0xFFFD} : code);
        break;
      }
      default:
        out.push_back(escape);
        break;
    }
  }
  return text.size();
}

// Every "key": value member at any depth, in document order. Values that are objects, or
// arrays holding anything but strings, are not members here: their own members are.
std::vector<Field> ReadFields(std::string_view json) {
  std::vector<Field> fields;
  std::size_t i = 0;
  while (i < json.size()) {
    if (json[i] != '"') {
      ++i;
      continue;
    }
    std::string key;
    i = ReadString(json, i, key);
    std::size_t j = SkipSpace(json, i);
    if (j >= json.size() || json[j] != ':')
      continue;  // a string value or an array element, not a key
    j = SkipSpace(json, j + 1);
    if (j >= json.size())
      break;
    Field field{std::move(key), {}};
    if (json[j] == '"') {
      i = ReadString(json, j, field.value);
      fields.push_back(std::move(field));
    } else if (json[j] == '[') {
      std::size_t k = SkipSpace(json, j + 1);
      bool strings = false;
      while (k < json.size() && json[k] == '"') {
        std::string element;
        k = SkipSpace(json, ReadString(json, k, element));
        if (!field.value.empty())
          field.value.push_back(' ');
        field.value.append(element);
        strings = true;
        if (k < json.size() && json[k] == ',')
          k = SkipSpace(json, k + 1);
      }
      i = strings ? k : j + 1;
      if (strings)
        fields.push_back(std::move(field));
    } else if (json[j] == '{') {
      i = j + 1;
    } else {
      std::size_t k = j;
      while (k < json.size() && json[k] != ',' && json[k] != '}' && json[k] != ']' &&
             json[k] != ' ' && json[k] != '\n')
        ++k;
      field.value.assign(json.substr(j, k - j));
      fields.push_back(std::move(field));
      i = k;
    }
  }
  return fields;
}

const std::string* FieldValue(const std::vector<Field>& fields,
                              std::initializer_list<std::string_view> keys) {
  for (const std::string_view key : keys) {
    for (const Field& field : fields) {
      if (field.key == key)
        return &field.value;
    }
  }
  return nullptr;
}

}  // namespace harness::extractive_detail
