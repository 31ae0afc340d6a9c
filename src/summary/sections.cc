#include "harness/summary/sections.h"

#include <array>
#include <utility>

#include "harness/core/chars.h"
#include "harness/summary/summary.h"

namespace harness {

std::string DecodeXmlText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out.push_back(text[i]);
      continue;
    }
    const std::size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 12) {
      out.push_back('&');
      continue;
    }
    const std::string_view name = text.substr(i + 1, semi - i - 1);
    char32_t cp = 0;
    bool ok = true;
    if (name == "lt") {
      cp = '<';
    } else if (name == "gt") {
      cp = '>';
    } else if (name == "amp") {
      cp = '&';
    } else if (name == "quot") {
      cp = '"';
    } else if (name == "apos") {
      cp = '\'';
    } else if (name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      const std::string_view digits = name.substr(hex ? 2 : 1);
      ok = !digits.empty();
      for (const char c : digits) {
        const int v = hex ? HexDigitValue(c) : ((c >= '0' && c <= '9') ? c - '0' : -1);
        if (v < 0 || cp > 0x10FFFF) {
          ok = false;
          break;
        }
        cp = cp * (hex ? 16 : 10) + static_cast<char32_t>(v);
      }
      ok = ok && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    } else {
      ok = false;
    }
    if (!ok) {
      out.push_back('&');
      continue;
    }
    AppendUtf8(out, cp);
    i = semi;
  }
  return out;
}

std::optional<SummarySections> ReadSummarySections(std::string_view raw) {
  if (!ParseSummary(raw).ok())
    return std::nullopt;
  SummarySections sections;
  const std::array<std::pair<std::string_view, std::string*>, 5> order = {{
      {"<goal", &sections.goal},
      {"<constraints", &sections.constraints},
      {"<decisions", &sections.decisions},
      {"<state", &sections.state},
      {"<open_items", &sections.open_items},
  }};
  std::size_t at = 0;
  for (const auto& [open, text] : order) {
    // ParseSummary accepted it: the sections come in this order, each start tag ends at the
    // first '>' after its name, and character data holds no '<'.
    const std::size_t start = raw.find(open, at);
    const std::size_t end = start == std::string_view::npos ? start : raw.find('>', start);
    if (end == std::string_view::npos)
      return std::nullopt;
    at = end + 1;
    if (raw[end - 1] == '/')
      continue;
    const std::size_t close = raw.find('<', at);
    if (close == std::string_view::npos)
      return std::nullopt;
    *text = DecodeXmlText(raw.substr(at, close - at));
    at = close;
  }
  return sections;
}

}  // namespace harness
