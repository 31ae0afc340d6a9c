// The archive of a session's removed records: the file retention writes a session's records to
// before the journal removes them (Journal::RemoveBefore), in a format of its own that
// `harness journal show|verify` read (docs/spec/retention.md §2).
//
// Contract:
// - A file is a header, then frames. Header: the magic "HJARCHV1", the format version (u32
//   little-endian, kArchiveVersion), the session id (16 bytes), the SHA-256 of those 28 bytes.
//   Frame: the body's length (u32 LE), the body (seq u64, record id 16 bytes, kind u8, v u32,
//   created_at ns i64, type length u16, type, payload length u32, payload; integers LE), then
//   the record's journal checksum (32 bytes, ComputeRecordChecksum over the session and every
//   field: the same rule the journal checks its rows with).
// - ArchiveReader reads one frame at a time and holds no more than one frame in memory (a body
//   is at most kMaxArchiveFrameBytes, checked before anything is allocated, and read in 64 KiB
//   pieces, so that a short input claiming a long frame costs a piece, not the bound). Strict,
//   first failure wins, every error typed: a short or foreign header -> kMalformed; another version
//   -> kUnsupportedVersion; a header or frame checksum that does not match -> kChecksum; a
//   frame's lengths that disagree, a bad kind, type or record version -> kMalformed (or
//   kUnsupportedVersion for v); seqs not ascending by one from the first frame -> kSequence.
//   End of input inside a frame is no error: it is the torn tail a kill during a write leaves,
//   reported by torn_tail() with the length of the whole frames before it (valid_bytes()).
// - AppendToArchive(path, session, records) appends the records that continue the archive
//   (those above its last seq; the first of them must be exactly the next one, else kSequence)
//   and fsyncs the file, and its directory when it created the file, before it returns: a kill
//   at any point leaves the archive as it was or with whole frames added, or with a torn tail
//   that the next append cuts off (it truncates to valid_bytes() first). An archive of another
//   session is kMalformed. Appending records an archive already holds writes nothing.
// - Errors name the file's offsets, seqs and rules, never record content.
// Thread safety: an ArchiveReader is used by one thread; two appenders to one file must not run
// at once (retention holds the session's lease while it appends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/record.h"

namespace harness {

inline constexpr std::string_view kArchiveMagic = "HJARCHV1";
inline constexpr std::uint32_t kArchiveVersion = 1;
inline constexpr std::size_t kArchiveHeaderBytes = 8 + 4 + 16 + 32;
// The largest frame body: the fixed fields, the longest type name and the largest payload.
inline constexpr std::size_t kMaxArchiveFrameBytes =
    8 + 16 + 1 + 4 + 8 + 2 + kMaxTypeNameBytes + 4 + kMaxPayloadBytes;
// The file name of a session's archive in a data directory: archive/<session>.hjarc.
inline constexpr std::string_view kArchiveDirName = "archive";
inline constexpr std::string_view kArchiveFileSuffix = ".hjarc";

enum class ArchiveErrorKind : std::uint8_t {
  kMalformed,           // not an archive, or a frame that breaks a rule
  kUnsupportedVersion,  // an archive or record version this build does not read
  kChecksum,            // a header or frame whose bytes are not those its checksum was taken of
  kSequence,            // frames out of order, or an append that would leave a gap
  kIo,                  // the file cannot be read, written or synced
  kNotFound,            // no such file
};

// "malformed", "unsupported_version", "checksum", "sequence", "io", "not_found".
std::string_view ArchiveErrorKindName(ArchiveErrorKind kind);

struct ArchiveError {
  ArchiveErrorKind kind = ArchiveErrorKind::kMalformed;
  std::string detail;  // offsets, seqs and rules only
  // "<kind>: <detail>"
  std::string Message() const;
};

// The header of an archive of `session`.
std::string EncodeArchiveHeader(const Uuid& session);
// One frame: `record` as the archive holds it.
std::string EncodeArchiveFrame(const JournalRecord& record);

class ArchiveReader {
 public:
  // Reads and checks the header. `max_record_version` as JournalOptions::max_record_version.
  static Result<ArchiveReader, ArchiveError> Open(std::istream& in,
                                                  std::uint32_t max_record_version = 2);
  // The next record, or nullopt at the end (or at a torn tail).
  Result<std::optional<JournalRecord>, ArchiveError> Next();

  const Uuid& session() const { return session_; }
  std::uint64_t last_seq() const { return last_seq_; }  // 0 before the first frame
  std::uint64_t valid_bytes() const { return valid_bytes_; }
  bool torn_tail() const { return torn_tail_; }

 private:
  ArchiveReader(std::istream& in, std::uint32_t max_record_version, Uuid session)
      : in_(&in), max_record_version_(max_record_version), session_(session) {}

  std::istream* in_;
  std::uint32_t max_record_version_;
  Uuid session_;
  std::uint64_t last_seq_ = 0;
  std::uint64_t valid_bytes_ = kArchiveHeaderBytes;
  bool torn_tail_ = false;
  bool done_ = false;
};

// What a whole archive file holds, read through ArchiveReader without keeping the records.
struct ArchiveSummary {
  Uuid session;
  std::uint64_t first_seq = 0;  // 0: no frame
  std::uint64_t last_seq = 0;
  std::uint64_t records = 0;
  std::uint64_t valid_bytes = 0;
  bool torn_tail = false;
};
Result<ArchiveSummary, ArchiveError> SummarizeArchive(const std::filesystem::path& path,
                                                      std::uint32_t max_record_version = 2);

// Appends `records` (ascending by one) to the archive at `path`, creating it (and its
// directory) when missing; returns the archive's summary after the append.
Result<ArchiveSummary, ArchiveError> AppendToArchive(const std::filesystem::path& path,
                                                     const Uuid& session,
                                                     const std::vector<JournalRecord>& records);

}  // namespace harness
