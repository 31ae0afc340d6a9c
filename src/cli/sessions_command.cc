// `harness sessions ls STORE` and `harness sessions show STORE ID`: what a journal holds, per
// session, as a restore would see it (docs/cli.md). Both are pure readers: they fold the journal
// (SessionFolder) and plan the repairs a restore would append (PlanRepairs), take no lease and
// write nothing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/internal/json_dom.h"
#include "event_lines.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "journal_factory.h"
#include "restore_preview.h"
#include "terminal_text.h"

namespace harness::cli {

struct SessionsCommandLine {
  CLI::App* ls = nullptr;
  CLI::App* show = nullptr;
  std::string store;
  std::string session;
  bool json = false;
};

namespace {

// What `show` prints of a pending input.
constexpr std::size_t kInputBytes = 60;

std::string Refusal(const RestoreError& error) {
  return "restore refused: " + error.Message();
}

std::string LoopStatusText(const LoopFold& loop) {
  if (loop.exited)
    return "exited";
  return loop.open_turn ? "open turn" : "idle";
}

std::string HistoryText(const LoopFold& loop) {
  std::string text = loop.derived_prefix > 0 ? fmt::format("summary + {}", loop.history.size() - 1)
                                             : std::to_string(loop.history.size());
  if (!loop.pinned.empty())
    text += fmt::format(", {} pinned", loop.pinned.size());
  return text;
}

std::string BasisText(const ContextBasis& basis) {
  if (!basis.IsValid())
    return "none";
  return fmt::format("rev {}@{}", basis.revision, basis.through_event_id.ToString());
}

// What each command of the plan will be answered, by command id.
struct PlannedReply {
  Uuid loop;
  Uuid command;
  std::string reply;
};

std::vector<PlannedReply> PlannedReplies(const RepairPlan& plan) {
  std::vector<PlannedReply> out;
  for (const Event& event : plan.events) {
    if (const auto* resolved = std::get_if<CompactWaiterResolved>(&event)) {
      out.push_back(
          {resolved->header.loop_id, resolved->header.cause.command_id, "CompactWaiterResolved"});
    } else if (const auto* rejected = std::get_if<CompactWaiterRejected>(&event)) {
      out.push_back({rejected->header.loop_id, rejected->header.cause.command_id,
                     "CompactWaiterRejected{" +
                         std::string(CompactRejectReasonName(rejected->reason)) + "}"});
    }
  }
  return out;
}

Json LoopJson(const LoopFold& loop, const std::vector<PlannedReply>& replies) {
  Json out = Json::object();
  out["loop"] = loop.loop.ToString();
  out["kind"] = std::string(LoopKindName(loop.kind));
  out["model"] = loop.model.provider + "/" + loop.model.model;
  out["compaction_policy"] = loop.compaction_policy;
  out["status"] = LoopStatusText(loop);
  out["history"] = loop.history.size();
  out["summary"] = loop.derived_prefix > 0;
  out["pinned"] = loop.pinned.size();
  out["basis_revision"] = loop.basis.revision;
  out["basis_through"] = loop.basis.through_event_id.ToString();
  if (loop.measurement) {
    out["measurement"] = {{"tokens", loop.measurement->input_tokens},
                          {"limit", loop.measurement->input_limit},
                          {"quality", std::string(CountQualityName(loop.measurement->quality))}};
  }
  if (loop.automatic_latch)
    out["automatic_latch_revision"] = loop.automatic_latch->revision;
  out["turn_index"] = loop.turn_index;
  Json pending = Json::array();
  for (const PendingInput& input : loop.pending)
    pending.push_back(input.command.ToString());
  out["pending_inputs"] = pending;
  Json commands = Json::array();
  for (const PlannedReply& reply : replies) {
    if (reply.loop == loop.loop)
      commands.push_back({{"command", reply.command.ToString()}, {"restore_reply", reply.reply}});
  }
  out["unanswered_commands"] = commands;
  return out;
}

// The journal of STORE (`store`), opened read-only; nullptr when it cannot be: `exit` says how.
std::unique_ptr<Journal> OpenStore(const SessionsCommandLine& line, JournalStore& store,
                                   int& exit) {
  auto parsed = ParseJournalStore(line.store);
  if (!parsed) {
    std::fprintf(stderr, "harness sessions: %s\n", parsed.error().c_str());
    exit = kExitUsage;
    return nullptr;
  }
  store = std::move(parsed).value();
  auto journal = OpenJournalStore(store, StoreAccess::kReadOnly);
  if (!journal) {
    std::fprintf(stderr, "harness sessions: %s\n", StoreProblem(store, journal.error()).c_str());
    exit = ExitForJournalError(journal.error());
    return nullptr;
  }
  return std::move(journal).value();
}

int Ls(const SessionsCommandLine& line) {
  int exit = kExitOk;
  JournalStore store;
  const std::unique_ptr<Journal> journal = OpenStore(line, store, exit);
  if (!journal)
    return exit;
  auto sessions = journal->ListSessions();
  if (!sessions) {
    std::fprintf(stderr, "harness sessions: %s\n",
                 TerminalText(sessions.error().Describe()).c_str());
    return kExitInvalid;
  }
  int status = kExitOk;
  for (const Uuid& id : *sessions) {
    auto folded = ReadSessionFold(*journal, id);
    if (!folded) {
      std::fprintf(stderr, "harness sessions: %s\n",
                   TerminalText(folded.error().Describe()).c_str());
      return kExitInvalid;
    }
    Json json = Json::object();
    json["session"] = id.ToString();
    json["records"] = folded->records;
    json["last"] = Rfc3339(folded->last);
    std::string text = fmt::format("{} records {}", id.ToString(), folded->records);
    if (!folded->fold) {
      status = kExitInvalid;
      json["refused"] = folded->fold.error().Message();
      text += " " + Refusal(folded->fold.error());
    } else {
      const SessionFold& fold = *folded->fold;
      std::size_t exited = 0;
      for (const LoopFold& loop : fold.loops)
        exited += loop.exited ? 1 : 0;
      const RepairPlan plan = PlanRepairs(fold, EventTime{}, Uuid(), 0);
      json["loops"] = fold.loops.size();
      json["exited"] = exited;
      json["restores"] = folded->fences;
      json["repair_replies"] = plan.replies;
      json["repair_turns"] = plan.turns_closed;
      text += fmt::format(" loops {} ({} exited) last {}", fold.loops.size(), exited,
                          Rfc3339(folded->last));
      if (!plan.empty())
        text +=
            fmt::format(" [needs restore: {} replies, {} turns]", plan.replies, plan.turns_closed);
    }
    std::printf("%s\n", line.json ? json.dump().c_str() : text.c_str());
  }
  return status;
}

int Show(const SessionsCommandLine& line) {
  auto id = ParseSessionId(line.session, "the session id");
  if (!id) {
    std::fprintf(stderr, "harness sessions: %s\n", id.error().c_str());
    return kExitUsage;
  }
  int exit = kExitOk;
  JournalStore store;
  const std::unique_ptr<Journal> journal = OpenStore(line, store, exit);
  if (!journal)
    return exit;
  auto folded = ReadSessionFold(*journal, *id);
  if (!folded) {
    std::fprintf(stderr, "harness sessions: %s\n", TerminalText(folded.error().Describe()).c_str());
    return kExitInvalid;
  }
  if (folded->records == 0) {
    std::fprintf(stderr, "harness sessions: no session %s in %s\n", line.session.c_str(),
                 StoreForDisplay(store).c_str());
    return kExitUsage;
  }
  if (!folded->fold) {
    if (line.json) {
      Json json = {{"session", line.session}, {"refused", folded->fold.error().Message()}};
      std::printf("%s\n", json.dump().c_str());
    } else {
      std::printf("%s\n", Refusal(folded->fold.error()).c_str());
    }
    return kExitInvalid;
  }
  const SessionFold& fold = *folded->fold;
  const RepairPlan plan = PlanRepairs(fold, EventTime{}, Uuid(), 0);
  const std::vector<PlannedReply> replies = PlannedReplies(plan);
  if (line.json) {
    Json json = Json::object();
    json["session"] = line.session;
    json["records"] = folded->records;
    json["active_loop"] = fold.active_loop ? fold.active_loop->ToString() : "";
    json["restores"] = folded->fences;
    json["repair_replies"] = plan.replies;
    json["repair_turns"] = plan.turns_closed;
    Json loops = Json::array();
    for (const LoopFold& loop : fold.loops)
      loops.push_back(LoopJson(loop, replies));
    json["loops"] = loops;
    std::printf("%s\n", json.dump().c_str());
    return kExitOk;
  }
  std::printf("session %s: %llu records, %llu restores, active loop %s\n", line.session.c_str(),
              static_cast<unsigned long long>(folded->records),
              static_cast<unsigned long long>(folded->fences),
              fold.active_loop ? fold.active_loop->ToString().c_str() : "none");
  for (const LoopFold& loop : fold.loops) {
    std::printf("loop %s: %s %s%s, %s\n", loop.loop.ToString().c_str(),
                std::string(LoopKindName(loop.kind)).c_str(),
                TerminalText(loop.model.provider + "/" + loop.model.model).c_str(),
                loop.compaction_policy ? ", compaction" : "", LoopStatusText(loop).c_str());
    std::printf("  history %s messages, basis %s, turn %llu\n", HistoryText(loop).c_str(),
                BasisText(loop.basis).c_str(), static_cast<unsigned long long>(loop.turn_index));
    if (loop.measurement) {
      std::printf("  measured %s, %s\n",
                  TokensText(loop.measurement->input_tokens, loop.measurement->input_limit).c_str(),
                  std::string(CountQualityName(loop.measurement->quality)).c_str());
    }
    if (loop.automatic_latch)
      std::printf("  automatic compaction latched at rev %llu\n",
                  static_cast<unsigned long long>(loop.automatic_latch->revision));
    for (const PendingInput& input : loop.pending) {
      std::printf("  pending input %s: %s\n", input.command.ToString().c_str(),
                  TerminalText(OneLine(Message{input.message}, kInputBytes)).c_str());
    }
    for (const PlannedReply& reply : replies) {
      if (reply.loop == loop.loop)
        std::printf("  unanswered command %s: restore replies %s\n",
                    reply.command.ToString().c_str(), reply.reply.c_str());
    }
  }
  if (!plan.empty())
    std::printf("needs restore: %zu replies, %zu turns to close\n", plan.replies,
                plan.turns_closed);
  return kExitOk;
}

}  // namespace

std::shared_ptr<SessionsCommandLine> AddSessionsCommands(CLI::App& app) {
  auto line = std::make_shared<SessionsCommandLine>();
  auto* sessions = app.add_subcommand(
      "sessions",
      "List and inspect the sessions of a journal as a restore would see them (read only).");
  sessions->require_subcommand(1);
  line->ls = sessions->add_subcommand(
      "ls",
      "One line per session: records, loops, last record time, and what a restore would\n"
      "repair. Exit 0; 1 when a session's journal contradicts itself; 2 bad usage.");
  line->ls->add_option("STORE", line->store, "data directory or postgres:// URL")->required();
  line->ls->add_flag("--json", line->json, "one JSON object per line");
  line->show = sessions->add_subcommand(
      "show",
      "One session: its loops (status, history, basis, measurement, pending input) and the\n"
      "commands a restore would answer. Exit 0; 1 the journal contradicts itself; 2 bad usage\n"
      "or an unknown session.");
  line->show->add_option("STORE", line->store, "data directory or postgres:// URL")->required();
  line->show->add_option("ID", line->session, "the session id")->required();
  line->show->add_flag("--json", line->json, "one JSON object");
  return line;
}

std::optional<int> RunSessionsCommand(const SessionsCommandLine& line) {
  if (line.ls->parsed())
    return Ls(line);
  if (line.show->parsed())
    return Show(line);
  return std::nullopt;
}

}  // namespace harness::cli
