// GET /v1/sessions/{session}/events: a session's events as Server-Sent Events (docs/serve.md
// "Event streams"). Each stream is a subscription of the session's hub read by libmicrohttpd's
// content reader; with nothing to send its connection sleeps (MHD_suspend_connection) until the
// hub's waker, a text delta, a heartbeat or the shutdown resumes it, so an idle stream holds no
// thread.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "harness/event/wire.h"
#include "harness/runtime/session.h"
#include "serve/event_frames.h"
#include "serve/server_impl.h"

namespace harness::serve {

namespace {

// The same for an event stream. MHD allocates a callback response's block with the response,
// one per stream, and an idle stream is mostly that block: 64 KiB made an idle stream cost
// 69 KB of heap (docs/benchmarks.md "Serve"). A frame is typically a few hundred bytes; a
// larger one takes more calls.
constexpr std::size_t kEventBlock = 2u * 1024;
// The text_delta frames one event stream holds for its reader at most: what a reader that far
// behind does not get is dropped, so a stream nobody reads costs a loop's turn no memory
// beyond it and never makes the model call wait (docs/serve.md "Text deltas").
constexpr std::size_t kMaxQueuedDeltaBytes = 1u << 20;
// How often an event stream with nothing to send writes an SSE comment when
// ServeOptions::stream_keepalive is 0; in any case at least twice per connection timeout.
constexpr std::chrono::milliseconds kHeartbeatMax{15'000};
// How long a shutdown waits for the event streams to send their last frames.
constexpr std::chrono::seconds kStreamDrain{2};

}  // namespace

// One event stream. The reader runs on MHD's threads, one call at a time; Wake and Stop on
// any thread.
struct EventStream {
  Subscription subscription;
  Uuid session;
  std::string out;  // frames not yet handed to MHD
  std::size_t sent = 0;
  bool finished = false;

  std::mutex mu;
  MHD_Connection* connection = nullptr;  // null once MHD is done with the response
  bool suspended = false;
  bool pending = false;        // woken since the reader last found the queue empty
  bool stopped = false;        // the server is shutting down
  bool beat = false;           // a heartbeat is due: a comment is sent if there is nothing else
  bool idle_released = false;  // the session left memory idle: the end frame says so

  std::function<void()> on_free;  // MHD is done with the stream's response
  ServeMetrics* metrics = nullptr;

  // Text deltas (serve/text_deltas.h): only a stream that asked (?text_deltas=true) takes
  // them, whatever its kind filter; a loop filter keeps that loop's. Set before the stream is
  // listed, read-only after.
  bool takes_deltas = false;
  std::optional<Uuid> loop;
  // Guarded by mu: text_delta frames not yet taken by the reader, at most kMaxQueuedDeltaBytes;
  // what does not fit is dropped (the reader is that far behind; the committed message holds
  // the whole text).
  std::string deltas;

  explicit EventStream(Subscription sub) : subscription(std::move(sub)) {}

