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
// The goal and the state's lead, the first two items, are told even when a later item holds
// them: a summary has both.
constexpr std::size_t kLeads = 2;

// Text as the eval's measures compare items (docs/eval.md "Summary measures"): ASCII letters
// lower-cased, every run of white space one space, none at either end.
std::string Folded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!out.empty() && out.back() != ' ')
        out.push_back(' ');
      continue;
    }
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  if (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

// A rule and a choice have their own sections; the goal's requests, the steps and the progress
// tell what happened, and may hold a rule's or a choice's words.
bool Specific(const Item& item) {
  return item.section == Section::kConstraints || item.section == Section::kDecisions;
}

// The words of an item after its labels ("Earlier:", "Later:", "Latest progress:").
std::string_view Unlabelled(std::string_view text) {
  for (bool more = true; more;) {
    more = false;
    for (const std::string_view label : {"Earlier:", "Later:", "Latest progress:"}) {
      if (text.starts_with(label)) {
        text = Trim(text.substr(label.size()));
        more = true;
      }
    }
  }
  return text;
}

// Clean `text` without the first place that holds `piece` (ASCII case aside), the spaces around
// it made one; `text` itself when it holds no such place.
std::string Without(const std::string& text, const std::string& piece) {
  const std::size_t at = Lower(text).find(Lower(piece));
  if (piece.empty() || at == std::string::npos)
    return text;
  std::string head = text.substr(0, at);
  std::string tail = text.substr(at + piece.size());
  while (!head.empty() && head.back() == ' ')
    head.pop_back();
  while (!tail.empty() && tail.front() == ' ')
    tail.erase(0, 1);
  // A step's label that was the rule alone goes with it: "Step (): x" is "Step: x".
  if (head.ends_with('(') && tail.starts_with(')')) {
    head.pop_back();
    tail.erase(0, 1);
    while (!head.empty() && head.back() == ' ')
      head.pop_back();
    return head + tail;
  }
  if (head.empty() || tail.empty())
    return head + tail;
  return head + " " + tail;
}

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

namespace {
std::vector<Chosen> ChooseWithin(const std::vector<Item>& items, std::size_t room, bool& whole);
}  // namespace

// In a smaller room every cap shrinks with the square root of its share of a full one, so
// that a small budget holds several short items by priority instead of the first one or two
// at full length (a long task statement alone would fill it).
std::vector<Item> ScaledToRoom(std::vector<Item> items, std::size_t room) {
  if (room >= kFullRoom)
    return items;
  // A room that holds every item at its own cap needs no sharing.
  bool whole = false;
  ChooseWithin(items, room, whole);
  if (whole)
    return items;
  const double scale = std::sqrt(static_cast<double>(room) / static_cast<double>(kFullRoom));
  for (Item& item : items) {
    const auto scaled = static_cast<std::size_t>(static_cast<double>(item.cap) * scale);
    item.cap = std::max(scaled, std::min(item.cap, kSmallestCap));
  }
  return items;
}

// The first items that fit `room` envelope bytes whole; the first that does not is cut to the
// room left (when at least a few bytes are) and ends the selection. Each distinct piece is told
// once (see the header): the room a repeat would take goes to the next item.
std::vector<Chosen> Choose(const std::vector<Item>& items, std::size_t room) {
  bool whole = false;
  return ChooseWithin(items, room, whole);
}

namespace {

// Appends `item`'s text to the chosen item it extends, when that one was told, the room holds
// the longer text, and neither it nor the addition tells twice what another chosen item says.
void Extend(const std::vector<Item>& items, const Item& item, std::size_t room,
            std::vector<Chosen>& chosen, std::vector<std::string>& texts,
            std::vector<std::string>& folded) {
  std::size_t at = 0;
  while (at < chosen.size() && chosen[at].item != &items[item.extends])
    ++at;
  if (at == chosen.size())
    return;
  const std::string addition = EscapeWithin(item.text, item.cap);
  std::string escaped = chosen[at].escaped + addition;
  std::string mine = Folded(escaped);
  // What the addition says, without the parentheses that set it apart.
  std::string_view said = item.text;
  if (said.starts_with(" (") && said.ends_with(')'))
    said = said.substr(2, said.size() - 3);
  const std::string added = Folded(EscapeWithin(said, item.cap));
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    if (k != at &&
        (mine.find(folded[k]) != std::string::npos || folded[k].find(mine) != std::string::npos ||
         folded[k].find(added) != std::string::npos))
      return;
  }
  std::array<std::vector<std::size_t>, 5> lengths;
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    lengths[static_cast<std::size_t>(chosen[k].item->section)].push_back(
        JsonBytes(k == at ? escaped : chosen[k].escaped));
  }
  std::size_t bytes = 0;
  for (std::size_t section = 0; section < lengths.size(); ++section)
    bytes += SectionBytes(kSectionNames[section], lengths[section]);
  if (bytes > room)
    return;
  chosen[at].escaped = std::move(escaped);
  texts[at].append(item.text);
  folded[at] = std::move(mine);
}

using SectionLengths = std::array<std::vector<std::size_t>, 5>;

// The bytes of the sections whose items' escaped lengths are `lengths`.
std::size_t Bytes(const SectionLengths& lengths) {
  std::size_t bytes = 0;
  for (std::size_t section = 0; section < lengths.size(); ++section)
    bytes += SectionBytes(kSectionNames[section], lengths[section]);
  return bytes;
}

