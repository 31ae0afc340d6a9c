// The archive of a session's removed records (harness/journal/archive.h,
// docs/spec/retention.md §2). A frame carries the record's journal checksum, so an archived
// record is checked by the same rule (DecodeStoredRow) as a stored row.
#include "harness/journal/archive.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "harness/core/sha256.h"
#include "journal/rules.h"

namespace harness {

namespace fs = std::filesystem;

namespace {

using K = ArchiveErrorKind;

ArchiveError Error(ArchiveErrorKind kind, std::string detail) {
  return ArchiveError{kind, std::move(detail)};
}

template <class T>
void PutLe(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff));
}

template <class T>
T GetLe(std::string_view bytes, std::size_t at) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return static_cast<T>(value);
}

// The fixed part of a body before the type: seq, record id, kind, v, created_at, type length.
constexpr std::size_t kFixedBeforeType = 8 + 16 + 1 + 4 + 8 + 2;

// Reads up to n bytes; returns how many were read (fewer only at the end of the input).
std::size_t ReadUpTo(std::istream& in, char* out, std::size_t n) {
  in.read(out, static_cast<std::streamsize>(n));
  return static_cast<std::size_t>(in.gcount());
}

Status<ArchiveError> SyncPath(const fs::path& path, int flags, std::string_view what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    return Fail(
        Error(K::kIo, fmt::format("cannot open {} to sync it: {}", what, std::strerror(errno))));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0)
    return Fail(Error(K::kIo, fmt::format("cannot sync {}: {}", what, std::strerror(saved))));
  return {};
}

}  // namespace

std::string_view ArchiveErrorKindName(ArchiveErrorKind kind) {
  switch (kind) {
    case K::kMalformed:
      return "malformed";
    case K::kUnsupportedVersion:
      return "unsupported_version";
    case K::kChecksum:
      return "checksum";
    case K::kSequence:
      return "sequence";
    case K::kIo:
      return "io";
    case K::kNotFound:
      return "not_found";
  }
  return "";
}

std::string ArchiveError::Message() const {
  return std::string(ArchiveErrorKindName(kind)) + ": " + detail;
}

std::string EncodeArchiveHeader(const Uuid& session) {
  std::string out(kArchiveMagic);
  PutLe<std::uint32_t>(out, kArchiveVersion);
  out.append(reinterpret_cast<const char*>(session.bytes().data()), session.bytes().size());
  const Sha256Digest digest = Sha256(out);
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return out;
}

std::string EncodeArchiveFrame(const JournalRecord& record) {
  std::string body;
  body.reserve(kFixedBeforeType + record.type.size() + 4 + record.payload.size());
  PutLe<std::uint64_t>(body, record.seq);
  body.append(reinterpret_cast<const char*>(record.record_id.bytes().data()), 16);
  body.push_back(static_cast<char>(static_cast<std::uint8_t>(record.kind)));
  PutLe<std::uint32_t>(body, record.v);
  PutLe<std::int64_t>(body, record.created_at.time_since_epoch().count());
  PutLe<std::uint16_t>(body, static_cast<std::uint16_t>(record.type.size()));
  body.append(record.type);
  PutLe<std::uint32_t>(body, static_cast<std::uint32_t>(record.payload.size()));
  body.append(record.payload);
  const Sha256Digest sum = ComputeRecordChecksum(
      record.session, record.seq, record.record_id, static_cast<std::uint8_t>(record.kind),
      record.type, record.v, record.created_at, Sha256(record.payload));
  std::string out;
  out.reserve(4 + body.size() + sum.size());
  PutLe<std::uint32_t>(out, static_cast<std::uint32_t>(body.size()));
  out.append(body);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  return out;
}

