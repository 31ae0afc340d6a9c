#include "harness/core/base64.h"

#include <array>
#include <cstdint>

namespace harness {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Value of each byte in the alphabet, or -1.
constexpr std::array<std::int8_t, 256> MakeDecodeTable() {
  std::array<std::int8_t, 256> table{};
  for (auto& v : table)
    v = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}
constexpr auto kDecode = MakeDecodeTable();

}  // namespace

void AppendBase64(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto at = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out.push_back(kAlphabet[n >> 18 & 63]);
    out.push_back(kAlphabet[n >> 12 & 63]);
    out.push_back(kAlphabet[n >> 6 & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t n = at(i) << 16;
    out.push_back(kAlphabet[n >> 18 & 63]);
    out.push_back(kAlphabet[n >> 12 & 63]);
    out += "==";
  } else if (rest == 2) {
    const std::uint32_t n = at(i) << 16 | at(i + 1) << 8;
    out.push_back(kAlphabet[n >> 18 & 63]);
    out.push_back(kAlphabet[n >> 12 & 63]);
    out.push_back(kAlphabet[n >> 6 & 63]);
    out.push_back('=');
  }
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  AppendBase64(out, bytes);
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0)
    return std::nullopt;
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') {
    padding = text[text.size() - 2] == '=' ? 2 : 1;
  }
  const std::size_t groups = text.size() / 4;
  std::string out;
  out.reserve(groups * 3 - padding);
  for (std::size_t g = 0; g < groups; ++g) {
    const bool last = g + 1 == groups;
    const std::size_t data_chars = last ? 4 - padding : 4;
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const auto c = static_cast<unsigned char>(text[g * 4 + k]);
      if (k < data_chars) {
        const std::int8_t v = kDecode[c];
        if (v < 0)
          return std::nullopt;  // '=' inside the data, white space, any other byte
        n = n << 6 | static_cast<std::uint32_t>(v);
      } else {
        n <<= 6;  // a padding position ('=' there was established above)
      }
    }
    if (last && padding == 2) {
      if ((n & 0xFFFF) != 0)
        return std::nullopt;  // non-zero unused bits
      out.push_back(static_cast<char>(n >> 16));
    } else if (last && padding == 1) {
      if ((n & 0xFF) != 0)
        return std::nullopt;
      out.push_back(static_cast<char>(n >> 16));
      out.push_back(static_cast<char>(n >> 8 & 0xFF));
    } else {
      out.push_back(static_cast<char>(n >> 16));
      out.push_back(static_cast<char>(n >> 8 & 0xFF));
      out.push_back(static_cast<char>(n & 0xFF));
    }
  }
  return out;
}

}  // namespace harness
