// GET /v1/commands/{command} and GET /v1/sessions/{session}/commands/{command} (docs/serve.md
// "Commands and their replies"): a command's reply from the server's book, or from the session's
// journal for a command this server does not hold. With ?wait_ms the connection sleeps until the
// reply, the deadline or the shutdown wakes it, holding no thread.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "harness/event/wire.h"
#include "serve/server_impl.h"

namespace harness::serve {

// A suspended GET /v1/commands/{id}: woken once, by the reply, the deadline or the shutdown.
struct CommandWait {
  std::mutex mu;
  MHD_Connection* connection = nullptr;
  bool suspended = false;
  bool woken = false;
  Uuid command;
  std::uint64_t watch = 0;
  std::uint64_t alarm = 0;

  void Wake() {
    std::lock_guard lock(mu);
    woken = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
};

namespace {

// {"command_id","session_id","status":"answered","reply":<event>}, or "pending" without a reply.
Reply CommandStatusReply(const Uuid& command, const Uuid& session, const std::string* reply) {
  std::string out;
  WireWriter w(out);
  w.Id("command_id", command).Id("session_id", session);
  if (reply == nullptr) {
    w.String("status", "pending").Close();
    return Reply{202, std::move(out)};
  }
  w.String("status", "answered").Key("reply");
  out += *reply;
  w.Close();
  return Reply{200, std::move(out)};
}

}  // namespace

Reply Server::Impl::CommandAnswer(const Route& route) {
  const bool by_session = route.kind == RouteKind::kGetSessionCommand;
  if (auto entry = book->Find(route.command)) {
    if (by_session && !(entry->session == route.session)) {
      return ErrorReply(
          {ApiErrorKind::kCommandNotFound, "the command is not one of this session's"});
    }
    return CommandStatusReply(route.command, entry->session,
                              entry->reply ? &*entry->reply : nullptr);
  }
  if (!by_session) {
    return ErrorReply({ApiErrorKind::kCommandNotFound,
                       "this server accepted no such command (or has forgotten it); "
                       "GET /v1/sessions/{session}/commands/{command} reads the journal"});
  }
  JournaledCommand journaled;
  if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
      !read.ok())
    return ErrorReply(read.error());
  return JournalAnswer(route, journaled);
}

Reply Server::Impl::JournalAnswer(const Route& route, const JournaledCommand& journaled) {
  switch (journaled.state) {
    case JournaledCommand::State::kUnknown:
      if (journaled.read_through == 0)
        return ErrorReply({ApiErrorKind::kSessionNotFound, "the journal holds no such session"});
      return ErrorReply({ApiErrorKind::kCommandNotFound,
                         "the session's journal holds no compact or input command with this id"});
    case JournaledCommand::State::kPending:
      return CommandStatusReply(route.command, route.session, nullptr);
    case JournaledCommand::State::kAnswered:
      break;
  }
  return CommandStatusReply(route.command, route.session, &journaled.reply);
}

Reply Server::Impl::Command(RouteCall& call) {
  const Route& route = call.route;
  Exchange& exchange = call.exchange;
  if (exchange.wait) {
    // Resumed (or woken before it slept): the wait is over whatever woke it.
    book->Unwatch(route.command, exchange.wait->watch);
    alarm.Cancel(exchange.wait->alarm);
    return CommandAnswer(route);
  }
  auto wait_for = DecodeWaitRequest(call.query);
  if (!wait_for.ok())
    return ErrorReply(wait_for.error());
  if (route.kind == RouteKind::kGetSessionCommand && !book->Find(route.command)) {
    // Accepted before a restart, by another server, or forgotten by the book: the session's
    // journal has its intent and, once there is one, its reply.
    JournaledCommand journaled;
    if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
        !read.ok())
      return ErrorReply(read.error());
    if (journaled.state != JournaledCommand::State::kPending || wait_for->count() == 0 ||
        stopping.load())
      return JournalAnswer(route, journaled);
    // The reply can only come from the session's loops, so the session is served here for the
    // wait, restored on demand as for any other request (a restore answers every command the
    // last holder left open). Another server holding it has the reply to give: this one
    // answers what the journal says now.
    auto served = sessions->Get(route.session);
    if (!served.ok()) {
      return served.error().kind == ApiErrorKind::kLeaseHeld ? JournalAnswer(route, journaled)
                                                             : ErrorReply(served.error());
    }
    // From here the recorder records the session's replies in the book; what was published
    // before is in the journal, read on from where the first read stopped.
    book->Accepted(route.command, route.session);
    if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
        !read.ok())
      return ErrorReply(read.error());
    if (journaled.state == JournaledCommand::State::kAnswered)
      book->Answered(route.command, route.session, journaled.reply);
  }
  Reply now = CommandAnswer(route);
  if (now.status != 202 || wait_for->count() == 0 || stopping.load())
    return now;
  auto wait = std::make_shared<CommandWait>();
  wait->connection = call.connection;
  wait->command = route.command;
  exchange.wait = wait;
  wait->watch = book->Watch(route.command, [wait] { wait->Wake(); });
  if (wait->watch == 0)
    return CommandAnswer(route);  // answered in between
  wait->alarm =
      alarm.Schedule(std::chrono::steady_clock::now() + *wait_for, [wait] { wait->Wake(); });
  std::lock_guard lock(wait->mu);
  if (wait->woken) {
    book->Unwatch(route.command, wait->watch);
    alarm.Cancel(wait->alarm);
    return CommandAnswer(route);
  }
  wait->suspended = true;
  MHD_suspend_connection(call.connection);
  call.suspended = true;
  return {};
}

}  // namespace harness::serve