Result<ArchiveReader, ArchiveError> ArchiveReader::Open(std::istream& in,
                                                        std::uint32_t max_record_version) {
  std::string header(kArchiveHeaderBytes, '\0');
  const std::size_t got = ReadUpTo(in, header.data(), header.size());
  if (got < kArchiveHeaderBytes || std::string_view(header).substr(0, 8) != kArchiveMagic) {
    return Fail(Error(K::kMalformed,
                      fmt::format("not an archive: the first {} bytes are not an archive header",
                                  kArchiveHeaderBytes)));
  }
  const auto version = GetLe<std::uint32_t>(header, 8);
  if (version != kArchiveVersion) {
    return Fail(Error(K::kUnsupportedVersion,
                      fmt::format("archive format version {} is not known (this build reads {})",
                                  version, kArchiveVersion)));
  }
  const Sha256Digest digest = Sha256(std::string_view(header).substr(0, 28));
  if (!std::equal(digest.begin(), digest.end(),
                  reinterpret_cast<const std::uint8_t*>(header.data() + 28))) {
    return Fail(Error(K::kChecksum, "the archive header does not match its checksum"));
  }
  Uuid::Bytes id{};
  std::memcpy(id.data(), header.data() + 12, id.size());
  return ArchiveReader(in, max_record_version, Uuid(id));
}

Result<std::optional<JournalRecord>, ArchiveError> ArchiveReader::Next() {
  if (done_)
    return std::optional<JournalRecord>();
  const std::uint64_t at = valid_bytes_;
  const auto torn = [this]() -> Result<std::optional<JournalRecord>, ArchiveError> {
    torn_tail_ = true;
    done_ = true;
    return std::optional<JournalRecord>();
  };
  char length_bytes[4];
  const std::size_t got = ReadUpTo(*in_, length_bytes, sizeof(length_bytes));
  if (got == 0) {
    done_ = true;
    return std::optional<JournalRecord>();
  }
  if (got < sizeof(length_bytes))
    return torn();
  const auto length = GetLe<std::uint32_t>(std::string_view(length_bytes, 4), 0);
  if (length < kFixedBeforeType + 4 || length > kMaxArchiveFrameBytes) {
    done_ = true;
    return Fail(
        Error(K::kMalformed, fmt::format("offset {}: a frame of {} bytes (a frame holds {} to {})",
                                         at, length, kFixedBeforeType + 4, kMaxArchiveFrameBytes)));
  }
  // Read in pieces, so that what is allocated is what the input holds (a length near the bound
  // in a short input costs a piece, not the bound); a short input is a torn tail.
  constexpr std::size_t kPiece = 64 * 1024;
  const std::size_t need = std::size_t{length} + 32;
  std::string frame;
  while (frame.size() < need) {
    const std::size_t have = frame.size();
    const std::size_t piece = std::min(kPiece, need - have);
    frame.resize(have + piece);
    if (ReadUpTo(*in_, frame.data() + have, piece) < piece)
      return torn();
  }
  const std::string_view body(frame.data(), length);
  done_ = true;  // until the frame is known good
  journal_internal::StoredRow row;
  row.session = session_;
  row.seq = GetLe<std::uint64_t>(body, 0);
  Uuid::Bytes id{};
  std::memcpy(id.data(), body.data() + 8, id.size());
  row.record_id = Uuid(id);
  row.kind_raw = static_cast<unsigned char>(body[24]);
  row.v_raw = GetLe<std::uint32_t>(body, 25);
  row.created_at_ns = GetLe<std::int64_t>(body, 29);
  const std::size_t type_length = GetLe<std::uint16_t>(body, 37);
  const std::size_t payload_at = kFixedBeforeType + type_length + 4;
  if (type_length == 0 || type_length > kMaxTypeNameBytes || payload_at > body.size() ||
      GetLe<std::uint32_t>(body, payload_at - 4) != body.size() - payload_at) {
    return Fail(Error(K::kMalformed,
                      fmt::format("offset {}: the frame's type and payload lengths do not add up "
                                  "to its length",
                                  at)));
  }
  row.type = std::string(body.substr(kFixedBeforeType, type_length));
  if (!IsValidRecordTypeName(row.type)) {
    return Fail(
        Error(K::kMalformed, fmt::format("offset {}: the type name is not a record type", at)));
  }
  if (row.seq == 0 || (last_seq_ != 0 && row.seq != last_seq_ + 1)) {
    return Fail(Error(K::kSequence, fmt::format("offset {}: seq {} after seq {} (an archive's "
                                                "seqs ascend by one)",
                                                at, row.seq, last_seq_)));
  }
  row.payload = std::string(body.substr(payload_at));
  row.checksum = std::string(frame.data() + length, 32);
  auto record = journal_internal::DecodeStoredRow(std::move(row), max_record_version_);
  if (!record.ok()) {
    const auto kind = record.error().kind == JournalErrorKind::kUnsupportedVersion
                          ? K::kUnsupportedVersion
                          : (record.error().detail.find("checksum mismatch") != std::string::npos
                                 ? K::kChecksum
                                 : K::kMalformed);
    return Fail(Error(kind, fmt::format("offset {}: {}", at, record.error().detail)));
  }
  done_ = false;
  last_seq_ = record->seq;
  valid_bytes_ = at + 4 + frame.size();
  return std::optional<JournalRecord>(std::move(*record));
}

