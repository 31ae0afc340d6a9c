// `harness journal compact`, and the archives `journal show|verify` read
// (journal_retention.h, docs/spec/retention.md).
#include "journal_retention.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "commands.h"
#include "event_lines.h"
#include "harness/core/env.h"
#include "harness/journal/archive.h"
#include "harness/runtime/retention.h"
#include "journal_factory.h"
#include "terminal_text.h"

namespace harness::cli {

namespace fs = std::filesystem;

namespace {

constexpr auto kCompactLeaseTtl = std::chrono::minutes(2);

void Say(std::FILE* out, const std::string& text) {
  const std::string shown = TerminalText(text);
  std::fwrite(shown.data(), 1, shown.size(), out);
  std::fputc('\n', out);
}

std::optional<RetentionPolicy> ParseKeep(const std::string& keep) {
  RetentionPolicy policy;
  if (keep == "none") {
    policy.keep_compactions.reset();
    return policy;
  }
  if (keep.empty() || keep.size() > 6 || keep.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const unsigned long k = std::stoul(keep);
  if (k < 1)
    return std::nullopt;
  policy.keep_compactions = static_cast<std::uint32_t>(k);
  return policy;
}

}  // namespace

std::optional<fs::path> ArchivePathOf(const JournalStore& store, const SessionHorizon& horizon) {
  if (horizon.archive.empty())
    return std::nullopt;
  if (store.kind == JournalStore::Kind::kDataDirectory)
    return fs::path(store.location) / horizon.archive;
  return fs::path(horizon.archive);
}

std::optional<int> ShowArchived(const JournalStore& store, const Uuid& session,
                                const SessionHorizon& horizon, std::uint64_t from,
                                const std::function<void(const JournalRecord&)>& print) {
  const auto path = ArchivePathOf(store, horizon);
  if (!path)
    return std::nullopt;
  std::ifstream in(*path, std::ios::binary);
  if (!in) {
    Say(stderr, fmt::format("harness journal show: cannot open the archive {} of session {}",
                            path->string(), session.ToString()));
    return kExitInvalid;
  }
  auto reader = ArchiveReader::Open(in);
  if (!reader.ok()) {
    Say(stderr, fmt::format("harness journal show: archive {}: {}", path->string(),
                            reader.error().Message()));
    return kExitInvalid;
  }
  for (;;) {
    auto next = reader->Next();
    if (!next.ok()) {
      std::fflush(stdout);
      Say(stderr, fmt::format("harness journal show: archive {}: {}", path->string(),
                              next.error().Message()));
      return kExitInvalid;
    }
    if (!*next || (*next)->seq >= horizon.first_seq)
      break;
    if ((*next)->seq >= from)
      print(**next);
  }
  return std::nullopt;
}

ArchiveCheck CheckArchives(Journal& journal, const JournalStore& store) {
  ArchiveCheck check;
  auto sessions = journal.ListSessions();
  if (!sessions.ok()) {
    check.problem = sessions.error().Describe();
    return check;
  }
  for (const Uuid& session : *sessions) {
    auto horizon = journal.Horizon(session);
    if (!horizon.ok()) {
      check.problem = horizon.error().Describe();
      return check;
    }
    if (horizon->first_seq == 1)
      continue;
    const auto path = ArchivePathOf(store, *horizon);
    const std::uint64_t from_archive = path ? horizon->archived_to : 0;
    check.dropped += horizon->first_seq - 1 - from_archive;
    if (!path)
      continue;
    auto summary = SummarizeArchive(*path);
    if (!summary.ok()) {
      check.problem = fmt::format("archive {} of session {}: {}", path->string(),
                                  session.ToString(), summary.error().Message());
      return check;
    }
    // A torn tail or frames past the horizon are what a kill during a later run leaves: the
    // records it holds up to archived_to are what must be whole.
    if (summary->session != session || summary->records == 0 ||
        summary->last_seq < horizon->archived_to) {
      check.problem = fmt::format(
          "archive {} of session {}: it must hold the records up to seq {} and holds {}..{}",
          path->string(), session.ToString(), horizon->archived_to, summary->first_seq,
          summary->last_seq);
      return check;
    }
    check.archived += horizon->archived_to - summary->first_seq + 1;
    check.dropped += summary->first_seq - 1;
  }
  return check;
}

Result<SessionRetention, std::string> ServeRetention(const JournalStore& store,
                                                     const std::string& keep,
                                                     const std::string& archive_dir) {
  const auto policy = ParseKeep(keep);
  if (!policy)
    return Fail(std::string("--retention is a number from 1 to 999999, or none"));
  SessionRetention retention;
  retention.policy = *policy;
  if (store.kind == JournalStore::Kind::kDataDirectory) {
    retention.archive_dir = fs::path(store.location) / kArchiveDirName;
    retention.archive_prefix = std::string(kArchiveDirName) + "/";
    return retention;
  }
  if (archive_dir.empty()) {
    return Fail(
        std::string("--retention with a PostgreSQL journal needs --retention-archive-dir "
                    "DIR for its archives"));
  }
  std::error_code ec;
  retention.archive_dir = fs::absolute(archive_dir, ec);
  retention.archive_prefix = retention.archive_dir.string() + "/";
  return retention;
}

Result<std::vector<Uuid>, JournalError> SelectedSessions(Journal& journal,
                                                         const std::optional<Uuid>& only) {
  if (only)
    return std::vector<Uuid>{*only};
  return journal.ListSessions();
}

int CompactJournal(const JournalCompactLine& line) {
  const auto policy = ParseKeep(line.keep);
  if (!policy) {
    Say(stderr,
        "harness journal compact: --keep-compactions is a number from 1 to 999999, or "
        "none");
    return kExitUsage;
  }
  std::optional<Uuid> only;
  if (!line.session.empty()) {
    auto id = Uuid::Parse(line.session);
    if (!id.ok()) {
      Say(stderr, "harness journal compact: --session is not a UUID");
      return kExitUsage;
    }
    only = *id;
  }
  auto store = ParseJournalStore(line.store);
  if (!store.ok()) {
    Say(stderr, "harness journal compact: " + store.error());
    return kExitUsage;
  }
  const bool postgres = store->kind == JournalStore::Kind::kPostgres;
  if (postgres && !line.drop && line.archive_dir.empty()) {
    Say(stderr,
        "harness journal compact: a PostgreSQL journal needs --archive-dir DIR for its "
        "archives (or --drop to remove the records without one)");
    return kExitUsage;
  }
  auto journal = OpenJournalStore(*store, StoreAccess::kExisting);
  if (!journal.ok()) {
    Say(stderr, "harness journal compact: " + StoreProblem(*store, journal.error()));
    return ExitForJournalError(journal.error());
  }
  auto sessions = SelectedSessions(**journal, only);
  if (!sessions.ok()) {
    Say(stderr, "harness journal compact: " + sessions.error().Describe());
    return ExitForJournalError(sessions.error());
  }
  SystemEnv env;
  int code = kExitOk;
  for (const Uuid& session : *sessions) {
    const std::string id = session.ToString();
    auto lease = (*journal)->AcquireLease(session, Uuid::V4(), kCompactLeaseTtl);
    if (!lease.ok()) {
      if (lease.error().kind == JournalErrorKind::kLeaseHeld && lease.error().holder) {
        Say(stdout, fmt::format("skipped {}: a live writer holds its lease until {}{}", id,
                                Rfc3339(lease.error().holder->expires_at),
                                lease.error().holder->url.empty()
                                    ? std::string()
                                    : " (" + lease.error().holder->url + ")"));
      } else {
        Say(stdout, fmt::format("skipped {}: {}", id, lease.error().Describe()));
      }
      code = kExitInvalid;
      continue;
    }
    RetentionOptions options;
    options.policy = *policy;
    options.drop = line.drop;
    options.now = env.WallNow();
    if (!line.drop) {
      if (postgres) {
        std::error_code ec;
        options.archive_path =
            fs::absolute(fs::path(line.archive_dir) / (id + std::string(kArchiveFileSuffix)), ec);
        options.archive_name = options.archive_path.string();
      } else {
        options.archive_path = DataDirArchivePath(store->location, session);
        options.archive_name = DataDirArchiveName(session);
      }
    }
    auto ran = RunRetention(**journal, *lease, options);
    (void)(*journal)->ReleaseLease(*lease);
    if (!ran.ok()) {
      Say(stdout, fmt::format("failed {}: {}", id, ran.error().Message()));
      code = kExitInvalid;
      continue;
    }
    const RetentionPlan& plan = ran->plan;
    if (plan.snapshot_seq == 0) {
      Say(stdout, fmt::format("kept {}: no valid snapshot, so every record stays", id));
    } else if (plan.removed() == 0) {
      Say(stdout, fmt::format("kept {}: nothing to remove (the journal starts at seq {}, the "
                              "newest valid snapshot is seq {})",
                              id, plan.horizon, plan.snapshot_seq));
    } else {
      Say(stdout,
          fmt::format("compacted {}: removed seq {}..{} ({} records) {}; the journal "
                      "starts at seq {}, its newest valid snapshot is seq {}",
                      id, plan.horizon, plan.first_kept_seq - 1, plan.removed(),
                      line.drop ? std::string("without an archive (--drop)")
                                : "after archiving them to " + options.archive_path.string(),
                      plan.first_kept_seq, plan.snapshot_seq));
    }
  }
  return code;
}

}  // namespace harness::cli
