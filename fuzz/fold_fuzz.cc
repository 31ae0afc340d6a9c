// libFuzzer target for the restore fold and waiter repair (runtime/fold.h, runtime/repair.h).
//
// Input: records separated by 0x00 bytes. Each record is one control byte, then its payload:
//   bits 0-1  the record kind's stored value (0 is no kind; 1 event, 2 command, 3 fence)
//   bit 2     take record_id and type from the decoded payload, as the runtime writes them
//             (otherwise: record_id = DeriveV8(payload), type = kTypes[control >> 5])
//   bit 3     the record's seq skips one ahead
//   bit 4     the record names another session
// Every record belongs to kSession, the session being folded, unless bit 4 says otherwise.
//
// Invariants: SessionFolder::Add and Finish never crash. The first refusal sticks: every later
// Add and Finish return that same error; when every Add succeeded, Finish fails only with
// history_continuation (a LoopCreated whose announced continuation never came). A refusal's
// kind has a wire name, is one the folder reports (never definition_mismatch) and its detail is
// at most kMaxRestoreDetailBytes. A fold that succeeds can be repaired: every planned event
// encodes, the plan has a fence iff it has events, and the journal with the plan appended folds
// again and plans nothing (restore-design §2.2).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/command/codec.h"
#include "harness/event/codec.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "support/journal_builder.h"

namespace {

using namespace harness;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fold_fuzz: %s\n", what);
  std::abort();
}

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-00000000f022").value();
const Uuid kOther = Uuid::Parse("5e551000-0000-4000-8000-00000000f023").value();

constexpr std::string_view kTypes[] = {
    "LoopCreated",           "TurnStarted", "MessageCommitted", "CompactionCommitted",
    "CompactWaiterResolved", "Compact",     "SessionRestored",  "Bogus"};

// The id and type the runtime would have stored for `payload` under `kind`, when it decodes.
void TakeIdentity(JournalRecord& record) {
  switch (record.kind) {
    case RecordKind::kEvent:
      if (auto event = DecodeEvent(record.payload); event.ok()) {
        record.record_id = HeaderOf(*event).event_id;
        record.type = std::string(EventTypeName(*event));
      }
      return;
    case RecordKind::kCommand:
      if (auto command = DecodeCommand(record.payload); command.ok()) {
        record.record_id = HeaderOf(*command).command_id;
        record.type = std::string(CommandTypeName(*command));
      }
      return;
    case RecordKind::kFence:
      if (auto fence = DecodeSessionRestored(record.payload); fence.ok()) {
        record.record_id = SessionRestoredFenceId(kSession, fence->through_seq);
        record.type = std::string(kSessionRestoredType);
      }
      return;
  }
}

std::vector<JournalRecord> ParseRecords(std::string_view input) {
  std::vector<JournalRecord> records;
  std::uint64_t seq = 0;
  while (!input.empty()) {
    const std::size_t end = input.find('\0');
    const std::string_view chunk = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + 1);
    if (chunk.empty())
      continue;
    const auto control = static_cast<std::uint8_t>(chunk[0]);
    JournalRecord record;
    record.payload = std::string(chunk.substr(1));
    record.kind = static_cast<RecordKind>(control & 3);
    seq += (control & 8) != 0 ? 2 : 1;
    record.seq = seq;
    record.session = (control & 16) != 0 ? kOther : kSession;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(record.payload.data());
    record.record_id = Uuid::DeriveV8(std::span(bytes, record.payload.size()));
    record.type = std::string(kTypes[control >> 5]);
    if ((control & 4) != 0)
      TakeIdentity(record);
    records.push_back(std::move(record));
  }
  return records;
}

void CheckError(const RestoreError& error) {
  if (RestoreErrorKindName(error.kind).empty())
    Violation("an error kind without a wire name");
  if (error.kind == RestoreErrorKind::kDefinitionMismatch)
    Violation("the folder reported definition_mismatch");
  if (error.detail.empty() || error.detail.size() > kMaxRestoreDetailBytes)
    Violation("error detail empty or over its bound");
}

Result<SessionFold, RestoreError> Fold(const std::vector<JournalRecord>& records) {
  SessionFolder folder(kSession);
  std::optional<RestoreError> first;
  for (const JournalRecord& record : records) {
    auto added = folder.Add(record);
    if (added.ok()) {
      if (first)
        Violation("an Add succeeded after a refusal");
      continue;
    }
    CheckError(added.error());
    if (!first)
      first = added.error();
    else if (!(added.error() == *first))
      Violation("a later Add returned another error than the first");
  }
  auto finished = std::move(folder).Finish();
  if (first && (finished.ok() || !(finished.error() == *first)))
    Violation("Finish did not return the first error");
  // The one end-of-journal check: an initial history whose continuation never came.
  if (!first && !finished.ok()) {
    CheckError(finished.error());
    if (finished.error().kind != RestoreErrorKind::kHistoryContinuation)
      Violation("Finish failed although every Add succeeded and no continuation was pending");
  }
  return finished;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<JournalRecord> records = ParseRecords(input);
  auto fold = Fold(records);
  if (!fold.ok())
    return 0;
  const RepairPlan plan = PlanRepairs(*fold, EventTime(std::chrono::seconds(1)), kSession, 1);
  if (plan.fence.has_value() == plan.empty())
    Violation("a plan has a fence iff it has events");
  // JournalBuilder aborts when a planned event does not encode.
  if (!testing::RepairsConvergeFailure(kSession, records).empty())
    Violation("the repaired journal does not fold, or plans more repairs");
  return 0;
}
