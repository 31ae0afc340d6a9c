// `harness serve` end to end: the real binary on 127.0.0.1 (port 0), a SQLite data directory and
// a scripted model, driven over HTTP with libcurl: sessions, commands and their waits, the event
// stream and its resumption, typed errors, the token rule, and a graceful stop whose sessions a
// restarted server restores.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chat_support.h"
#include "harness/core/json.h"
#include "piped_process.h"
#include "support/serve_client.h"

namespace harness::serve_e2e {
namespace {

using chat_e2e::Answer;
using chat_e2e::ChatDir;
using serve_testing::Call;
using serve_testing::HttpReply;
using serve_testing::RawRead;
using serve_testing::ReadStream;
using serve_testing::StreamEvent;

bool Has(const std::vector<StreamEvent>& events, const std::string& name) {
  return serve_testing::HasEvent(events, name);
}

Json Parse(const std::string& text) {
  auto parsed = ParseStrictJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : Json();
}

std::string ErrorKind(const HttpReply& reply) {
  const Json json = Parse(reply.body);
  return json.contains("error") ? json["error"]["kind"].get<std::string>() : "";
}

class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  // Starts `harness serve` on 127.0.0.1:0 over the test's data directory with model "m".
  void StartServer(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"serve",     "--listen", "127.0.0.1:0",          "--data-dir",
                                     dir_.data(), "--model",  "m=scripted:" + script_};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<e2e::Process>(args);
    ASSERT_TRUE(server_->WaitForLine("listening on http://127.0.0.1:")) << server_->seen();
    const std::string& seen = server_->seen();
    const std::size_t at = seen.rfind("http://127.0.0.1:");
    base_ = seen.substr(at, seen.find('\n', at) - at);
  }

  int StopServer() {
    server_->Signal(SIGTERM);
    const int code = server_->Wait();
    return code;
  }

  // POST /v1/sessions with one loop of model m; returns {session, loop}.
  // The policy keeps only the newest segment, so that a few short turns leave something to
  // compact.
  std::pair<std::string, std::string> CreateSession() {
    const HttpReply created = Call(
        "POST", base_ + "/v1/sessions",
        R"({"loops":[{"model":"m","policy":{"keep_recent_segments":1,"keep_recent_tokens":1}}]})");
    EXPECT_EQ(created.status, 201) << created.body;
    const Json json = Parse(created.body);
    return {json["session_id"].get<std::string>(), json["loops"][0].get<std::string>()};
  }

  Json WaitCommand(const std::string& id) {
    const HttpReply reply = Call("GET", base_ + "/v1/commands/" + id + "?wait_ms=20000");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return Parse(reply.body);
  }

  ChatDir dir_;
  std::string script_ = dir_.Script({Answer("Hello."), Answer("Done."), Answer("Fine.")});
  std::unique_ptr<e2e::Process> server_;
  std::string base_;
};