// `text` escaped and cut to the largest cap whose escaped text still fits in `room` beside what
// is chosen; "" when not even the shortest cut fits.
std::string CutToFit(const std::vector<Chosen>& chosen, const Item& item, const std::string& text,
                     std::size_t room) {
  SectionLengths lengths;
  for (const Chosen& c : chosen)
    lengths[static_cast<std::size_t>(c.item->section)].push_back(JsonBytes(c.escaped));
  const auto section = static_cast<std::size_t>(item.section);
  const std::size_t used = Bytes(lengths);
  const std::size_t own_before = SectionBytes(kSectionNames[section], lengths[section]);
  lengths[section].push_back(0);
  const std::size_t frame =
      used - own_before + SectionBytes(kSectionNames[section], lengths[section]);
  if (frame + kShortestCut > room)
    return std::string();
  const std::size_t space = room - frame;
  std::size_t low = 0;
  std::size_t high = std::min(space, item.cap);
  while (low < high) {
    const std::size_t middle = (low + high + 1) / 2;
    if (JsonBytes(EscapeWithin(text, middle)) <= space)
      low = middle;
    else
      high = middle - 1;
  }
  return EscapeWithin(text, low);
}

// Choose, and whether every item was taken or passed over without a cut (`whole`).
std::vector<Chosen> ChooseWithin(const std::vector<Item>& items, std::size_t room, bool& whole) {
  whole = false;
  std::vector<Chosen> chosen;
  std::vector<std::string> texts;   // each chosen item's clean text, its repeats cut out
  std::vector<std::string> folded;  // each chosen item's escaped text, Folded
  // A chosen item told without the words of a new rule or choice.
  struct Rewrite {
    std::size_t at;
    std::string text;
    std::string escaped;
    std::string folded;
  };
  for (std::size_t index = 0; index < items.size(); ++index) {
    const Item& item = items[index];
    if (item.extends != kExtendsNothing) {
      Extend(items, item, room, chosen, texts, folded);
      continue;
    }
    const bool lead = index < kLeads;
    std::string text = item.text;
    std::string escaped = EscapeWithin(text, item.cap);
    std::string mine = Folded(escaped);
    // What the chosen ones become beside this item, applied only when it is taken.
    std::vector<Rewrite> rewrites;
    std::vector<std::size_t> dropped;
    bool skip = false;
    for (std::size_t k = 0; k < chosen.size() && !skip; ++k) {
      const bool k_lead = chosen[k].item < items.data() + kLeads;
      if (!lead && folded[k].find(mine) != std::string::npos) {
        // Held in another item of its kind, or in what tells what happened: nothing new.
        skip = !Specific(item) || Specific(*chosen[k].item);
        if (skip)
          continue;
        // A rule or a choice keeps its own section; the holder is told without its words,
        // unless they were all it said.
        std::string rest = Without(texts[k], text);
        skip = !HasWords(Unlabelled(rest));
        if (skip || rest == texts[k])
          continue;
        std::string rest_escaped = EscapeWithin(rest, chosen[k].item->cap);
        std::string rest_folded = Folded(rest_escaped);
        rewrites.push_back(
            Rewrite{k, std::move(rest), std::move(rest_escaped), std::move(rest_folded)});
        continue;
      }
      if (lead || k_lead || mine.find(folded[k]) == std::string::npos)
        continue;
      if (Specific(*chosen[k].item) && !Specific(item)) {
        text = Without(text, texts[k]);
        escaped = EscapeWithin(text, item.cap);
        mine = Folded(escaped);
      } else {
        dropped.push_back(k);
      }
    }
    // A request or a step whose words were all a rule's is told by the rule alone.
    if (skip || (!lead && !HasWords(Unlabelled(text))))
      continue;
    // The bytes of what would be chosen: without the dropped, with the rewrites, with this.
    SectionLengths lengths;
    std::size_t next_rewrite = 0;
    std::size_t next_drop = 0;
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      const auto section = static_cast<std::size_t>(chosen[k].item->section);
      if (next_drop < dropped.size() && dropped[next_drop] == k) {
        ++next_drop;
        continue;
      }
      if (next_rewrite < rewrites.size() && rewrites[next_rewrite].at == k) {
        lengths[section].push_back(JsonBytes(rewrites[next_rewrite++].escaped));
        continue;
      }
      lengths[section].push_back(JsonBytes(chosen[k].escaped));
    }
    const auto section = static_cast<std::size_t>(item.section);
    lengths[section].push_back(JsonBytes(escaped));
    if (Bytes(lengths) <= room) {
      for (Rewrite& rewrite : rewrites) {
        chosen[rewrite.at].escaped = std::move(rewrite.escaped);
        texts[rewrite.at] = std::move(rewrite.text);
        folded[rewrite.at] = std::move(rewrite.folded);
      }
      for (std::size_t d = dropped.size(); d-- > 0;) {
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(dropped[d]));
        texts.erase(texts.begin() + static_cast<std::ptrdiff_t>(dropped[d]));
        folded.erase(folded.begin() + static_cast<std::ptrdiff_t>(dropped[d]));
      }
      chosen.push_back(Chosen{&item, std::move(escaped)});
      texts.push_back(std::move(text));
      folded.push_back(std::move(mine));
      continue;
    }
    // Cut: the largest cap whose escaped text still fits beside what is chosen.
    escaped = CutToFit(chosen, item, text, room);
    if (!escaped.empty())
      chosen.push_back(Chosen{&item, std::move(escaped)});
    return chosen;
  }
  whole = true;
  return chosen;
}

}  // namespace

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
