// The extractive compactor's ranking: an Extract (extractive_reader.h) as Items, each a section's
// piece of text with its place in the section and its own byte cap, in priority order.
//
// Contract of Prioritize(extract):
// - The order is the one compaction/extractive.h states: the goal's first request (the carried
//   summary's task first), the state's lead (files edited, else created, else the latest
//   progress), the unanswered request, every constraint, the later requests newest first, the
//   edits, commits, steps, reports, test runs and failing tests, names in play, the other
//   files, the latest progress, the carried state, failed commands, next steps, todo items,
//   open calls, the carried open items, the older steps and requests, failed commands that
//   only look at files, errors fixed on the way, decisions newest first, then the rest of the
//   ledger, then the reasons of the edits told, each extending its edit's item ("Edit of a.py:
//   … (why)"): what an edit did comes before why, which is told only in the room left.
// - The first item is always the goal and the second always the state's lead (a fixed
//   sentence when there is none), so that two items always exist.
// - Each distinct text is told once per section, at its first place ("Earlier: " and "Later: "
//   prefixes aside, case aside). File paths under a workspace root held by most absolute paths
//   are told relative to it.
// - Texts are clean and unescaped; `cap` bounds the escaped bytes; `order` sorts within a
//   section when rendered (extractive_render.h).
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compaction/extractive_reader.h"

namespace harness::extractive_detail {

enum class Section : std::uint8_t { kGoal, kConstraints, kDecisions, kState, kOpenItems };

inline constexpr std::size_t kExtendsNothing = static_cast<std::size_t>(-1);

struct Item {
  Section section;
  std::size_t order;  // place within its section
  std::string text;   // clean, unescaped
  std::size_t cap;    // escaped bytes at most
  // The index of an earlier item whose told text this one's is appended to, when there is
  // room (extractive_render.h); kExtendsNothing for an item of its own.
  std::size_t extends = kExtendsNothing;
};

std::vector<Item> Prioritize(const Extract& extract);

}  // namespace harness::extractive_detail