Result<ArchiveSummary, ArchiveError> SummarizeArchive(const fs::path& path,
                                                      std::uint32_t max_record_version) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Fail(Error(K::kNotFound, "no archive at " + path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Fail(Error(K::kIo, "cannot open the archive " + path.string()));
  HARNESS_TRY(ArchiveReader reader, ArchiveReader::Open(in, max_record_version));
  ArchiveSummary summary;
  summary.session = reader.session();
  for (;;) {
    HARNESS_TRY(std::optional<JournalRecord> record, reader.Next());
    if (!record)
      break;
    if (summary.first_seq == 0)
      summary.first_seq = record->seq;
    ++summary.records;
  }
  summary.last_seq = reader.last_seq();
  summary.valid_bytes = reader.valid_bytes();
  summary.torn_tail = reader.torn_tail();
  return summary;
}

Result<ArchiveSummary, ArchiveError> AppendToArchive(const fs::path& path, const Uuid& session,
                                                     const std::vector<JournalRecord>& records) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  ArchiveSummary summary;
  summary.session = session;
  summary.valid_bytes = kArchiveHeaderBytes;
  if (exists) {
    HARNESS_TRY(summary, SummarizeArchive(path));
    if (summary.session != session) {
      return Fail(Error(K::kMalformed, fmt::format("{} is the archive of session {}", path.string(),
                                                   summary.session.ToString())));
    }
  } else {
    fs::create_directories(path.parent_path(), ec);
    if (ec) {
      return Fail(
          Error(K::kIo, fmt::format("cannot create the archive's directory: {}", ec.message())));
    }
  }
  std::string out;
  if (!exists)
    out = EncodeArchiveHeader(session);
  std::uint64_t last = summary.last_seq;
  std::uint64_t added = 0;
  for (const JournalRecord& record : records) {
    if (record.session != session)
      return Fail(Error(K::kMalformed, "a record of another session"));
    if (last != 0 && record.seq <= last)
      continue;  // already archived (a re-run after a kill)
    if (last != 0 && record.seq != last + 1) {
      return Fail(Error(K::kSequence,
                        fmt::format("the archive ends at seq {} and the next record is seq {}",
                                    last, record.seq)));
    }
    out += EncodeArchiveFrame(record);
    if (summary.first_seq == 0)
      summary.first_seq = record.seq;
    last = record.seq;
    ++added;
  }
  if (exists && added == 0 && !summary.torn_tail)
    return summary;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Fail(
        Error(K::kIo, fmt::format("cannot open the archive to write: {}", std::strerror(errno))));
  }
  const auto fail = [fd](std::string what) -> Result<ArchiveSummary, ArchiveError> {
    const int saved = errno;
    ::close(fd);
    return Fail(Error(K::kIo, fmt::format("{}: {}", what, std::strerror(saved))));
  };
  // A torn tail (a kill during an earlier append) is cut off before the new frames.
  const off_t start = exists ? static_cast<off_t>(summary.valid_bytes) : 0;
  if (::ftruncate(fd, start) != 0)
    return fail("cannot cut the archive's torn tail");
  if (::lseek(fd, start, SEEK_SET) != start)
    return fail("cannot seek in the archive");
  std::size_t written = 0;
  while (written < out.size()) {
    const ssize_t n = ::write(fd, out.data() + written, out.size() - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("cannot write the archive");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0)
    return fail("cannot sync the archive");
  ::close(fd);
  if (!exists)
    HARNESS_CHECK(SyncPath(path.parent_path().empty() ? fs::path(".") : path.parent_path(),
                           O_RDONLY | O_DIRECTORY, "the archive's directory"));
  summary.valid_bytes = static_cast<std::uint64_t>(start) + out.size();
  summary.last_seq = last;
  summary.records += added;
  summary.torn_tail = false;
  return summary;
}

}  // namespace harness
