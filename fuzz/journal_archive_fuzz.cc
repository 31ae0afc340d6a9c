// libFuzzer target for the archive reader (harness/journal/archive.h).
//
// Input: the bytes of an archive file. The seeds (fuzz/corpus/journal_archive/) are archives of
// four records of each kind, of two records and a torn third, and a header alone.
//
// Invariants: ArchiveReader never crashes, reads past its input or allocates beyond a frame's
// bound; an error has a kind with a wire name and a detail of at most 200 bytes; the records it
// returns ascend by one and belong to the header's session; valid_bytes never exceeds the input,
// and the whole frames before it read back the same records when the input is cut there.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "harness/journal/archive.h"

namespace {

using namespace harness;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "journal_archive_fuzz: %s\n", what);
  std::abort();
}

struct Read {
  bool opened = false;
  std::vector<JournalRecord> records;
  bool failed = false;
  std::uint64_t valid = 0;
};

Read ReadAll(const std::string& bytes) {
  Read out;
  std::istringstream in(bytes);
  auto reader = ArchiveReader::Open(in);
  if (!reader.ok()) {
    if (ArchiveErrorKindName(reader.error().kind).empty() || reader.error().detail.size() > 200)
      Violation("an open error without a name or with a long detail");
    return out;
  }
  out.opened = true;
  for (;;) {
    auto next = reader->Next();
    if (!next.ok()) {
      if (ArchiveErrorKindName(next.error().kind).empty() || next.error().detail.size() > 200)
        Violation("a frame error without a name or with a long detail");
      out.failed = true;
      break;
    }
    if (!*next)
      break;
    if ((*next)->session != reader->session())
      Violation("a record of another session");
    if (!out.records.empty() && (*next)->seq != out.records.back().seq + 1)
      Violation("records that do not ascend by one");
    out.records.push_back(std::move(**next));
  }
  out.valid = reader->valid_bytes();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const Read read = ReadAll(bytes);
  if (!read.opened)
    return 0;
  if (read.valid > bytes.size())
    Violation("valid_bytes beyond the input");
  const Read again = ReadAll(bytes.substr(0, read.valid));
  if (again.failed || again.records != read.records)
    Violation("the whole frames do not read back alone");
  return 0;
}
