// Messages in a snapshot of codec version 2 (docs/spec/snapshots.md §2): each message in a
// binary form of the snapshot's own, so that a restore copies strings instead of parsing JSON.
// Why a second encoding of content: a snapshot's decode is the whole cost of a restore from it,
// and the content codec's JSON made that decode cost as much per byte as the journal's own.
//
// Contract:
// - PutSnapshotMessage writes a message that ValidateMessage accepts (the caller checks): the
//   role, the blocks (tool_result content nested inside its block), the role's own fields.
//   Every string is length-prefixed; a text field that is not well-formed UTF-8 is written with
//   each ill-formed byte replaced by U+FFFD (as the content codec writes it); raw bytes (an
//   image's data) are written as they are.
// - GetSnapshotMessage reads one back, strictly, first failure wins: every length and count is
//   bounded by the bytes left before anything is allocated; a role, block kind or flag outside
//   its domain, a text field that is not well-formed UTF-8, a block list nested deeper than
//   kMaxToolResultDepth (refused before it is read: the recursion is bounded), a present
//   provider_state that is empty or a present tool_use input that is `null` (forms the content
//   codec never reads back) and a message ValidateMessage refuses (raw JSON that is not strict
//   JSON) are kMalformed, with a detail that names the rule, never content.
// - A message read back equals the one written when its text fields are well-formed UTF-8
//   (SnapshotMessage.* in snapshot_test.cc).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/runtime/snapshot.h"
#include "runtime/snapshot_bytes.h"

namespace harness::runtime_detail {

// The shortest message: its role and its count of blocks.
inline constexpr std::size_t kMinSnapshotMessageBytes = 1 + 8;

void PutSnapshotMessage(SnapshotBytesWriter& w, const Message& message);
Result<Message, SnapshotError> GetSnapshotMessage(SnapshotBytesReader& r);

// How a snapshot carries messages. Version 1: each in place, as the content codec's JSON (a
// history as one transcript array). Version 2: each as a u32 index into one table of the
// distinct messages, in the binary form above, which the body holds before the state that cites
// it; the undo stack's histories and the live history share most of their messages, and each is
// carried and decoded once.
class MessagesOut {
 public:
  explicit MessagesOut(std::uint32_t version) : version_(version) {}

  Status<SnapshotError> Put(SnapshotBytesWriter& w, const Message& message);
  Status<SnapshotError> PutHistory(SnapshotBytesWriter& w, const std::vector<Message>& history);
  // Version 2's table: the count, then per message in the order of its first citation, how
  // many times it is cited and the message.
  void PutTable(SnapshotBytesWriter& w) const;

 private:
  struct Entry {
    std::size_t index = 0;
    std::uint32_t citations = 0;
  };
  const std::uint32_t version_;
  std::unordered_map<std::string, Entry> index_;  // a message's bytes -> its entry
  std::vector<const std::pair<const std::string, Entry>*> order_;
};

class MessagesIn {
 public:
  explicit MessagesIn(std::uint32_t version) : version_(version) {}

  // The least bytes one message takes where the state cites it.
  std::size_t citation_bytes() const { return version_ == 1 ? 8 : 4; }

  // Version 2: the table, before the state that cites it.
  Status<SnapshotError> GetTable(SnapshotBytesReader& r);
  Result<Message, SnapshotError> Get(SnapshotBytesReader& r, std::string_view what);
  Result<std::vector<Message>, SnapshotError> GetHistory(SnapshotBytesReader& r,
                                                         std::string_view what);
  // After the body: every message of the table was cited as often as it says.
  Status<SnapshotError> CheckAllCited() const;

 private:
  const std::uint32_t version_;
  std::vector<Message> table_;
  std::vector<std::uint32_t> left_;  // citations not read yet, per message of the table
  std::size_t first_uncited_ = 0;
};

}  // namespace harness::runtime_detail
