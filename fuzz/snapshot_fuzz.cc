// libFuzzer target for the snapshot codec (harness/runtime/snapshot.h).
//
// Input: a control byte, then the bytes. Control 's': the bytes are a snapshot's body of the
// current codec version (2: messages in a table of their own binary form), sealed under a
// header whose length and SHA-256 match it (so the body's own rules are reached, not just the
// checksum); control '1': the same for a body of codec version 1 (messages as JSON), which
// every build still reads; anything else: the bytes are a whole payload, as a journal record
// holds it. The seeds (fuzz/corpus/snapshot/) are real snapshots of each kind.
//
// Invariants: DecodeSnapshot never crashes, reads past its input or allocates beyond what its
// input backs; an error has a kind with a wire name and a detail of at most 200 bytes. A snapshot
// that decodes (of either version) encodes again (at the current version), that encoding
// decodes, and encodes to the same bytes (one state, one encoding); and the decoded folder folds
// a record after it without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/runtime/snapshot.h"
#include "support/sealed_snapshot.h"

namespace {

using namespace harness;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "snapshot_fuzz: %s\n", what);
  std::abort();
}

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-00000000a001").value();

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string payload = data[0] == 's'   ? testing::SealedSnapshot(bytes)
                              : data[0] == '1' ? testing::SealedSnapshot(bytes, 1)
                                               : std::string(bytes);
  auto decoded = DecodeSnapshot(payload, kSession);
  if (!decoded.ok()) {
    if (SnapshotErrorKindName(decoded.error().kind).empty())
      Violation("an error kind without a name");
    if (decoded.error().detail.size() > 200)
      Violation("an error detail over 200 bytes");
    return 0;
  }
  auto again = EncodeSnapshot(*decoded);
  if (!again.ok())
    Violation("a decoded snapshot does not encode");
  auto redecoded = DecodeSnapshot(*again, kSession);
  if (!redecoded.ok())
    Violation("a re-encoded snapshot does not decode");
  auto third = EncodeSnapshot(*redecoded);
  if (!third.ok() || *third != *again)
    Violation("one state, two encodings");
  // The folder goes on: a record at the next seq is checked like any other (here refused).
  JournalRecord next;
  next.session = kSession;
  next.seq = decoded->fold().through_seq + 1;
  next.record_id = kSession;
  next.kind = RecordKind::kEvent;
  next.type = "LoopIdle";
  next.payload = "{}";
  (void)decoded->Add(next);
  return 0;
}
