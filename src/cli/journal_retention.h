// `harness journal compact` and what `journal show|verify` read of a compacted journal: where a
// session's archive is (a data directory's archive/<session>.hjarc, or the path a PostgreSQL
// journal's horizon stores), the archive's records printed and checked
// (docs/spec/retention.md, docs/cli.md "harness journal compact").
// Thread safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "arguments.h"
#include "harness/core/result.h"
#include "harness/journal/journal.h"
#include "harness/runtime/session.h"

namespace harness::cli {

struct JournalCompactLine {
  std::string store;
  std::string session;
  std::string keep = "1";  // K, or "none"
  bool drop = false;
  std::string archive_dir;  // required for PostgreSQL unless --drop
};

int CompactJournal(const JournalCompactLine& line);

// The sessions a journal command walks: `only`, or every session of the journal in order.
Result<std::vector<Uuid>, JournalError> SelectedSessions(Journal& journal,
                                                         const std::optional<Uuid>& only);

// `harness serve --retention K|none [--retention-archive-dir DIR]`: the SessionRetention every
// session of `store` runs, or a usage message (a PostgreSQL journal needs the directory).
Result<SessionRetention, std::string> ServeRetention(const JournalStore& store,
                                                     const std::string& keep,
                                                     const std::string& archive_dir);

// The archive a horizon names, as a path on this machine: relative to the data directory for
// a data directory's journal, as stored (absolute) for PostgreSQL. nullopt: no archive.
std::optional<std::filesystem::path> ArchivePathOf(const JournalStore& store,
                                                   const SessionHorizon& horizon);

// Prints (through `print`) the archived records of `session` with seq >= from; returns the exit
// code on a problem (the archive missing or damaged: 1, naming it on stderr).
std::optional<int> ShowArchived(const JournalStore& store, const Uuid& session,
                                const SessionHorizon& horizon, std::uint64_t from,
                                const std::function<void(const JournalRecord&)>& print);

// Checks the archive of every session with a horizon: it is this session's, whole, and holds
// the records up to the horizon's archived_to. Returns the number of archived records checked,
// or the problem (printed on stdout as verify prints problems) as exit code 1.
struct ArchiveCheck {
  std::uint64_t archived = 0;
  std::uint64_t dropped = 0;
  std::optional<std::string> problem;
};
ArchiveCheck CheckArchives(Journal& journal, const JournalStore& store);

}  // namespace harness::cli
