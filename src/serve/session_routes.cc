// The routes of sessions and of the commands a loop is sent (docs/serve.md): POST /v1/sessions,
// GET /v1/sessions, DELETE and export of a session, POST …/input, …/compact and …/interrupt, and
// the requests a loop answers (loop_routes.h), whose connections sleep until it has.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "harness/event/wire.h"
#include "harness/hub/record_json.h"
#include "harness/runtime/session.h"
#include "serve/loop_routes.h"
#include "serve/server_impl.h"

namespace harness::serve {

namespace {

// Records an export reads from the journal at a time.
constexpr std::size_t kExportPage = 256;
// Bytes an export's reader hands MHD at most per call.
constexpr std::size_t kStreamBlock = 64u * 1024;

// An export: the session's journal records, one JSON line each, read a page at a time.
struct ExportReader {
  Journal* journal;
  Uuid session;
  std::uint64_t next = 1;
  std::string out;
  std::size_t sent = 0;
  bool done = false;
};

ssize_t ReadExport(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  ExportReader& r = *static_cast<ExportReader*>(cls);
  while (r.sent == r.out.size()) {
    if (r.done)
      return MHD_CONTENT_READER_END_OF_STREAM;
    r.out.clear();
    r.sent = 0;
    auto page = r.journal->Read(r.session, r.next, kExportPage);
    if (!page.ok())
      return MHD_CONTENT_READER_END_WITH_ERROR;  // the client sees a cut stream, never a gap
    for (const JournalRecord& record : *page) {
      r.out += JournalRecordJsonLine(record);
      r.out += '\n';
      r.next = record.seq + 1;
    }
    r.done = page->size() < kExportPage;
  }
  const std::size_t n = std::min(max, r.out.size() - r.sent);
  std::memcpy(buf, r.out.data() + r.sent, n);
  r.sent += n;
  return static_cast<ssize_t>(n);
}

void FreeExport(void* cls) {
  delete static_cast<ExportReader*>(cls);
}

// {"command_id":"<uuid>"}: a command accepted.
Reply CommandAccepted(unsigned status, const Uuid& command) {
  std::string out;
  WireWriter(out).Id("command_id", command).Close();
  return Reply{status, std::move(out)};
}

}  // namespace

Reply Server::Impl::CreateSession(RouteCall& call) {
  auto request = DecodeCreateSession(call.exchange.body);
  if (!request.ok())
    return ErrorReply(request.error());
  auto created = sessions->Create(*request);
  if (!created.ok())
    return ErrorReply(created.error());
  std::string out;
  WireWriter(out)
      .Id("session_id", (*created)->session->id())
      .Ids("loops", (*created)->loops)
      .Close();
  return Reply{201, std::move(out)};
}

Reply Server::Impl::ListSessions(RouteCall& /*call*/) {
  auto list = sessions->ListJson();
  return list.ok() ? Reply{200, *list} : ErrorReply(list.error());
}

Reply Server::Impl::DeleteSession(RouteCall& call) {
  auto served = sessions->Get(call.route.session);
  if (!served.ok())
    return ErrorReply(served.error());
  // The connection sleeps while the loops exit. The reply, made on the server's thread that
  // answers it, forgets the session there: the session must not end on a loop's actor (its
  // destructor waits for that loop), so the wake-up hands its reference on to the reply.
  return Later(call, [&](const std::shared_ptr<SuspendedRequest>& later) {
    sessions->End(*served, [later, table = sessions.get(), held = *served]() mutable {
      later->Finish([table, held = std::move(held)] {
        table->Forget(held);
        return Reply{204, ""};
      });
    });
  });
}

Reply Server::Impl::Export(RouteCall& call) {
  const Uuid& session = call.route.session;
  auto last = options.journal->LastSequence(session);
  if (!last.ok())
    return ErrorReply({ApiErrorKind::kJournal, last.error().Describe()});
  if (*last == 0)
    return ErrorReply({ApiErrorKind::kSessionNotFound, "the journal holds no such session"});
  auto* reader = new ExportReader{options.journal, session, 1, {}, 0, false};
  call.streamed = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlock, ReadExport,
                                                    reader, FreeExport);
  if (call.streamed == nullptr) {
    delete reader;
    return ErrorReply({ApiErrorKind::kInternal, "cannot make the response"});
  }
  MHD_add_response_header(call.streamed, "Content-Type", "application/x-ndjson");
  return {};
}

