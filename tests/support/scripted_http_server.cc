#include "support/scripted_http_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <functional>

namespace harness::test_support {

namespace {

std::string Lower(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Server threads: enough for the concurrency tests plus replies parked in a stall.
constexpr std::size_t kServerThreads = 16;

}  // namespace

ScriptedReply ScriptedReply::Text(int status, std::string body) {
  ScriptedReply reply;
  reply.status = status;
  reply.content_type = "text/plain";
  reply.body = std::move(body);
  return reply;
}

ScriptedReply ScriptedReply::Sse(std::vector<std::string> chunks) {
  ScriptedReply reply;
  reply.content_type = "text/event-stream";
  reply.chunks = std::move(chunks);
  return reply;
}

std::string RecordedRequest::Header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name)
      return value;
  }
  return {};
}

struct ScriptedHttpServer::Handling {
  static void Answer(ScriptedHttpServer& server, const httplib::Request& request,
                     httplib::Response& response) {
    ScriptedReply reply;
    ScriptedResponder responder;
    RecordedRequest recorded{request.method, request.target, {}, request.body, request.remote_port};
    for (const auto& [name, value] : request.headers)
      recorded.headers.emplace_back(Lower(name), value);
    std::size_t index = 0;
    {
      std::lock_guard lock(server.mutex_);
      index = server.requests_.size();
      server.requests_.push_back(recorded);
      server.outstanding_.push_back(true);
      responder = server.responder_;
      if (!responder) {
        if (server.script_.empty()) {
          reply = ScriptedReply::Text(599, "unscripted request");
        } else {
          reply = std::move(server.script_.front());
          server.script_.pop_front();
        }
      }
      server.changed_.notify_all();
    }
    if (responder)
      reply = responder(recorded);
    if (reply.delay.count() > 0)
      std::this_thread::sleep_for(reply.delay);
    if (reply.stall == ScriptedReply::Stall::kBeforeHeaders)
      server.StallHere();
    {
      std::lock_guard lock(server.mutex_);
      server.outstanding_[index] = false;
    }
    response.status = reply.status;
    for (const auto& [name, value] : reply.headers)
      response.set_header(name, value);
    if (!reply.chunks.empty() || reply.stall == ScriptedReply::Stall::kAfterChunks ||
        reply.keep_alive_every) {
      StreamChunks(server, std::move(reply), response);
    } else if (reply.cut_after_bytes) {
      SendCut(std::move(reply), response);
    } else {
      response.set_content(reply.body, reply.content_type);
    }
  }

  // The declared length is the whole body; closing early is what the client must notice.
  static void SendCut(ScriptedReply reply, httplib::Response& response) {
    auto body = std::make_shared<std::string>(std::move(reply.body));
    const std::size_t cut = *reply.cut_after_bytes;
    response.set_content_provider(
        body->size(), reply.content_type,
        [body, cut](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
          if (offset >= cut)
            return false;  // httplib closes the connection
          sink.write(body->data() + offset, std::min(length, cut - offset));
          return true;
        });
  }

  static void StreamChunks(ScriptedHttpServer& server, ScriptedReply reply,
                           httplib::Response& response) {
    struct Progress {
      std::vector<std::string> chunks;
      std::optional<std::size_t> cut;
      bool stall = false;
      std::optional<std::chrono::milliseconds> keep_alive_every;
      std::string keep_alive;
      std::size_t next = 0;
      std::size_t sent = 0;
    };
    auto progress = std::make_shared<Progress>();
    progress->chunks = std::move(reply.chunks);
    progress->cut = reply.cut_after_bytes;
    progress->stall = reply.stall == ScriptedReply::Stall::kAfterChunks;
    progress->keep_alive_every = reply.keep_alive_every;
    progress->keep_alive = std::move(reply.keep_alive);
    // httplib calls the provider again after each chunk; each call writes (and so flushes) one.
    response.set_chunked_content_provider(
        reply.content_type, [&server, progress](std::size_t /*offset*/, httplib::DataSink& sink) {
          Progress& p = *progress;
          if (p.next == p.chunks.size() && p.keep_alive_every) {
            if (server.ReleasedWithin(*p.keep_alive_every)) {
              sink.done();
              return true;
            }
            {
              std::lock_guard lock(server.mutex_);
              ++server.keep_alives_sent_;
            }
            // False once the client has gone: httplib then closes the connection.
            return sink.write(p.keep_alive.data(), p.keep_alive.size());
          }
          if (p.next == p.chunks.size()) {
            if (p.stall)
              server.StallHere();
            sink.done();
            return true;
          }
          const std::string& chunk = p.chunks[p.next++];
          if (p.cut && p.sent + chunk.size() >= *p.cut) {
            sink.write(chunk.data(), *p.cut - p.sent);
            return false;  // httplib closes the connection without the final chunk
          }
          p.sent += chunk.size();
          return sink.write(chunk.data(), chunk.size());
        });
  }
};

ScriptedHttpServer::ScriptedHttpServer() : server_(std::make_unique<httplib::Server>()) {}

ScriptedHttpServer::~ScriptedHttpServer() {
  Stop();
}

bool ScriptedHttpServer::Start() {
  // httplib owns and deletes the queue it gets from this factory.
  server_->new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // Idle keep-alive connections hold a server thread until this passes; short, so Stop() is quick.
  server_->set_keep_alive_timeout(1);
  // httplib writes headers and body separately: without NODELAY, Nagle and the client's delayed
  // ACK add ~40 ms to every reply.
  server_->set_tcp_nodelay(true);
  const httplib::Server::Handler handler = [this](const httplib::Request& request,
                                                  httplib::Response& response) {
    Handling::Answer(*this, request, response);
  };
  server_->Get(".*", handler);
  server_->Post(".*", handler);
  server_->Put(".*", handler);
  server_->Patch(".*", handler);
  server_->Delete(".*", handler);
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0)
    return false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so Stop() must not race ahead of it.
  while (!server_->is_running())
    std::this_thread::yield();
  return true;
}

void ScriptedHttpServer::Stop() {
  ReleaseStalls();
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

std::string ScriptedHttpServer::Url(const std::string& path) const {
  std::string url = "http://127.0.0.1:";
  url.append(std::to_string(port_));
  url.append(path);
  return url;
}

void ScriptedHttpServer::Push(ScriptedReply reply) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(reply));
}

void ScriptedHttpServer::SetResponder(ScriptedResponder responder) {
  std::lock_guard lock(mutex_);
  responder_ = std::move(responder);
}

std::vector<std::size_t> ScriptedHttpServer::OutstandingRequests() const {
  std::lock_guard lock(mutex_);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < outstanding_.size(); ++i) {
    if (outstanding_[i])
      out.push_back(i);
  }
  return out;
}

std::vector<RecordedRequest> ScriptedHttpServer::Requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t ScriptedHttpServer::RequestCount() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

void ScriptedHttpServer::WaitForStalls(std::size_t count) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return stalls_entered_ >= count; });
}

void ScriptedHttpServer::ReleaseStalls() {
  std::lock_guard lock(mutex_);
  released_ = true;
  changed_.notify_all();
}

std::size_t ScriptedHttpServer::KeepAlivesSent() const {
  std::lock_guard lock(mutex_);
  return keep_alives_sent_;
}

bool ScriptedHttpServer::ReleasedWithin(std::chrono::milliseconds duration) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, duration, [&] { return released_; });
}

void ScriptedHttpServer::StallHere() {
  std::unique_lock lock(mutex_);
  ++stalls_entered_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return released_; });
}

}  // namespace harness::test_support
