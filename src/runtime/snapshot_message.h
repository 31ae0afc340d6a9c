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

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/runtime/snapshot.h"
#include "runtime/snapshot_bytes.h"

namespace harness::runtime_detail {

// The shortest message: its role and its count of blocks.
inline constexpr std::size_t kMinSnapshotMessageBytes = 1 + 8;

void PutSnapshotMessage(SnapshotBytesWriter& w, const Message& message);
Result<Message, SnapshotError> GetSnapshotMessage(SnapshotBytesReader& r);

}  // namespace harness::runtime_detail
