// The extractive compactor's rendering: ranked Items (extractive_rank.h) into the summary
// grammar's text, <conversation_summary> with its five sections (docs/spec/grammar.md), within
// a room of envelope bytes.
//
// Contract:
// - EscapeWithin(clean, cap) XML-escapes clean text ('<', '>', '&') into at most cap bytes; a
//   cut ends with an ellipsis on a character boundary, and a cap below the ellipsis gives "".
//   Its length never decreases as cap grows.
// - ScaledToRoom shrinks every cap with the square root of the room's share of a full budget
//   (16000 bytes), never below 120 bytes (or the cap itself); a full room, or one where Choose
//   takes every item whole at its own cap, changes nothing.
// - Choose(items, room) takes items whole, in order, while the envelope bytes their sections
//   add (the escaped text as a JSON string, one item inline, several as "\n- " lines) fit the
//   room; the first that does not is cut to the room left, when at least kShortestCut bytes
//   are, and ends the selection. A larger room never ends it at an earlier item.
// - Each distinct piece is told once. Items are compared as the eval's measures compare them
//   (ASCII case folded, white space collapsed; docs/eval.md "Summary measures"): an item whose
//   text a chosen item holds is passed over, except a rule or a choice (constraints,
//   decisions), which keeps its section while the item that held it, of another section, is
//   told without its words (unless they were all it said); an item that holds a chosen rule or
//   choice is told without its words, one that holds another chosen item takes its place. The
//   first two items (the goal, the state's lead) are always chosen and never take the place
//   of another; a request left with no words of its own is not told.
// - An item that extends another (Item::extends, an edit's reason) is appended to that item's
//   told text, and never told alone: only when that item was chosen, the room holds the longer
//   text (else it is passed over, ending nothing), the longer text holds no other chosen item
//   and is held by none, and no other chosen item holds what it adds (without parentheses).
// - Render writes the chosen items section by section in grammar order, each section's items
//   by their order (stable), an empty section as "<x/>".
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "compaction/extractive_rank.h"

namespace harness::extractive_detail {

// The shortest cut of an item worth writing.
constexpr std::size_t kShortestCut = 24;

struct Chosen {
  const Item* item;
  std::string escaped;
};

std::string EscapeWithin(std::string_view clean, std::size_t cap);
std::vector<Item> ScaledToRoom(std::vector<Item> items, std::size_t room);
std::vector<Chosen> Choose(const std::vector<Item>& items, std::size_t room);
std::string Render(std::vector<Chosen> chosen);

}  // namespace harness::extractive_detail
