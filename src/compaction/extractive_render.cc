#include "compaction/extractive_render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_text.h"
#include "harness/core/utf8.h"

namespace harness::extractive_detail {

namespace {

constexpr std::array<std::string_view, 5> kSectionNames = {"goal", "constraints", "decisions",
                                                           "state", "open_items"};

// Bytes `text` takes inside the envelope's JSON string: '"' and '\\' are escaped, a line break
// is "\n" (clean text has no other control character).
std::size_t JsonBytes(std::string_view text) {
  std::size_t bytes = text.size();
  for (const char c : text)
    bytes += (c == '"' || c == '\\' || c == '\n') ? 1 : 0;
  return bytes;
}

// The envelope bytes a section adds over its empty form "<x/>" when it holds `lengths` (JSON
// bytes of each escaped item): one item inline, several as "\n- " lines.
std::size_t SectionBytes(std::string_view name, const std::vector<std::size_t>& lengths) {
  if (lengths.empty())
    return 0;
  std::size_t bytes = name.size() + 2;  // "<x>…</x>" over "<x/>"
  if (lengths.size() == 1)
    return bytes + lengths.front();
  bytes += 2;  // the closing line break, "\n" in JSON
  for (const std::size_t length : lengths)
    bytes += 4 + length;  // "\n- "
  return bytes;
}

// The room of a full default budget (4096 tokens), where the caps apply as written.
constexpr std::size_t kFullRoom = 16000;
// No cap shrinks below this: a path and an error line still fit.
constexpr std::size_t kSmallestCap = 120;

}  // namespace

// XML-escapes clean text into at most `cap` bytes; a cut ends with an ellipsis, on a character
// boundary (a cap below the ellipsis gives ""). `>` is escaped too, so "]]>" can never appear.
// The result's length never decreases as `cap` grows.
std::string EscapeWithin(std::string_view clean, std::size_t cap) {
  std::string out;
  std::size_t fitting = 0;  // bytes of `out` that leave room for the ellipsis
  for (std::size_t i = 0; i < clean.size();) {
    const std::size_t length = DecodeUtf8OrReplacement(clean, i).length;
    std::string_view piece = clean.substr(i, length);
    if (clean[i] == '<')
      piece = "&lt;";
    else if (clean[i] == '>')
      piece = "&gt;";
    else if (clean[i] == '&')
      piece = "&amp;";
    if (out.size() + piece.size() > cap) {
      out.resize(fitting);
      while (!out.empty() && out.back() == ' ')
        out.pop_back();
      if (cap < kEllipsis.size())
        return {};
      out.append(kEllipsis);
      return out;
    }
    out.append(piece);
    if (out.size() + kEllipsis.size() <= cap)
      fitting = out.size();
    i += length;
  }
  return out;
}

// In a smaller room every cap shrinks with the square root of its share of a full one, so
// that a small budget holds several short items by priority instead of the first one or two
// at full length (a long task statement alone would fill it).
std::vector<Item> ScaledToRoom(std::vector<Item> items, std::size_t room) {
  if (room >= kFullRoom)
    return items;
  const double scale = std::sqrt(static_cast<double>(room) / static_cast<double>(kFullRoom));
  for (Item& item : items) {
    const auto scaled = static_cast<std::size_t>(static_cast<double>(item.cap) * scale);
    item.cap = std::max(scaled, std::min(item.cap, kSmallestCap));
  }
  return items;
}

// The first items that fit `room` envelope bytes whole; the first that does not is cut to the
// room left (when at least a few bytes are) and ends the selection.
std::vector<Chosen> Choose(const std::vector<Item>& items, std::size_t room) {
  std::vector<Chosen> chosen;
  std::array<std::vector<std::size_t>, 5> lengths;
  std::size_t used = 0;
  for (const Item& item : items) {
    const auto section = static_cast<std::size_t>(item.section);
    const std::string_view name = kSectionNames[section];
    std::string escaped = EscapeWithin(item.text, item.cap);
    std::vector<std::size_t>& mine = lengths[section];
    const std::size_t before = SectionBytes(name, mine);
    mine.push_back(JsonBytes(escaped));
    std::size_t after = SectionBytes(name, mine);
    if (used - before + after <= room) {
      used = used - before + after;
      chosen.push_back(Chosen{&item, std::move(escaped)});
      continue;
    }
    // Cut: the largest cap whose escaped text still fits.
    mine.back() = 0;
    const std::size_t frame = used - before + SectionBytes(name, mine);
    if (frame + kShortestCut > room)
      break;
    const std::size_t space = room - frame;
    std::size_t low = 0;
    std::size_t high = std::min(space, item.cap);
    while (low < high) {
      const std::size_t middle = (low + high + 1) / 2;
      if (JsonBytes(EscapeWithin(item.text, middle)) <= space)
        low = middle;
      else
        high = middle - 1;
    }
    escaped = EscapeWithin(item.text, low);
    if (!escaped.empty())
      chosen.push_back(Chosen{&item, std::move(escaped)});
    break;
  }
  return chosen;
}

std::string Render(std::vector<Chosen> chosen) {
  std::stable_sort(chosen.begin(), chosen.end(), [](const Chosen& a, const Chosen& b) {
    if (a.item->section != b.item->section)
      return a.item->section < b.item->section;
    return a.item->order < b.item->order;
  });
  std::string xml = "<conversation_summary>";
  std::size_t next = 0;
  for (std::size_t section = 0; section < kSectionNames.size(); ++section) {
    const std::string_view name = kSectionNames[section];
    std::size_t end = next;
    while (end < chosen.size() && static_cast<std::size_t>(chosen[end].item->section) == section)
      ++end;
    xml.push_back('<');
    xml.append(name);
    if (end == next) {
      xml.append("/>");
      continue;
    }
    xml.push_back('>');
    if (end - next == 1) {
      xml.append(chosen[next].escaped);
    } else {
      for (std::size_t k = next; k < end; ++k)
        xml.append("\n- ").append(chosen[k].escaped);
      xml.push_back('\n');
    }
    xml.append("</").append(name).push_back('>');
    next = end;
  }
  xml.append("</conversation_summary>");
  return xml;
}

}  // namespace harness::extractive_detail