TEST_F(ServeCli, ACompactionIsAcceptedWaitedForAndStreamedThenResumedWithoutGapOrDuplicate) {
  StartServer();
  const auto [session, loop] = CreateSession();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  for (const char* text : {"Say hello.", "Now edit src/app.cc.", "Run the tests."}) {
    const HttpReply input =
        Call("POST", loop_url + "/input", std::string(R"({"text":")") + text + "\"}");
    ASSERT_EQ(input.status, 202) << input.body;
    const Json answered = WaitCommand(Parse(input.body)["command_id"].get<std::string>());
    EXPECT_EQ(answered["status"], "answered");
    EXPECT_EQ(answered["reply"]["type"], "InputAccepted");
  }
  const HttpReply compact = Call("POST", loop_url + "/compact");
  ASSERT_EQ(compact.status, 202) << compact.body;
  const std::string command = Parse(compact.body)["command_id"].get<std::string>();
  const Json reply = WaitCommand(command);
  EXPECT_EQ(reply["session_id"], session);
  EXPECT_EQ(reply["reply"]["type"], "CompactWaiterResolved") << reply.dump();

  // The stream from the journal's start holds the compaction, in sequence order.
  const std::string events_url = base_ + "/v1/sessions/" + session + "/events";
  const auto all = ReadStream(events_url + "?from=1", [](const auto& events) {
    return Has(events, "CompactionCommitted");
  });
  ASSERT_TRUE(Has(all, "CompactionCommitted"));
  std::vector<std::uint64_t> seqs;
  for (const StreamEvent& e : all) {
    ASSERT_GT(e.seq, 0u) << e.name << ": replayed events are durable";
    ASSERT_TRUE(seqs.empty() || e.seq > seqs.back());
    EXPECT_EQ(e.data["event"]["type"], e.name);
    seqs.push_back(e.seq);
  }
  // Every event the journal holds, and nothing else (the command intents are not events).
  const HttpReply exported = Call("GET", base_ + "/v1/sessions/" + session + "/export");
  ASSERT_EQ(exported.status, 200);
  std::vector<std::uint64_t> journal_events;
  std::size_t at = 0;
  while (at < exported.body.size()) {
    const std::size_t nl = exported.body.find('\n', at);
    const Json record = Parse(exported.body.substr(at, nl - at));
    if (record["kind"] == "event" && journal_events.size() < seqs.size())
      journal_events.push_back(record["seq"].get<std::uint64_t>());
    at = nl + 1;
  }
  EXPECT_EQ(seqs, journal_events);

  // Reconnecting after the third event gets the fourth next: no gap, no duplicate.
  ASSERT_GE(seqs.size(), 5u);
  const auto resumed = ReadStream(
      events_url + "?from=1",
      [&](const auto& events) { return !events.empty() && events.back().seq >= seqs.back(); },
      {"Last-Event-ID: " + std::to_string(seqs[2])});
  // A write carries every frame queued, so either read may hold events past the other's last.
  std::vector<std::uint64_t> again;
  for (const StreamEvent& e : resumed) {
    if (e.seq <= seqs.back())
      again.push_back(e.seq);
  }
  EXPECT_EQ(again, std::vector<std::uint64_t>(seqs.begin() + 3, seqs.end()));

  // Filters: only the compaction's terminal events of this loop.
  const auto filtered = ReadStream(
      events_url + "?from=1&loop=" + loop + "&kind=CompactionCommitted,CompactionRejected",
      [](const auto& events) { return !events.empty(); });
  ASSERT_EQ(filtered.size(), 1u);
  EXPECT_EQ(filtered[0].name, "CompactionCommitted");

  const HttpReply context = Call("GET", loop_url + "/context");
  ASSERT_EQ(context.status, 200) << context.body;
  EXPECT_EQ(Parse(context.body)["derived_prefix"], 1);
  const HttpReply history = Call("GET", loop_url + "/history");
  ASSERT_EQ(history.status, 200);
  EXPECT_EQ(Parse(history.body)["messages"][0]["role"], "user");
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

TEST_F(ServeCli, RefusalsAreTypedWithTheirStatus) {
  StartServer({"--max-body-bytes", "1024"});
  const std::string unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
  const HttpReply bad_json = Call("POST", base_ + "/v1/sessions", "{\"loops\":");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(ErrorKind(bad_json), "invalid_json");
  const HttpReply unknown_member =
      Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"m","script":"/etc/passwd"}]})");
  EXPECT_EQ(unknown_member.status, 400);
  EXPECT_EQ(ErrorKind(unknown_member), "invalid_request");
  const HttpReply unknown_model =
      Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"scripted:/etc/passwd"}]})");
  EXPECT_EQ(unknown_model.status, 400);
  EXPECT_EQ(ErrorKind(unknown_model), "unknown_model");
  const HttpReply no_session = Call("GET", base_ + "/v1/sessions/" + unknown);
  EXPECT_EQ(no_session.status, 404);
  EXPECT_EQ(ErrorKind(no_session), "session_not_found");
  const HttpReply no_command = Call("GET", base_ + "/v1/commands/" + unknown);
  EXPECT_EQ(no_command.status, 404);
  EXPECT_EQ(ErrorKind(no_command), "command_not_found");
  const HttpReply too_large =
      Call("POST", base_ + "/v1/sessions", "{\"loops\":[" + std::string(2000, ' ') + "]}");
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(ErrorKind(too_large), "too_large");
  const HttpReply method = Call("PUT", base_ + "/v1/sessions");
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(ErrorKind(method), "method_not_allowed");
  const auto [session, loop] = CreateSession();
  const HttpReply no_loop =
      Call("POST", base_ + "/v1/sessions/" + session + "/loops/" + unknown + "/compact");
  EXPECT_EQ(no_loop.status, 404);
  EXPECT_EQ(ErrorKind(no_loop), "loop_not_found");
  const HttpReply bad_from = Call("GET", base_ + "/v1/sessions/" + session + "/events?from=0");
  EXPECT_EQ(bad_from.status, 400);
  EXPECT_EQ(ErrorKind(bad_from), "invalid_query");
  EXPECT_EQ(StopServer(), 0);
}

