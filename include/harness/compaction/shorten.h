// Shortening oversized tool output in a retained tail, so that a compaction whose newest request
// holds more output than the window can still commit (docs/spec/runtime.md §2.8.1,
// docs/compactors.md "A tail that always fits").
//
// The shortenable blocks of a message list, in list order: every text block directly in a tool
// message (a tool's output), and every tool_use block with an input directly in an assistant
// message (a call's input, such as a whole file written). Nothing else is ever changed: the
// roles, the block counts, the call ids, the tool_use_ids and the error flags stay, so a
// shortened list pairs its calls exactly as the original did.
//
// ShortenText(original, kept_bytes, call_id, kind): the replacement text of one block, keeping
// kept_bytes of the original at most: its first ⌊kept_bytes/2⌋ bytes and its last
// kept_bytes − ⌊kept_bytes/2⌋ bytes, each boundary moved inward to the nearest UTF-8 character
// boundary (a byte that is not a continuation byte), and between them the note
//   "\n[harness shortened this tool output to fit the context window: cut N of M bytes here;
//   the full output of call ID is in the session's journal, and undo restores it]\n"
// ("tool input" and "input" for a call's input), N the bytes cut, M the original's bytes, ID the
// call id with every byte outside [A-Za-z0-9_.:-] replaced by '?' and cut to 64 bytes ("?" when
// empty). A call's shortened input stays JSON: the object {"shortened_input":"<the text>"}.
// The text is part of the journal's meaning (the fold rebuilds it from the event to check a
// commit's retained list), so it is fixed for the event version.
//
// PlanShortening(messages, bytes_to_cut): largest first, to a common level. Every shortenable
// block whose original is larger than kMinShortenedKeptBytes is a candidate; at a level L
// (kept bytes), each candidate that a cut to L makes smaller (its replacement, note included, is
// shorter than its original) is shortened to L. The level chosen is the highest L >=
// kMinShortenedKeptBytes whose saving (original bytes minus replacement bytes, summed) reaches
// bytes_to_cut; when even kMinShortenedKeptBytes does not, that lowest level is used and
// `exhausted` is set. bytes_to_cut 0, or no candidate, shortens nothing. The records are in list
// order (message, then block).
//
// ApplyShortening(messages, records): the same replacement, from the records: each record's
// block must exist, be shortenable, hold exactly original_bytes bytes, and kept_bytes must be
// below them; otherwise nullopt. Records must be in strictly ascending (message, block) order.
// The live compaction and the restore fold both build the shortened tail through ShortenText,
// so a restored history is the one the live loop installed.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"

namespace harness {

// The least a shortened block keeps of its original: enough of the head and the tail of a build
// log or a file to say what it was.
inline constexpr std::uint64_t kMinShortenedKeptBytes = 2048;
inline constexpr std::size_t kMaxShortenedCallIdBytes = 64;

// One shortened block of a committed retained list (CompactionCommitted::shortened).
struct ShortenedBlock {
  std::uint32_t message = 0;  // index into the retained list
  std::uint32_t block = 0;    // index into that message's blocks
  std::uint64_t original_bytes = 0;
  std::uint64_t kept_bytes = 0;  // the budget of original bytes kept (head + tail)
  friend bool operator==(const ShortenedBlock&, const ShortenedBlock&) = default;
};

enum class ShortenedKind : std::uint8_t { kOutput, kInput };

std::string ShortenText(std::string_view original, std::uint64_t kept_bytes,
                        std::string_view call_id, ShortenedKind kind);

struct ShorteningPlan {
  std::vector<Message> messages;  // the list with the chosen blocks shortened
  std::vector<ShortenedBlock> shortened;
  std::uint64_t saved_bytes = 0;  // original bytes minus replacement bytes, over the records
  bool exhausted = false;         // nothing more can be cut: every candidate is at the least
};

ShorteningPlan PlanShortening(const std::vector<Message>& messages, std::uint64_t bytes_to_cut);

std::optional<std::vector<Message>> ApplyShortening(std::vector<Message> messages,
                                                    const std::vector<ShortenedBlock>& records);

// The records' rule on a committed list alone (the event validator's): strictly ascending
// (message, block); each names an existing block that is shortenable in that list; 0 <
// kept_bytes < original_bytes.
bool IsValidShortening(const std::vector<Message>& messages,
                       const std::vector<ShortenedBlock>& records);

// Totals for reports: how many blocks, and how many bytes of original were cut.
std::uint64_t ShortenedBytes(const std::vector<ShortenedBlock>& records);

}  // namespace harness
