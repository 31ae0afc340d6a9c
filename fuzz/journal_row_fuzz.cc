// Fuzz target for reading a stored journal row: whatever bytes a damaged database hands back,
// DecodeStoredRow and the Verify scan return a record or a typed JournalError, never crash.
// Half the inputs start from a valid row and damage it, so the checks after the version and
// checksum are reached too.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>

#include "harness/core/sha256.h"
#include "journal/rules.h"

namespace {

harness::Uuid ConsumeUuid(FuzzedDataProvider& data) {
  harness::Uuid::Bytes bytes{};
  for (auto& b : bytes)
    b = data.ConsumeIntegral<std::uint8_t>();
  return harness::Uuid(bytes);
}

void Check(bool condition) {
  if (!condition)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  using namespace harness;
  using namespace harness::journal_internal;
  FuzzedDataProvider data(bytes, size);
  const std::uint32_t max_version = data.ConsumeIntegralInRange<std::uint32_t>(1, 3);

  StoredRow row;
  if (data.ConsumeBool()) {
    NewRecord record;
    record.record_id = ConsumeUuid(data);
    record.kind = static_cast<RecordKind>(data.ConsumeIntegralInRange<int>(1, 3));
    record.type = data.ConsumeRandomLengthString(32);
    record.v = data.ConsumeIntegralInRange<std::uint32_t>(1, max_version);
    record.payload = data.ConsumeRandomLengthString(256);
    const Uuid session = ConsumeUuid(data);
    const auto seq = data.ConsumeIntegral<std::uint64_t>();
    row = MakeStoredRow(session, seq, record, Sha256(record.payload));
    const bool damage = data.ConsumeBool() && !row.payload.empty();
    if (damage) {
      row.payload[data.ConsumeIntegralInRange<std::size_t>(0, row.payload.size() - 1)] ^=
          static_cast<char>(data.ConsumeIntegralInRange<int>(1, 255));
    }
    auto decoded = DecodeStoredRow(row, max_version);
    if (!damage) {
      // An intact row always reads back as exactly what was appended.
      Check(decoded.ok());
      Check(decoded->payload == record.payload && decoded->seq == seq &&
            decoded->session == session && decoded->record_id == record.record_id);
    } else {
      Check(!decoded.ok());
    }
  } else {
    row.session = ConsumeUuid(data);
    row.seq = data.ConsumeIntegral<std::uint64_t>();
    row.record_id = ConsumeUuid(data);
    row.kind_raw = data.ConsumeIntegral<std::int64_t>();
    row.type = data.ConsumeRandomLengthString(64);
    row.v_raw = data.ConsumeIntegral<std::int64_t>();
    row.created_at_ns = data.ConsumeIntegral<std::int64_t>();
    row.checksum = data.ConsumeRandomLengthString(40);
    row.payload = data.ConsumeRemainingBytesAsString();
    (void)DecodeStoredRow(row, max_version);
  }
  VerifyScanner scanner(max_version);
  (void)scanner.Add(row);
  (void)scanner.Finish();
  return 0;
}