TEST_F(ServeCli, OffLoopbackItRefusesToStartWithoutATokenAndWithOneRequiresIt) {
  e2e::Process refused({"serve", "--listen", "0.0.0.0:0", "--data-dir", dir_.data(), "--model",
                        "m=scripted:" + script_});
  const std::string out = refused.Rest();
  EXPECT_EQ(refused.Wait(), 2);
  EXPECT_NE(out.find("not a loopback address"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening"), std::string::npos);

  const std::string token_file = dir_.Write("token", "s3cret-token\n");
  StartServer({"--token-file", token_file});
  EXPECT_EQ(Call("GET", base_ + "/v1/sessions").status, 401);
  EXPECT_EQ(Call("GET", base_ + "/v1/sessions", "", {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(Call("GET", base_ + "/v1/sessions", "", {"Authorization: Bearer s3cret-token"}).status,
            200);
  EXPECT_EQ(StopServer(), 0);
  EXPECT_EQ(server_->seen().find("s3cret"), std::string::npos);
}

TEST_F(ServeCli, SigtermSuspendsAndARestartedServerRestoresTheSessionOnDemand) {
  StartServer();
  const auto [session, loop] = CreateSession();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  const HttpReply input = Call("POST", loop_url + "/input", R"({"text":"Say hello."})");
  ASSERT_EQ(input.status, 202);
  WaitCommand(Parse(input.body)["command_id"].get<std::string>());
  // The turn's end, seen on the stream, before the server stops.
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return !events.empty(); });
  EXPECT_EQ(StopServer(), 0) << server_->seen();

  StartServer();
  const HttpReply list = Call("GET", base_ + "/v1/sessions");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(Parse(list.body)["sessions"][0]["in_memory"], false);
  const HttpReply restored = Call("GET", base_ + "/v1/sessions/" + session);
  ASSERT_EQ(restored.status, 200) << restored.body;
  const Json json = Parse(restored.body);
  EXPECT_EQ(json["loops"][0]["loop_id"], loop);
  EXPECT_EQ(json["loops"][0]["history_messages"], 2) << restored.body;
  // The restarted server listens on another port.
  const HttpReply history =
      Call("GET", base_ + "/v1/sessions/" + session + "/loops/" + loop + "/history");
  ASSERT_EQ(history.status, 200);
  EXPECT_EQ(Parse(history.body)["messages"].size(), 2u);
  EXPECT_EQ(StopServer(), 0);
}

// 100 hostile connections held open while a normal client works: ten each of headers that never
// end (slowloris), a declared body never sent, a body over --max-body-bytes, headers over what a
// connection may hold, bytes that are not HTTP, event streams that are never read, requests
// dropped half-sent, a wrong token, an unknown member and an id that is not a UUID. The normal
// client's whole session (create, three inputs, a compaction, its reply, the events) is served
// while they are open; then each hostile connection shows a typed error or a close within the
// connection timeout (2 s here), the streams nobody read hold every event, and the journal holds
// everything the normal client did and nothing the hostile ones sent.
TEST_F(ServeCli, HundredHostileConnectionsNeitherStopANormalClientNorLoseAnything) {
  const std::string token_file = dir_.Write("token", "s3cret-token\n");
  StartServer(
      {"--token-file", token_file, "--connection-timeout", "2", "--max-body-bytes", "1024"});
  const std::uint16_t port =
      static_cast<std::uint16_t>(std::stoi(base_.substr(base_.rfind(':') + 1)));
  const std::vector<std::string> auth = {"Authorization: Bearer s3cret-token"};
  const std::string bearer = "Authorization: Bearer s3cret-token\r\n";
  const HttpReply created = Call(
      "POST", base_ + "/v1/sessions",
      R"({"loops":[{"model":"m","policy":{"keep_recent_segments":1,"keep_recent_tokens":1}}]})",
      auth);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string session = Parse(created.body)["session_id"].get<std::string>();
  const std::string loop = Parse(created.body)["loops"][0].get<std::string>();
  const std::string session_path = "/v1/sessions/" + session;

  enum Kind {
    kSlowloris,
    kBodyNeverSent,
    kBodyTooLarge,
    kHeadersTooLarge,
    kGarbage,
    kUnreadStream,
    kDropped,
    kWrongToken,
    kUnknownMember,
    kBadId,
    kKinds
  };
  const auto request = [&](const std::string& head, const std::string& body = "") {
    return head + "Host: 127.0.0.1\r\n" + bearer +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  struct Hostile {
    Kind kind;
    int fd;
  };
  std::vector<Hostile> hostile;
  for (int i = 0; i < 100; ++i) {
    const Kind kind = static_cast<Kind>(i % kKinds);
    if (kind == kUnreadStream) {
      const int fd = serve_testing::OpenRawStream(port, session_path + "/events", bearer);
      ASSERT_GE(fd, 0);
      hostile.push_back({kind, fd});
      continue;
    }
    const int fd = serve_testing::ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    std::string bytes;
    switch (kind) {
      case kSlowloris:
        bytes = "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
        break;
      case kBodyNeverSent:
        bytes = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer +
                "Content-Length: 100\r\n\r\n{\"loops\":";
        break;
      case kBodyTooLarge:
        bytes = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer +
                "Content-Length: 1000000\r\n\r\n";
        break;
      case kHeadersTooLarge:
        bytes =
            "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(64'000, 'a') +
            "\r\n\r\n";
        break;
      case kGarbage: {
        static constexpr char kNotHttp[] =
            "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n";
        bytes.assign(kNotHttp, sizeof kNotHttp - 1);
        break;
      }
      case kDropped:
        bytes = "POST " + session_path + "/loops/" + loop +
                "/input HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer +
                "Content-Length: 40\r\n\r\n{\"text\":\"never ";
        break;
      case kWrongToken:
        bytes =
            "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n\r\n";
        break;
      case kUnknownMember:
        bytes = request("POST /v1/sessions HTTP/1.1\r\n",
                        R"({"loops":[{"model":"m","script":"/etc/passwd"}]})");
        break;
      case kBadId:
        bytes = request("GET /v1/sessions/..%2F..%2Fetc HTTP/1.1\r\n");
        break;
      case kUnreadStream:
      case kKinds:
        break;
    }
    // A header over the connection's memory may be refused before all of it is sent.
    serve_testing::SendAll(fd, bytes);
    if (kind == kDropped) {
      close(fd);
      continue;
    }
    hostile.push_back({kind, fd});
  }

  // The normal client, while all of them are open.
  const auto started = std::chrono::steady_clock::now();
  const std::string loop_url = base_ + session_path + "/loops/" + loop;
  for (const char* text : {"Say hello.", "Now edit src/app.cc.", "Run the tests."}) {
    const HttpReply input =
        Call("POST", loop_url + "/input", std::string(R"({"text":")") + text + "\"}", auth);
    ASSERT_EQ(input.status, 202) << input.body;
    const HttpReply answered =
        Call("GET",
             base_ + "/v1/commands/" + Parse(input.body)["command_id"].get<std::string>() +
                 "?wait_ms=20000",
             "", auth);
    ASSERT_EQ(answered.status, 200) << answered.body;
  }
  const HttpReply compact = Call("POST", loop_url + "/compact", "", auth);
  ASSERT_EQ(compact.status, 202) << compact.body;
  const std::string command = Parse(compact.body)["command_id"].get<std::string>();
  const HttpReply reply =
      Call("GET", base_ + "/v1/commands/" + command + "?wait_ms=20000", "", auth);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Parse(reply.body)["reply"]["type"], "CompactWaiterResolved") << reply.body;
  const auto events = ReadStream(
      base_ + session_path + "/events?from=1",
      [](const auto& e) { return Has(e, "CompactWaiterResolved"); }, auth);
  ASSERT_TRUE(Has(events, "CompactWaiterResolved"));
  // Well inside the curl timeouts: nothing waited for a hostile connection to go.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));

  // Each hostile connection: a typed error, or closed by the server within the connection
  // timeout (2 s; the bound below leaves room for a loaded machine).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
  };
  // The typed refusals: status line and error kind.
  const std::map<Kind, std::pair<std::string, std::string>> typed = {
      {kBodyTooLarge, {"HTTP/1.1 413", "too_large"}},
      {kWrongToken, {"HTTP/1.1 401", "unauthorized"}},
      {kUnknownMember, {"HTTP/1.1 400", "invalid_request"}},
      {kBadId, {"HTTP/1.1 400", "invalid_id"}}};
  for (const Hostile& h : hostile) {
    SCOPED_TRACE("hostile connection kind " + std::to_string(h.kind));
    if (h.kind == kUnreadStream) {
      // Never read until now: it holds every event, the compaction's reply among them, and is
      // still open (a heartbeat comment keeps coming).
      const RawRead read = serve_testing::ReadRaw(
          h.fd, [&](const std::string& b) { return b.find(command) != std::string::npos; }, left());
      EXPECT_FALSE(read.closed);
      EXPECT_NE(read.bytes.find("event: CompactWaiterResolved"), std::string::npos);
      close(h.fd);
      continue;
    }
    const RawRead read = serve_testing::ReadRaw(
        h.fd, [](const std::string&) { return false; }, left());
    close(h.fd);
    EXPECT_TRUE(read.closed) << "still open: " << read.bytes.substr(0, 200);
    const std::string status = read.bytes.substr(0, 12);
    if (const auto t = typed.find(h.kind); t != typed.end()) {
      EXPECT_EQ(status, t->second.first);
      EXPECT_NE(read.bytes.find("\"kind\":\"" + t->second.second + "\""), std::string::npos)
          << read.bytes;
    } else if (h.kind == kSlowloris || h.kind == kBodyNeverSent) {
      EXPECT_EQ(read.bytes, "");  // closed by the connection timeout, nothing answered
    } else {
      // Headers too large, not HTTP: libmicrohttpd's own refusal (431, 400) or a bare close;
      // neither reaches the API.
      EXPECT_TRUE(read.bytes.empty() || status.rfind("HTTP/1.1 4", 0) == 0) << read.bytes;
    }
  }

  // Nothing lost, nothing added: one session, whose journal holds the three turns and the
  // compaction, exactly the events the stream replayed.
  const HttpReply list = Call("GET", base_ + "/v1/sessions", "", auth);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(Parse(list.body)["sessions"].size(), 1u) << list.body;
  const HttpReply exported = Call("GET", base_ + session_path + "/export", "", auth);
  ASSERT_EQ(exported.status, 200);
  std::vector<std::uint64_t> journal_events;
  std::size_t accepted = 0;
  for (std::size_t at = 0; at < exported.body.size();) {
    const std::size_t nl = exported.body.find('\n', at);
    const std::string line = exported.body.substr(at, nl - at);
    const Json record = Parse(line);
    if (record["kind"] == "event")
      journal_events.push_back(record["seq"].get<std::uint64_t>());
    accepted += line.find(R"("type":"InputAccepted")") != std::string::npos ? 1 : 0;
    at = nl + 1;
  }
  EXPECT_EQ(accepted, 3u);
  std::vector<std::uint64_t> streamed;
  for (const StreamEvent& e : events)
    streamed.push_back(e.seq);
  ASSERT_LE(streamed.size(), journal_events.size());
  EXPECT_EQ(streamed, std::vector<std::uint64_t>(
                          journal_events.begin(),
                          journal_events.begin() + static_cast<std::ptrdiff_t>(streamed.size())));
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

}  // namespace
}  // namespace harness::serve_e2e
