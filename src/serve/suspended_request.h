// Requests a session's loop answers later, and the answer's shape on the wire.
//
// Contract:
// - Reply is one answer of the API: a status and a body (JSON unless content_type says
//   otherwise); ErrorReply is an ApiError's.
// - SuspendedRequest: a request whose answer comes from another thread (a loop's actor: a pin that
//   waits for a running compaction to end, a snapshot). Its connection sleeps
//   (MHD_suspend_connection) and holds none of the server's threads until Finish, which may come
//   from any thread, before or after the handler calls Sleep. The first Finish wins; later ones
//   change nothing. Finish takes a function that makes the reply, run by Take on the thread that
//   answers the request (never on the loop's actor, which only hands over what it found).
// - SuspendedRequests: the requests that may sleep, so that a shutdown wakes every one of them
//   (libmicrohttpd must not be stopped with a connection asleep). Once closed it refuses new
//   ones, and a handler answers kShuttingDown at once.
// - FinishWith(request, render): the SessionDone of an asynchronous Session call that finishes
//   `request` with render(value), or with the session's refusal (FromSessionError).
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "harness/runtime/session.h"
#include "serve/api.h"
#include "serve/sessions.h"

struct MHD_Connection;

namespace harness::serve {

struct Reply {
  unsigned status = 200;
  std::string body;  // JSON, unless content_type says otherwise
  std::string_view content_type = "application/json";
};

Reply ErrorReply(const ApiError& error);

class SuspendedRequest {
 public:
  explicit SuspendedRequest(MHD_Connection* connection) : connection_(connection) {}
  SuspendedRequest(const SuspendedRequest&) = delete;
  SuspendedRequest& operator=(const SuspendedRequest&) = delete;

  void Finish(std::function<Reply()> make);
  // The handler, once whatever calls Finish is started: true when the connection now sleeps
  // until Finish resumes it; false when Finish came first (Take the reply now).
  bool Sleep();
  // The reply Finish was given (made now); an internal error if it was not given one.
  Reply Take();
  bool finished();

 private:
  std::mutex mu_;
  MHD_Connection* const connection_;
  std::function<Reply()> make_;
  bool finished_ = false;
  bool asleep_ = false;
};

class SuspendedRequests {
 public:
  // Null once closed.
  std::shared_ptr<SuspendedRequest> Start(MHD_Connection* connection);
  // Closes the set and finishes every request in it with `make`.
  void FinishAll(const std::function<Reply()>& make);

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<SuspendedRequest>> requests_;
  std::size_t prune_at_ = 64;  // the size at which finished requests are dropped from the list
  bool closed_ = false;
};

template <class T, class Render>
SessionDone<T> FinishWith(std::shared_ptr<SuspendedRequest> request, Render render) {
  return [request = std::move(request), render = std::move(render)](Result<T, SessionError> got) {
    request->Finish([got = std::move(got), render]() -> Reply {
      if (!got.ok())
        return ErrorReply(FromSessionError(got.error()));
      return render(*got);
    });
  };
}

}  // namespace harness::serve
