// A client of `harness serve` for tests (header-only, libcurl): one request and its reply, and
// an event stream read until the test has what it waits for. Tests link CURL::libcurl and
// harness_http (the SSE decoder).
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/core/json.h"
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

inline HttpReply Call(const std::string& method, const std::string& url,
                      const std::string& body = "", const std::vector<std::string>& headers = {}) {
  HttpReply reply;
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  for (const std::string& h : headers)
    list = curl_slist_append(list, h.c_str());
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
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
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
  for (SseEvent& e : out) {
    StreamEvent event{e.event, 0, ParseOrNull(e.data)};
    if (event.data.is_object() && event.data.contains("seq"))
      event.seq = event.data["seq"].get<std::uint64_t>();
    read.events.push_back(std::move(event));
  }
  return read.done(read.events) ? 0 : size * n;  // 0 ends the transfer
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

struct RawRead {
  std::string bytes;
  std::function<bool(const std::string&)> done;
};

inline std::size_t FeedRaw(char* data, std::size_t size, std::size_t n, void* cls) {
  auto& read = *static_cast<RawRead*>(cls);
  read.bytes.append(data, size * n);
  return read.done(read.bytes) ? 0 : size * n;  // 0 ends the transfer
}

// The bytes of the response at `url` (comments and all) until `done` says so or it ends.
inline std::string ReadRaw(const std::string& url, std::function<bool(const std::string&)> done) {
  RawRead read{{}, std::move(done)};
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

}  // namespace harness::serve_testing