  void QueueDelta(const std::string& frame) {
    std::lock_guard lock(mu);
    if (connection == nullptr || stopped || deltas.size() + frame.size() > kMaxQueuedDeltaBytes)
      return;
    deltas += frame;
    pending = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
  // Moves the queued deltas to the frames to send.
  void TakeDeltas() {
    std::lock_guard lock(mu);
    out += deltas;
    deltas.clear();
  }

  void Wake() {
    std::lock_guard lock(mu);
    pending = true;
    if (suspended && connection != nullptr) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
  // Returns false once MHD is done with the stream: no more heartbeats.
  bool Beat() {
    std::lock_guard lock(mu);
    if (connection == nullptr)
      return false;
    beat = true;
    pending = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
    return true;
  }
  void Stop() {
    std::lock_guard lock(mu);
    stopped = true;
    pending = true;
    if (suspended && connection != nullptr) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
};

namespace {

// event: end, with why the stream ended, the last sequence number it delivered and, for a replay
// that failed, what the journal said (a replay from below a compacted journal's horizon names
// the archive that holds those records).
std::string EndFrame(std::string_view reason, std::uint64_t last_seq,
                     std::string_view detail = {}) {
  std::string out = "event: end\ndata: ";
  WireWriter writer(out);
  writer.String("reason", reason).Uint("last_seq", last_seq);
  if (!detail.empty())
    writer.String("detail", detail);
  writer.Close();
  return out + "\n\n";
}

ssize_t ReadStream(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  EventStream& s = **static_cast<std::shared_ptr<EventStream>*>(cls);
  for (;;) {
    // Every frame already queued, up to what MHD takes in this call, goes out in one write: a
    // frame a write costs a send(2) per event per subscriber, which bounded the fan-out.
    bool empty = false;
    while (!s.finished && !empty && s.out.size() - s.sent < max) {
      auto next = s.subscription.TryNext();
      // The deltas queued by now come before the event just taken: a message's deltas were
      // queued before its MessageCommitted was published, so they precede it on the stream.
      s.TakeDeltas();
      if (next.ok()) {
        s.out += DeliveryFrame(*next);
        continue;
      }
      if (next.error().kind == NextError::Kind::kClosed) {
        const CloseReason reason =
            next.error().close.value_or(CloseReason{CloseKind::kHubClosed, 0, {}});
        bool idle_released = false;
        {
          std::lock_guard lock(s.mu);
          idle_released = s.idle_released;
        }
        if (reason.kind == CloseKind::kLagged)
          s.out += LaggedFrame(reason.last_delivered_seq);
        else if (reason.kind == CloseKind::kHubClosed && idle_released)
          s.out += EndFrame("idle_released", reason.last_delivered_seq);
        else
          s.out += EndFrame(CloseKindName(reason.kind), reason.last_delivered_seq, reason.detail);
        if (reason.kind == CloseKind::kLagged && s.metrics != nullptr)
          s.metrics->StreamLagged();
        s.finished = true;
      } else {
        empty = true;
      }
    }
    if (s.sent < s.out.size()) {
      const std::size_t n = std::min(max, s.out.size() - s.sent);
      std::memcpy(buf, s.out.data() + s.sent, n);
      s.sent += n;
      if (s.sent == s.out.size()) {
        s.out.clear();
        s.sent = 0;
      }
      return static_cast<ssize_t>(n);
    }
    if (s.finished)
      return MHD_CONTENT_READER_END_OF_STREAM;
    if (!empty)
      continue;
    std::lock_guard lock(s.mu);
    if (s.pending) {
      s.pending = false;
      continue;
    }
    if (s.stopped) {
      s.finished = true;
      continue;
    }
    if (s.beat) {
      // An SSE comment, which clients ignore: it keeps proxies and NATs from closing a quiet
      // stream, and writing it is how the server finds a client gone.
      s.beat = false;
      s.out += ":\n\n";
      continue;
    }
    // Nothing to send: the connection sleeps until the hub's waker (or the shutdown) resumes it.
    s.suspended = true;
    MHD_suspend_connection(s.connection);
    return 0;
  }
}

void FreeStream(void* cls) {
  auto* holder = static_cast<std::shared_ptr<EventStream>*>(cls);
  // The waker first, outside the stream's lock: the hub calls it under its own lock.
  (*holder)->subscription.SetWaker(nullptr);
  {
    std::lock_guard lock((*holder)->mu);
    (*holder)->connection = nullptr;
  }
  if ((*holder)->on_free)
    (*holder)->on_free();
  delete holder;
}

}  // namespace

Reply Server::Impl::Events(RouteCall& call) {
  auto response = OpenEventStream(call.connection, call.route, call.query);
  if (!response.ok())
    return ErrorReply(response.error());
  call.streamed = *response;
  return {};
}

Result<MHD_Response*, ApiError> Server::Impl::OpenEventStream(MHD_Connection* connection,
                                                              const Route& route,
                                                              const QueryParameters& query) {
  const char* last_id = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Last-Event-ID");
  // Not HARNESS_TRY: g++ 12 -O2 sees the optional kinds of a request moved out of a Result as
  // maybe uninitialized (a false -Wmaybe-uninitialized that -Werror turns into a failed build).
  auto decoded = DecodeEventsRequest(
      query, last_id != nullptr ? std::optional<std::string_view>(last_id) : std::nullopt);
  if (!decoded.ok())
    return Fail(decoded.error());
  const EventsRequest& request = *decoded;
  HARNESS_TRY(std::shared_ptr<ServedSession> served, sessions->Get(route.session));
  EventFilter filter;
  if (request.loop)
    filter.loops = std::vector<Uuid>{*request.loop};
  if (request.kinds)
    filter.kinds = *request.kinds;
  std::optional<Subscription> sub;
  if (request.from) {
    auto from = served->session->hub().SubscribeFrom(filter, *request.from);
    if (!from.ok())
      return Fail(ApiError{ApiErrorKind::kJournal, from.error().Describe()});
    sub.emplace(std::move(from).value());
  } else {
    sub.emplace(served->session->Subscribe(filter));
  }
  auto stream = std::make_shared<EventStream>(std::move(*sub));
  stream->session = route.session;
  stream->takes_deltas = request.text_deltas;
  stream->loop = request.loop;
  stream->connection = connection;
  stream->metrics = &metrics;
  {
    std::lock_guard lock(streams_mu);
    if (streams_closed)
      return Fail(ShuttingDown());
    std::erase_if(streams, [](const std::weak_ptr<EventStream>& s) { return s.expired(); });
    streams.push_back(stream);
    ++open_streams;
  }
  metrics.StreamOpened();
  stream->on_free = [this] {
    std::lock_guard lock(streams_mu);
    --open_streams;
    streams_done.notify_all();
  };
  std::weak_ptr<EventStream> weak = stream;
  stream->subscription.SetWaker([weak] {
    if (auto s = weak.lock())
      s->Wake();
  });
  auto* holder = new std::shared_ptr<EventStream>(stream);
  MHD_Response* response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kEventBlock,
                                                             ReadStream, holder, FreeStream);
  if (response == nullptr) {
    FreeStream(holder);
    return Fail(ApiError{ApiErrorKind::kInternal, "cannot make the response"});
  }
  ScheduleHeartbeat(weak);
  MHD_add_response_header(response, "Content-Type", "text/event-stream");
  MHD_add_response_header(response, "Cache-Control", "no-cache");
  return response;
}

void Server::Impl::DeliverTextDelta(const Uuid& session, const Uuid& loop, const Uuid& turn,
                                    std::string_view text) {
  std::string frame;
  std::lock_guard lock(streams_mu);
  for (auto& weak : streams) {
    auto s = weak.lock();
    if (!s || s->session != session || !s->takes_deltas || (s->loop && *s->loop != loop))
      continue;
    if (frame.empty())
      frame = TextDeltaFrame(loop, turn, text);
    s->QueueDelta(frame);
  }
}

void Server::Impl::MarkIdleReleased(const Uuid& session) {
  std::lock_guard lock(streams_mu);
  for (auto& weak : streams) {
    if (auto s = weak.lock(); s && s->session == session) {
      std::lock_guard stream_lock(s->mu);
      s->idle_released = true;
    }
  }
}

// A suspended connection is not polled: without a write now and then, a stream whose client
// went away while its session was idle would hold its connection forever. Each beat resumes
// the stream, which writes a comment if it has nothing else; MHD then sees the closed socket
// and closes the connection.
void Server::Impl::ScheduleHeartbeat(std::weak_ptr<EventStream> weak) {
  // No connection timeout (0): MHD never closes an idle connection, and the beat is the longest.
  const auto half =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.connection_timeout) / 2;
  auto every = options.stream_keepalive.count() > 0 ? options.stream_keepalive : kHeartbeatMax;
  if (half.count() > 0)
    every = std::min(every, half);
  alarm.Schedule(std::chrono::steady_clock::now() + every, [this, weak] {
    auto s = weak.lock();
    if (s && s->Beat())
      ScheduleHeartbeat(weak);
  });
}

void Server::Impl::StopStreams() {
  std::vector<std::shared_ptr<EventStream>> live;
  {
    std::lock_guard lock(streams_mu);
    streams_closed = true;
    for (auto& weak : streams) {
      if (auto s = weak.lock())
        live.push_back(std::move(s));
    }
    streams.clear();
  }
  for (auto& s : live)
    s->Stop();
  // Each stream sends what it still holds and its end frame; the listener stops once they are
  // sent, or after kStreamDrain for a client that does not read.
  std::unique_lock lock(streams_mu);
  streams_done.wait_for(lock, kStreamDrain, [this] { return open_streams == 0; });
}

}  // namespace harness::serve