Reply Server::Impl::LoopCommand(RouteCall& call) {
  const Route& route = call.route;
  const std::string& body = call.exchange.body;
  std::optional<InputRequest> input;
  std::optional<CompactRequest> compact;
  if (route.kind == RouteKind::kInput) {
    auto decoded = DecodeInput(body);
    if (!decoded.ok())
      return ErrorReply(decoded.error());
    input = std::move(*decoded);
  } else if (route.kind == RouteKind::kCompact) {
    auto decoded = DecodeCompact(body);
    if (!decoded.ok())
      return ErrorReply(decoded.error());
    compact = std::move(*decoded);
  } else if (auto empty = DecodeEmptyObject(body); !empty.ok()) {
    return ErrorReply(empty.error());
  }
  auto served = sessions->Get(route.session);
  if (!served.ok())
    return ErrorReply(served.error());
  if (route.kind == RouteKind::kInput) {
    const auto context = (*served)->contexts.find(route.loop);
    if (context != (*served)->contexts.end() && !context->second.turns) {
      return ErrorReply(ApiError{
          ApiErrorKind::kInvalidArgument,
          "loop " + route.loop.ToString() + " has no conversation model (" +
              context->second.model.provider + "/" + context->second.model.model +
              " only compacts), so it runs no turns; create a loop with a model the server "
              "was started with (--model NAME=SPEC) to send it input"});
    }
  }
  Session& session = *(*served)->session;
  Result<Uuid, SessionError> id =
      route.kind == RouteKind::kInput
          ? session.SubmitInputToLoop(route.loop, UserMessage{{TextBlock{input->text}}},
                                      Agency::kUser, input->origin)
      : route.kind == RouteKind::kCompact
          ? (compact->preview ? session.PreviewCompaction(route.loop, compact->instructions)
                              : session.CompactToLoop(route.loop, compact->instructions))
          : session.Interrupt(route.loop);
  if (!id.ok())
    return ErrorReply(FromSessionError(id.error()));
  metrics.CommandAccepted(route.kind == RouteKind::kInput     ? ServeMetrics::Command::kInput
                          : route.kind == RouteKind::kCompact ? ServeMetrics::Command::kCompact
                                                              : ServeMetrics::Command::kInterrupt);
  if (route.kind == RouteKind::kInterrupt)
    return CommandAccepted(200, *id);
  book->Accepted(*id, session.id());
  return CommandAccepted(202, *id);
}

Reply Server::Impl::LoopRequest(RouteCall& call) {
  auto body = DecodeLoopRequest(call.route, call.exchange.body);
  if (!body.ok())
    return ErrorReply(body.error());
  auto served = sessions->Get(call.route.session);
  if (!served.ok())
    return ErrorReply(served.error());
  return Later(call, [&](const std::shared_ptr<SuspendedRequest>& later) {
    StartLoopRequest(call.route, std::move(body).value(), std::move(served).value(), later);
  });
}

Reply Server::Impl::Later(
    RouteCall& call, const std::function<void(const std::shared_ptr<SuspendedRequest>&)>& start) {
  auto later = later_requests.Start(call.connection);
  if (!later)
    return ErrorReply(ShuttingDown());
  call.exchange.later = later;
  start(later);
  if (!later->Sleep())
    return later->Take();  // answered at once: a refusal, or a loop quicker than this thread
  call.suspended = true;
  return {};
}

}  // namespace harness::serve
