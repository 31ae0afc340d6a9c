// A client of `harness serve` for tests (header-only, libcurl): one request and its reply, and
// an event stream read until the test has what it waits for. Tests link CURL::libcurl and
// harness_http (the SSE decoder).
#pragma once

#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/http/sse.h"

namespace harness::serve_testing {

struct HttpReply {
  long status = 0;  // 0: the request failed (no connection)
  std::string body;
  std::string headers;  // the response's header lines, as received
};

inline std::size_t CollectBody(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

inline Json ParseOrNull(const std::string& text) {
  auto parsed = ParseStrictJson(text);
  return parsed.ok() ? *parsed : Json();
}

// The error kind of a refusal's body ({"error":{"kind":…}}); "" for any other body.
inline std::string ErrorKindOf(const HttpReply& reply) {
  const Json json = ParseOrNull(reply.body);
  return json.is_object() && json.contains("error") ? json["error"]["kind"].get<std::string>() : "";
}

// `timeout`: how long the whole exchange may take before it fails (status 0).
inline HttpReply Call(const std::string& method, const std::string& url,
                      const std::string& body = "", const std::vector<std::string>& headers = {},
                      std::chrono::seconds timeout = std::chrono::seconds(60)) {
  HttpReply reply;
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  bool typed = false;  // the caller chose the body's type (a test of a refused one)
  for (const std::string& h : headers) {
    list = curl_slist_append(list, h.c_str());
    typed = typed || h.rfind("Content-Type:", 0) == 0;
  }
  if (!typed)
    list = curl_slist_append(list, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, CollectBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, CollectBody);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
  if (curl_easy_perform(curl) == CURLE_OK)
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return reply;
}

struct StreamEvent {
  std::string name;  // the SSE event name: the event type, or lagged / end
  std::uint64_t seq = 0;
  Json data;
};

using StreamDone = std::function<bool(const std::vector<StreamEvent>&)>;

struct StreamRead {
  SseDecoder decoder;
  std::vector<StreamEvent> events;
  StreamDone done;
};

inline std::size_t FeedStream(char* data, std::size_t size, std::size_t n, void* cls) {
  auto& read = *static_cast<StreamRead*>(cls);
  std::vector<SseEvent> out;
  if (!read.decoder.Feed(std::string_view(data, size * n), out).ok())
    return 0;
  // `done` is asked after each event, so a read stops at the event it waits for even when the
  // server sent several in one write.
  for (SseEvent& e : out) {
    StreamEvent event{e.event, 0, ParseOrNull(e.data)};
    if (event.data.is_object() && event.data.contains("seq"))
      event.seq = event.data["seq"].get<std::uint64_t>();
    read.events.push_back(std::move(event));
    if (read.done(read.events))
      return 0;  // ends the transfer
  }
  return size * n;
}

// Reads the event stream at `url` until `done` says so or the server ends it.
inline std::vector<StreamEvent> ReadStream(const std::string& url, StreamDone done,
                                           const std::vector<std::string>& headers = {}) {
  StreamRead read;
  read.done = std::move(done);
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  for (const std::string& h : headers)
    list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, FeedStream);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &read);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  curl_easy_perform(curl);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return std::move(read.events);
}

struct UrlRead {
  std::string bytes;
  std::function<bool(const std::string&)> done;
};

inline std::size_t FeedRaw(char* data, std::size_t size, std::size_t n, void* cls) {
  auto& read = *static_cast<UrlRead*>(cls);
  read.bytes.append(data, size * n);
  return read.done(read.bytes) ? 0 : size * n;  // 0 ends the transfer
}

// The bytes of the response at `url` (comments and all) until `done` says so or it ends.
inline std::string ReadUrl(const std::string& url, std::function<bool(const std::string&)> done) {
  UrlRead read{{}, std::move(done)};
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, FeedRaw);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &read);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  return std::move(read.bytes);
}

inline bool HasEvent(const std::vector<StreamEvent>& events, const std::string& name) {
  for (const StreamEvent& e : events) {
    if (e.name == name)
      return true;
  }
  return false;
}

// A raw TCP connection to 127.0.0.1:port, for what libcurl will not send (half requests,
// garbage) or will not hold (streams that are never read). -1 when it cannot connect.
inline int ConnectLoopback(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// What a raw connection received: its bytes, and whether the server closed it (EOF or reset).
struct RawRead {
  std::string bytes;
  bool closed = false;
};

// Reads `fd` until `done(bytes)` holds, the server closes it, or `limit` passes (poll: it waits
// on the socket, never sleeps).
inline RawRead ReadRaw(int fd, const std::function<bool(const std::string&)>& done,
                       std::chrono::milliseconds limit) {
  RawRead read;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done(read.bytes)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0)
      continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      read.closed = true;
      break;
    }
    read.bytes.append(buf, static_cast<std::size_t>(n));
  }
  return read;
}

// The answer to `request`, sent as it is on a raw connection (what libcurl will not send: a NUL
// in a header or the path, no Host): its status (0 when none came) and its body. The request
// should ask for Connection: close; the answer is read until the server closes.
inline HttpReply RawExchange(std::uint16_t port, std::string_view request) {
  HttpReply reply;
  const int fd = ConnectLoopback(port);
  if (fd < 0)
    return reply;
  RawRead read;
  if (SendAll(fd, request))
    read = ReadRaw(
        fd, [](const std::string&) { return false; }, std::chrono::seconds(30));
  close(fd);
  const std::size_t end = read.bytes.find("\r\n\r\n");
  if (read.bytes.rfind("HTTP/1.", 0) != 0 || read.bytes.size() < 12 || end == std::string::npos)
    return reply;
  reply.status = std::strtol(read.bytes.c_str() + 9, nullptr, 10);
  reply.headers = read.bytes.substr(0, end + 2);
  reply.body = read.bytes.substr(end + 4);
  return reply;
}

// Opens an event stream at `path` on a raw connection and returns once its head is in (the
// server holds its subscription then), or -1.
inline int OpenRawStream(std::uint16_t port, const std::string& path,
                         const std::string& extra_headers = "") {
  const int fd = ConnectLoopback(port);
  if (fd < 0)
    return -1;
  const RawRead head =
      SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n")
          ? ReadRaw(
                fd, [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; },
                std::chrono::seconds(30))
          : RawRead{};
  if (head.bytes.rfind("HTTP/1.1 200", 0) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace harness::serve_testing
