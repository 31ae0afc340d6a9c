// `harness serve` end to end: the real binary on 127.0.0.1 (port 0), a SQLite data directory and
// a scripted model, driven over HTTP with libcurl: sessions, commands and their waits, the event
// stream and its resumption, typed errors, the token rule, and a graceful stop whose sessions a
// restarted server restores. With HARNESS_PG_URL: two servers on one PostgreSQL journal, the
// second refused a session its holder serves, then taking it over once the holder is killed.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chat_support.h"
#include "core/internal/json_dom.h"
#include "piped_process.h"
#include "support/serve_client.h"
#include "support/threads.h"

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

// Connections that send a request's head a byte at a time, a byte every kTrickleEvery (well
// within any idle timeout), until the server ends them.
class Tricklers {
 public:
  static constexpr std::chrono::milliseconds kTrickleEvery{500};

  // `count` connections to 127.0.0.1:`port`, each sent `head` (a request's first lines) at once.
  Tricklers(std::uint16_t port, std::size_t count, const std::string& head) {
    for (std::size_t i = 0; i < count; ++i) {
      Connection c;
      c.opened = std::chrono::steady_clock::now();
      c.fd = serve_testing::ConnectLoopback(port);
      EXPECT_GE(c.fd, 0);
      if (c.fd >= 0)
        serve_testing::SendAll(c.fd, head);
      connections_.push_back(c);
    }
  }
  ~Tricklers() {
    for (const Connection& c : connections_)
      if (c.fd >= 0)
        close(c.fd);
  }
  Tricklers(const Tricklers&) = delete;
  Tricklers& operator=(const Tricklers&) = delete;

  // One more byte of a header line to every open connection each kTrickleEvery, until the server
  // has ended every one (its end of stream, or a reset, is what this waits on, with poll) or
  // `limit` passes.
  void TrickleUntilEnded(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auto next_byte = std::chrono::steady_clock::now() + kTrickleEvery;
    for (;;) {
      std::vector<pollfd> polled;
      std::vector<Connection*> open;
      for (Connection& c : connections_) {
        if (c.fd >= 0 && !c.lived) {
          polled.push_back(pollfd{c.fd, POLLIN, 0});
          open.push_back(&c);
        }
      }
      const auto now = std::chrono::steady_clock::now();
      if (open.empty() || now >= deadline)
        return;
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(next_byte, deadline) - now);
      poll(polled.data(), polled.size(), static_cast<int>(std::max<std::int64_t>(0, wait.count())));
      for (std::size_t i = 0; i < polled.size(); ++i) {
        if (polled[i].revents == 0)
          continue;
        char buf[512];
        const ssize_t n = recv(polled[i].fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
          open[i]->answered.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          open[i]->lived = std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::steady_clock::now() - open[i]->opened);
        }
      }
      if (std::chrono::steady_clock::now() >= next_byte) {
        for (Connection* c : open) {
          if (!c->lived && send(c->fd, "a", 1, MSG_NOSIGNAL) == 1)
            ++c->trickled;
        }
        next_byte += kTrickleEvery;
      }
    }
  }

  struct Connection {
    int fd = -1;
    std::chrono::steady_clock::time_point opened;
    std::optional<std::chrono::milliseconds> lived;  // until the server ended it
    std::size_t trickled = 0;                        // bytes sent after the head
    std::string answered;                            // what the server sent
  };
  const std::vector<Connection>& connections() const { return connections_; }

 private:
  std::vector<Connection> connections_;
};

// The head of a request whose header line never ends, for Tricklers.
std::string TrickledHead(const std::string& extra_headers = "") {
  return "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "X-Slow: ";
}

// Each trickling connection was ended by the server, nothing answered, no sooner than the
// request timeout after it was opened (its bytes kept coming faster than the idle timeout) and
// within `slack` after it.
void ExpectEndedAtTheDeadline(const Tricklers& tricklers, std::chrono::seconds request_timeout,
                              std::chrono::seconds slack) {
  for (const auto& c : tricklers.connections()) {
    ASSERT_TRUE(c.lived.has_value()) << "still open after " << c.trickled << " trickled bytes";
    EXPECT_GE(*c.lived, request_timeout);
    EXPECT_LE(*c.lived, request_timeout + slack);
    EXPECT_GE(c.trickled, 2u);
    EXPECT_EQ(c.answered, "");
  }
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

// --retention none with --snapshot-interval 8: once a session has written a snapshot, the records
// before it move to the data directory's archive (docs/spec/retention.md). The session serves on
// unchanged, a replay from seq 1 ends with replay_failed naming the archive, `journal verify`
// checks the archive, and a restarted server restores the same history from the snapshot.
TEST_F(ServeCli, RetentionArchivesWhatASnapshotMakesUnnecessaryAndTheSessionServesOnUnchanged) {
  script_ = dir_.Script({Answer("One."), Answer("Two."), Answer("Three.")});
  StartServer({"--snapshot-interval", "8", "--retention", "none"});
  const auto [session, loop] = CreateSession();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  const std::string events_url = base_ + "/v1/sessions/" + session + "/events?from=1";
  // A stream from seq 1 sees each turn end (an input is sent once the turn before it has
  // completed, so each is a turn of its own) and the compaction. It reads its first event before
  // the first input, so before any snapshot, so before retention can remove what it replays;
  // past the replay it is live.
  std::mutex mu;
  std::condition_variable changed;
  std::size_t events_seen = 0;
  std::size_t turns = 0;
  std::vector<StreamEvent> seen;
  // A jthread: an ASSERT that returns early still joins it (the stream ends at its timeout).
  std::jthread reader([&] {
    seen = ReadStream(events_url, [&](const std::vector<StreamEvent>& events) {
      std::lock_guard lock(mu);
      events_seen = events.size();
      if (events.back().name == "TurnCompleted")
        ++turns;
      changed.notify_all();
      return events.back().name == "end" || (turns == 3 && Has(events, "CompactionCommitted"));
    });
  });
  const auto wait_for = [&](auto done) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(30), done);
  };
  ASSERT_TRUE(wait_for([&] { return events_seen > 0; }));
  std::size_t sent = 0;
  for (const char* text : {"First.", "Second.", "Third."}) {
    const HttpReply input =
        Call("POST", loop_url + "/input", std::string(R"({"text":")") + text + "\"}");
    EXPECT_EQ(input.status, 202) << input.body;
    ++sent;
    EXPECT_TRUE(wait_for([&] { return turns == sent; })) << text;
  }
  const HttpReply compact = Call("POST", loop_url + "/compact");
  EXPECT_EQ(compact.status, 202) << compact.body;
  reader.join();
  ASSERT_TRUE(Has(seen, "CompactionCommitted")) << seen.size() << " events";
  ASSERT_NE(seen.back().name, "end") << seen.back().data.dump();
  // Retention runs on the session's blocking pool after a snapshot's append: the test waits
  // for its outcome, a replay from seq 1 refused, asking again until it is (or 30 s pass).
  std::vector<StreamEvent> first;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    first = ReadStream(events_url, [](const auto& events) { return !events.empty(); });
    if (!first.empty() && first[0].name == "end")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(first[0].name, "end") << "no retention within 30 s";
  EXPECT_EQ(first[0].data["reason"], "replay_failed") << first[0].data.dump();
  const std::string archive = "archive/" + session + ".hjarc";
  const std::string detail = first[0].data.value("detail", "");
  EXPECT_NE(detail.find("archived"), std::string::npos) << detail;
  EXPECT_NE(detail.find(archive), std::string::npos) << detail;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir_.data()) / archive));

  const Json history = Parse(Call("GET", loop_url + "/history").body);
  ASSERT_EQ(history["derived_prefix"], 1) << history.dump();
  const Json& messages = history["messages"];
  // The summary, then the newest request (a tail of 1 token keeps the request alone).
  ASSERT_EQ(messages.size(), 2u) << history.dump();
  EXPECT_EQ(messages[1]["blocks"][0]["text"], "Third.") << history.dump();
  EXPECT_EQ(StopServer(), 0) << server_->seen();

  const auto verify = journal_e2e::Harness({"journal", "verify", dir_.data()});
  ASSERT_EQ(verify.exit_code, 0);
  ASSERT_EQ(verify.lines.size(), 1u);
  EXPECT_NE(verify.lines[0].find("archived records checked"), std::string::npos) << verify.lines[0];

  StartServer();  // without retention: the compacted journal restores from its snapshot
  // A new port: the URL is made again from the restarted server's base.
  const HttpReply restored =
      Call("GET", base_ + "/v1/sessions/" + session + "/loops/" + loop + "/history");
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(Parse(restored.body)["messages"], messages);
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

// A server that only compacts: started without --model, it serves loops of the model "offline",
// which start from a history, compact with the extractive compactor, refuse input saying why,
// and are restored by a server started again the same way.
// --log-format: one line on stderr per request, at the one place every route's request ends,
// and one per failed model call; never a body, a query string or the token.
TEST_F(ServeCli, ServeLogsEachRequestAndModelFailure) {
  script_ = dir_.Script({R"({"error":"refused"})", Answer("Fine.")});
  StartServer({"--log-format", "text"});
  // The server's lines in the order it writes them, which need not be the order of the
  // requests' answers: each wait reads on until `text` has been seen, wherever it came.
  const auto seen = [this](const std::string& text) {
    return server_->seen().find(text) != std::string::npos || server_->WaitForLine(text);
  };

  const auto [session, loop] = CreateSession();
  ASSERT_TRUE(seen(" request POST /v1/sessions 201 ")) << server_->seen();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  const HttpReply input = Call("POST", loop_url + "/input", R"({"text":"a secret body"})");
  ASSERT_EQ(input.status, 202) << input.body;
  WaitCommand(Parse(input.body)["command_id"].get<std::string>());
  ASSERT_TRUE(seen(" model_failure scripted/")) << server_->seen();
  EXPECT_NE(server_->seen().find(" model_failure scripted/" +
                                 script_.substr(script_.rfind('/') + 1) + " refused: scripted\n"),
            std::string::npos)
      << server_->seen();
  ASSERT_TRUE(seen(" request POST /v1/sessions/" + session + "/loops/" + loop + "/input 202 "))
      << server_->seen();
  EXPECT_NE(server_->seen().find("/input 202 "), std::string::npos);
  EXPECT_NE(server_->seen().find(" ms session " + session + "\n"), std::string::npos)
      << server_->seen();
  // A 404 of a path no route has is logged the same way, without its query.
  EXPECT_EQ(Call("GET", base_ + "/v1/nowhere?token=hidden").status, 404);
  ASSERT_TRUE(seen(" request GET /v1/nowhere 404 ")) << server_->seen();
  EXPECT_EQ(server_->seen().find("hidden"), std::string::npos) << server_->seen();
  EXPECT_EQ(server_->seen().find("a secret body"), std::string::npos) << server_->seen();
  EXPECT_EQ(StopServer(), 0);

  // JSON: one object a line.
  StartServer({"--log-format", "json"});
  CreateSession();
  ASSERT_TRUE(server_->WaitForLine(
      R"("event":"request","method":"POST","path":"/v1/sessions","status":201,)"))
      << server_->seen();
  EXPECT_EQ(StopServer(), 0);

  // By default nothing is logged.
  StartServer();
  CreateSession();
  EXPECT_EQ(StopServer(), 0);
  const std::string rest = server_->Rest();
  const std::string quiet = server_->seen() + rest;
  EXPECT_EQ(quiet.find(" request "), std::string::npos) << quiet;
}

TEST_F(ServeCli, WithoutAModelLoopsOfTheOfflineModelCompactAHistoryAndRefuseInput) {
  const auto start = [&] {
    server_ = std::make_unique<e2e::Process>(
        std::vector<std::string>{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir_.data()});
    ASSERT_TRUE(server_->WaitForLine("listening on http://127.0.0.1:")) << server_->seen();
    const std::string& seen = server_->seen();
    const std::size_t at = seen.rfind("http://127.0.0.1:");
    base_ = seen.substr(at, seen.find('\n', at) - at);
  };
  start();
  const HttpReply refused = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"m"}]})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Parse(refused.body)["error"]["kind"], "unknown_model");
  std::string history = "[";
  for (int i = 0; i < 3; ++i) {
    history += std::string(i == 0 ? "" : ",") +
               R"({"role":"user","blocks":[{"type":"text","text":"Request )" + std::to_string(i) +
               R"(: edit src/app.cc."}]},)" +
               R"({"role":"assistant","blocks":[{"type":"text","text":"Edited src/app.cc, step )" +
               std::to_string(i) + R"(."}],"usage":null})";
  }
  history += "]";
  const HttpReply created = Call(
      "POST", base_ + "/v1/sessions",
      R"({"loops":[{"model":"offline","policy":{"keep_recent_segments":1,"keep_recent_tokens":1},)"
      R"("history":)" +
          history + "}]}");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json json = Parse(created.body);
  const std::string session = json["session_id"].get<std::string>();
  const std::string loop_path =
      "/v1/sessions/" + session + "/loops/" + json["loops"][0].get<std::string>();
  const std::string loop_url = base_ + loop_path;

  const HttpReply input = Call("POST", loop_url + "/input", R"({"text":"Go on."})");
  EXPECT_EQ(input.status, 400) << input.body;
  EXPECT_EQ(Parse(input.body)["error"]["kind"], "invalid_argument");
  EXPECT_NE(Parse(input.body)["error"]["detail"].get<std::string>().find(
                "has no conversation model (harness/offline only compacts)"),
            std::string::npos)
      << input.body;

  const HttpReply compact = Call("POST", loop_url + "/compact");
  ASSERT_EQ(compact.status, 202) << compact.body;
  const Json reply = WaitCommand(Parse(compact.body)["command_id"].get<std::string>());
  EXPECT_EQ(reply["reply"]["type"], "CompactWaiterResolved") << reply.dump();
  const Json after = Parse(Call("GET", loop_url + "/history").body);
  EXPECT_EQ(after["derived_prefix"], 1) << after.dump();
  // The summary, then the newest request (a tail of 1 token keeps the request alone).
  ASSERT_EQ(after["messages"].size(), 2u) << after.dump();
  EXPECT_EQ(after["messages"][1]["blocks"][0]["text"], "Request 2: edit src/app.cc.");
  EXPECT_EQ(StopServer(), 0) << server_->seen();

  start();  // again without --model: the offline loop is restored on demand
  const HttpReply restored = Call("GET", base_ + loop_path + "/history");
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(Parse(restored.body)["messages"], after["messages"]);
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

// A scripted model calls the client tool `lookup`; the test, as the client, finds the call on the
// event stream and in GET …/tool_calls, answers it over HTTP, and the turn ends with the
// model's answer after the result. A second turn's call nobody answers gets the timeout's error
// result.
TEST_F(ServeCli, AClientToolIsCalledAnsweredOverHttpAndItsResultReachesTheModel) {
  const std::string call =
      R"({"message":{"role":"assistant","usage":null,"blocks":[)"
      R"({"type":"tool_use","id":"call-ID","name":"lookup","input":{"q":"answer"}}]}})";
  std::string first = call, second = call;
  first.replace(first.find("ID"), 2, "1");
  second.replace(second.find("ID"), 2, "2");
  script_ = dir_.Script({first, Answer("It is 42."), second, Answer("No answer came.")});
  StartServer({"--tool-timeout", "1"});
  const HttpReply created =
      Call("POST", base_ + "/v1/sessions",
           R"({"loops":[{"model":"m","tools":[{"name":"lookup","description":"looks a thing up",)"
           R"("input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json ids = Parse(created.body);
  const std::string session = ids["session_id"].get<std::string>();
  const std::string loop_url =
      base_ + "/v1/sessions/" + session + "/loops/" + ids["loops"][0].get<std::string>();
  const std::string events_url = base_ + "/v1/sessions/" + session + "/events?from=1";

  ASSERT_EQ(Call("POST", loop_url + "/input", R"({"text":"What is it?"})").status, 202);
  // The call is the assistant's MessageCommitted on the stream.
  const auto called = ReadStream(events_url, [](const std::vector<StreamEvent>& events) {
    const StreamEvent& e = events.back();
    return e.name == "MessageCommitted" && e.data["event"]["message"]["role"] == "assistant";
  });
  ASSERT_FALSE(called.empty());
  const Json use = called.back().data["event"]["message"]["blocks"][0];
  EXPECT_EQ(use["type"], "tool_use");
  EXPECT_EQ(use["id"], "call-1");
  const Json listed = Parse(Call("GET", loop_url + "/tool_calls").body);
  ASSERT_EQ(listed["calls"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["calls"][0]["tool_use_id"], "call-1");
  EXPECT_EQ(listed["calls"][0]["input"]["q"], "answer");

  const HttpReply unknown = Call("POST", loop_url + "/tool_results",
                                 R"({"results":[{"tool_use_id":"call-9","content":"x"}]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(ErrorKind(unknown), "tool_call_not_found");
  const HttpReply answered = Call("POST", loop_url + "/tool_results",
                                  R"({"results":[{"tool_use_id":"call-1","content":"42"}]})");
  EXPECT_EQ(answered.status, 200) << answered.body;
  const auto done = ReadStream(events_url, [](const std::vector<StreamEvent>& events) {
    return events.back().name == "TurnCompleted";
  });
  ASSERT_TRUE(Has(done, "TurnCompleted"));
  const Json history = Parse(Call("GET", loop_url + "/history").body)["messages"];
  ASSERT_EQ(history.size(), 4u) << history.dump();
  EXPECT_EQ(history[2]["role"], "tool");
  EXPECT_EQ(history[2]["tool_use_id"], "call-1");
  EXPECT_EQ(history[2]["blocks"][0]["text"], "42");
  EXPECT_EQ(history[3]["blocks"][0]["text"], "It is 42.");
  const HttpReply again = Call("POST", loop_url + "/tool_results",
                               R"({"results":[{"tool_use_id":"call-1","content":"43"}]})");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(ErrorKind(again), "tool_call_answered");

  // Nobody answers the next call: after --tool-timeout the model gets an error result.
  ASSERT_EQ(Call("POST", loop_url + "/input", R"({"text":"Again?"})").status, 202);
  const auto timed_out = ReadStream(events_url, [](const std::vector<StreamEvent>& events) {
    std::size_t completed = 0;
    for (const StreamEvent& e : events)
      completed += e.name == "TurnCompleted" ? 1 : 0;
    return completed == 2;
  });
  const Json after = Parse(Call("GET", loop_url + "/history").body)["messages"];
  ASSERT_EQ(after.size(), 8u) << after.dump();
  EXPECT_EQ(after[6]["tool_use_id"], "call-2");
  EXPECT_TRUE(after[6]["is_error"].get<bool>());
  EXPECT_NE(after[6]["blocks"][0]["text"].get<std::string>().find(
                "the client did not answer this tool call within 1 second"),
            std::string::npos)
      << after[6].dump();
  EXPECT_EQ(StopServer(), 0);
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

// docs/serve.md "Security": a web page's cross-site request, and one of a page whose name was
// rebound to 127.0.0.1, against the real binary without a token (the default on loopback).
TEST_F(ServeCli, ACrossSiteOrRebindingRequestIsRefusedAndCreatesNothing) {
  StartServer();
  const std::string create = R"({"loops":[{"model":"m","system_prompt":"planted"}]})";
  // The reproduction: curl -X POST -H 'Host: rebind.attacker.example' -H 'Origin:
  // http://evil.example' -H 'Content-Type: text/plain' --data '…' …/v1/sessions
  const HttpReply rebound = Call(
      "POST", base_ + "/v1/sessions", create,
      {"Host: rebind.attacker.example", "Origin: http://evil.example", "Content-Type: text/plain"});
  EXPECT_EQ(rebound.status, 421) << rebound.body;
  EXPECT_EQ(ErrorKind(rebound), "host_not_allowed");
  EXPECT_EQ(Call("GET", base_ + "/v1/sessions", "", {"Host: rebind.attacker.example"}).status, 421);
  const HttpReply cross_site = Call("POST", base_ + "/v1/sessions", create,
                                    {"Origin: http://evil.example", "Content-Type: text/plain"});
  EXPECT_EQ(cross_site.status, 403) << cross_site.body;
  EXPECT_EQ(ErrorKind(cross_site), "origin_not_allowed");
  const HttpReply plain =
      Call("POST", base_ + "/v1/sessions", create, {"Content-Type: text/plain"});
  EXPECT_EQ(plain.status, 415) << plain.body;
  EXPECT_EQ(ErrorKind(plain), "unsupported_media_type");
  const HttpReply list = Call("GET", base_ + "/v1/sessions");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(Parse(list.body)["sessions"].size(), 0u) << list.body;
  // The nil UUID is refused as the CLI refuses it, in the API's words.
  const HttpReply nil = Call("GET", base_ + "/v1/sessions/00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(nil.status, 400) << nil.body;
  EXPECT_EQ(ErrorKind(nil), "invalid_id");
  EXPECT_EQ(nil.body.find("restore"), std::string::npos) << nil.body;
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

TEST_F(ServeCli, AMalformedCorsOriginRefusesToStart) {
  e2e::Process refused({"serve", "--listen", "127.0.0.1:0", "--data-dir", dir_.data(), "--model",
                        "m=scripted:" + script_, "--cors-origin", "https://app.example/"});
  const std::string out = refused.Rest();
  EXPECT_EQ(refused.Wait(), 2);
  EXPECT_NE(out.find("is not an origin such as https://app.example"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening"), std::string::npos);
}

TEST_F(ServeCli, AnAdvertisedUrlThatIsNotAnAbsoluteHttpUrlRefusesToStart) {
  for (const std::string url : {"ftp://a.example/", "http://user:pw@a.example/"}) {
    e2e::Process refused({"serve", "--listen", "127.0.0.1:0", "--data-dir", dir_.data(), "--model",
                          "m=scripted:" + script_, "--advertise-url", url});
    const std::string out = refused.Rest();
    EXPECT_EQ(refused.Wait(), 2) << out;
    EXPECT_NE(out.find("harness serve: invalid options: the advertised URL "), std::string::npos)
        << out;
    EXPECT_EQ(out.find("a.example"), std::string::npos) << out;
    EXPECT_EQ(out.find("listening"), std::string::npos);
  }
}

TEST_F(ServeCli, SigtermSuspendsAndARestartedServerRestoresTheSessionOnDemand) {
  StartServer();
  const auto [session, loop] = CreateSession();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  const HttpReply input = Call("POST", loop_url + "/input", R"({"text":"Say hello."})");
  ASSERT_EQ(input.status, 202);
  const std::string said = Parse(input.body)["command_id"].get<std::string>();
  const Json before = WaitCommand(said);
  // The turn's end, seen on the stream, before the server stops.
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return !events.empty(); });
  EXPECT_EQ(StopServer(), 0) << server_->seen();

  StartServer();
  // The command from before the restart: the new server's memory does not hold it, the
  // session's journal does, and gives the same answer (read without restoring the session).
  const HttpReply forgotten = Call("GET", base_ + "/v1/commands/" + said);
  EXPECT_EQ(forgotten.status, 404) << forgotten.body;
  EXPECT_EQ(Parse(forgotten.body)["error"]["kind"], "command_not_found");
  const HttpReply journaled =
      Call("GET", base_ + "/v1/sessions/" + session + "/commands/" + said + "?wait_ms=20000");
  ASSERT_EQ(journaled.status, 200) << journaled.body;
  EXPECT_EQ(Parse(journaled.body), before);
  EXPECT_EQ(Parse(journaled.body)["reply"]["type"], "InputAccepted");
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

// --blocking-idle reaches the sessions' host: with 0 a blocking worker ends as soon as it has
// nothing to run, so once a turn is over the server is back to the threads it had before its
// first session (it would keep the turn's worker otherwise).
TEST_F(ServeCli, BlockingWorkersEndAfterBlockingIdle) {
  StartServer({"--blocking-idle", "0"});
  const std::string process = std::to_string(server_->pid());
  const std::size_t before = ThreadCount(process);
  ASSERT_GT(before, 0u);
  const auto [session, loop] = CreateSession();
  const std::string loop_url = base_ + "/v1/sessions/" + session + "/loops/" + loop;
  const HttpReply input = Call("POST", loop_url + "/input", R"({"text":"Say hello."})");
  ASSERT_EQ(input.status, 202);
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return !events.empty(); });
  EXPECT_TRUE(ThreadCountFallsTo(before, process))
      << ThreadCount(process) << " threads, " << before << " before";
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

// A `harness serve` process started by a test: its base URL and its lease owner id (the two
// lines it prints when ready).
struct RunningServer {
  std::unique_ptr<e2e::Process> process;
  std::string base;
  std::string owner;
};

RunningServer StartServe(const std::vector<std::string>& args) {
  RunningServer out;
  out.process = std::make_unique<e2e::Process>(args);
  EXPECT_TRUE(out.process->WaitForLine("lease owner ")) << out.process->seen();
  const std::string& seen = out.process->seen();
  const std::size_t listening = seen.rfind("listening on ");
  const std::size_t owner = seen.rfind("lease owner ");
  if (listening != std::string::npos && owner != std::string::npos) {
    const std::size_t url = listening + 13;
    out.base = seen.substr(url, seen.find('\n', url) - url);
    out.owner = seen.substr(owner + 12, 36);
  }
  return out;
}

// The sequence numbers of the session's events in the journal after `after`, from an export.
std::vector<std::uint64_t> JournalEventsAfter(const std::string& export_body, std::uint64_t after) {
  std::vector<std::uint64_t> out;
  for (std::size_t at = 0; at < export_body.size();) {
    const std::size_t nl = export_body.find('\n', at);
    const Json record = Parse(export_body.substr(at, nl - at));
    if (record["kind"] == "event" && record["seq"].get<std::uint64_t>() > after)
      out.push_back(record["seq"].get<std::uint64_t>());
    at = nl + 1;
  }
  return out;
}

// Two servers, A and B, on one PostgreSQL journal with a 2 s lease: A serves a session and B is
// refused it, told A's owner id; A is killed (SIGKILL: no release); once A's lease expires B
// restores the session, a stream resumed on B with the Last-Event-ID read from A misses nothing
// and repeats nothing, and B compacts the session.
// Servers on the PostgreSQL journal of HARNESS_PG_URL; without it the tests skip (and fail with
// HARNESS_REQUIRE_PG=1).
class ServeCliPg : public ServeCli {
 protected:
  void SetUp() override {
    const char* pg = std::getenv("HARNESS_PG_URL");
    pg_ = pg != nullptr ? pg : "";
    if (pg_.empty()) {
      const char* required = std::getenv("HARNESS_REQUIRE_PG");
      if (required != nullptr && std::string(required) == "1")
        FAIL() << "HARNESS_PG_URL is not set but HARNESS_REQUIRE_PG=1";
      GTEST_SKIP() << "HARNESS_PG_URL is not set (scripts/pg-cluster start DIR prints one)";
    }
  }

  // The durable events of the stream at `url` resumed after `last`, read until one at or past
  // `until`.
  static std::vector<std::uint64_t> Resumed(const std::string& url, std::uint64_t last,
                                            std::uint64_t until) {
    std::vector<std::uint64_t> seqs;
    ReadStream(url,
               [&](const auto& read) {
                 seqs.clear();
                 for (const StreamEvent& e : read) {
                   if (e.seq != 0)
                     seqs.push_back(e.seq);
                 }
                 return !seqs.empty() && seqs.back() >= until;
               },
               {"Last-Event-ID: " + std::to_string(last)});
    return seqs;
  }

  std::string pg_;
};

// `harness serve` on 127.0.0.1:0 over the PostgreSQL journal at `pg` with model m of `script`
// (the same script for every server: a restored loop finds its model by the key the journal
// records, which names the script; each process's model starts the script again).
std::vector<std::string> PgServeArgs(const std::string& pg, const std::string& script,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:0",         "--journal",
                                   pg,      "--model",  "m=scripted:" + script};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_F(ServeCliPg, ASecondServerOnOnePostgresJournalTakesTheSessionOverWhenItsHolderIsKilled) {
  RunningServer a = StartServe(PgServeArgs(
      pg_, script_, {"--lease-ttl", "2", "--advertise-url", "http://a.example:8420/harness"}));
  EXPECT_NE(a.process->seen().find(" advertising http://a.example:8420/harness\n"),
            std::string::npos)
      << a.process->seen();
  RunningServer b = StartServe(PgServeArgs(pg_, script_, {"--lease-ttl", "2"}));
  ASSERT_FALSE(a.base.empty());
  ASSERT_FALSE(b.base.empty());
  ASSERT_NE(a.owner, b.owner);

  base_ = a.base;
  const auto [session, loop] = CreateSession();
  const std::string loop_path = "/v1/sessions/" + session + "/loops/" + loop;
  for (const char* text : {"Say hello.", "Now edit src/app.cc."}) {
    const HttpReply input =
        Call("POST", a.base + loop_path + "/input", std::string(R"({"text":")") + text + "\"}");
    ASSERT_EQ(input.status, 202) << input.body;
    EXPECT_EQ(WaitCommand(Parse(input.body)["command_id"].get<std::string>())["status"],
              "answered");
  }
  const HttpReply compact = Call("POST", a.base + loop_path + "/compact");
  ASSERT_EQ(compact.status, 202) << compact.body;
  WaitCommand(Parse(compact.body)["command_id"].get<std::string>());

  // A client reads A's stream part way: three events, and remembers the last id.
  const std::string events = "/v1/sessions/" + session + "/events";
  const auto first =
      ReadStream(a.base + events + "?from=1", [](const auto& read) { return read.size() == 3; });
  ASSERT_EQ(first.size(), 3u);
  const std::uint64_t last_event_id = first.back().seq;
  ASSERT_GT(last_event_id, 0u);

  // B is refused the session, told who holds it and where A serves it.
  const HttpReply refused = Call("GET", b.base + "/v1/sessions/" + session);
  ASSERT_EQ(refused.status, 409) << refused.body;
  const Json held = Parse(refused.body)["error"];
  EXPECT_EQ(held["kind"], "lease_held");
  EXPECT_EQ(held["holder"]["owner"], a.owner) << refused.body;
  EXPECT_EQ(held["holder"]["url"], "http://a.example:8420/harness") << refused.body;

  // A dies without releasing anything.
  a.process->Signal(SIGKILL);
  a.process->Wait();

  // B is refused until A's lease expires: each 409 says when, and B is asked again then (the
  // lease is judged on the PostgreSQL server's clock, this machine's; a few retries absorb the
  // renewal A may have made before it died). Bounded: 20 attempts.
  HttpReply restored;
  for (int attempt = 0; attempt < 20; ++attempt) {
    restored = Call("GET", b.base + "/v1/sessions/" + session);
    if (ErrorKind(restored) != "lease_held")
      break;
    const Json holder = Parse(restored.body)["error"]["holder"];
    ASSERT_EQ(holder["owner"], a.owner) << restored.body;
    const auto until = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(holder["lease_expires_at_ms"].get<std::int64_t>()));
    ASSERT_LT(until - std::chrono::system_clock::now(), std::chrono::seconds(3))
        << "A's lease runs at most --lease-ttl past its last renewal";
    std::this_thread::sleep_until(until + std::chrono::milliseconds(10));
  }
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(Parse(restored.body)["loops"][0]["loop_id"], loop);

  // Resumed on B with A's Last-Event-ID: exactly the journal's events after it, in order.
  const HttpReply exported = Call("GET", b.base + "/v1/sessions/" + session + "/export");
  ASSERT_EQ(exported.status, 200);
  const std::vector<std::uint64_t> expected = JournalEventsAfter(exported.body, last_event_id);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(Resumed(b.base + events, last_event_id, expected.back()), expected);

  // B serves it: a turn, then a compaction.
  base_ = b.base;
  const HttpReply input = Call("POST", b.base + loop_path + "/input", R"({"text":"Go on."})");
  ASSERT_EQ(input.status, 202) << input.body;
  EXPECT_EQ(WaitCommand(Parse(input.body)["command_id"].get<std::string>())["reply"]["type"],
            "InputAccepted");
  const HttpReply again = Call("POST", b.base + loop_path + "/compact");
  ASSERT_EQ(again.status, 202) << again.body;
  // B's loop judges the compaction with the tail targets a restored loop takes (the configured
  // model's defaults, as the request's are not journaled): it commits, or finds that this short
  // history fits the tail. Either is B's own verdict on a session it holds.
  const Json compacted = WaitCommand(Parse(again.body)["command_id"].get<std::string>());
  const Json& verdict = compacted["reply"];
  EXPECT_TRUE(verdict["type"] == "CompactWaiterResolved" ||
              (verdict["type"] == "CompactWaiterRejected" &&
               verdict["detail"]["kind"] == "history_fits_tail_target"))
      << compacted.dump();
  b.process->Signal(SIGTERM);
  EXPECT_EQ(b.process->Wait(), 0) << b.process->seen();
}

// A live server releases an idle session (--idle-release 1; its leases last 30 s, so only the
// release can hand the session over within the test): B, refused it while A holds it, serves it
// once A's stream of it ends idle_released, and a stream resumed on B from A's last event
// misses nothing.
TEST_F(ServeCliPg, AServerReleasesAnIdleSessionAndAnotherServesItWithoutAGap) {
  RunningServer a = StartServe(PgServeArgs(pg_, script_, {"--idle-release", "1"}));
  RunningServer b = StartServe(PgServeArgs(pg_, script_, {}));
  ASSERT_FALSE(a.base.empty());
  ASSERT_FALSE(b.base.empty());
  base_ = a.base;
  const auto [session, loop] = CreateSession();
  const std::string loop_path = "/v1/sessions/" + session + "/loops/" + loop;
  const HttpReply input = Call("POST", a.base + loop_path + "/input", R"({"text":"Say hello."})");
  ASSERT_EQ(input.status, 202) << input.body;
  WaitCommand(Parse(input.body)["command_id"].get<std::string>());
  const HttpReply refused = Call("GET", b.base + "/v1/sessions/" + session);
  ASSERT_EQ(ErrorKind(refused), "lease_held") << refused.body;
  EXPECT_EQ(Parse(refused.body)["error"]["holder"]["owner"], a.owner);

  // A's stream of the session ends once A lets it go.
  const std::string events = "/v1/sessions/" + session + "/events";
  const auto on_a = ReadStream(a.base + events + "?from=1", [](const auto&) { return false; });
  ASSERT_FALSE(on_a.empty());
  ASSERT_EQ(on_a.back().name, "end");
  EXPECT_EQ(on_a.back().data["reason"], "idle_released");
  const std::uint64_t last = on_a.back().data["last_seq"].get<std::uint64_t>();

  base_ = b.base;
  const HttpReply more = Call("POST", b.base + loop_path + "/input", R"({"text":"Go on."})");
  ASSERT_EQ(more.status, 202) << more.body;
  WaitCommand(Parse(more.body)["command_id"].get<std::string>());
  const HttpReply exported = Call("GET", b.base + "/v1/sessions/" + session + "/export");
  const std::vector<std::uint64_t> expected = JournalEventsAfter(exported.body, last);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(Resumed(b.base + events, last, expected.back()), expected);
  // A, asked again, is refused it now: B holds it.
  const HttpReply back = Call("GET", a.base + "/v1/sessions/" + session);
  EXPECT_EQ(ErrorKind(back), "lease_held") << back.body;
  EXPECT_EQ(Parse(back.body)["error"]["holder"]["owner"], b.owner);
  a.process->Signal(SIGTERM);
  b.process->Signal(SIGTERM);
  EXPECT_EQ(a.process->Wait(), 0) << a.process->seen();
  EXPECT_EQ(b.process->Wait(), 0) << b.process->seen();
}

// 100 hostile connections held open while a normal client works: ten each of headers that never
// end (slowloris), a declared body never sent, a body over --max-body-bytes, headers over what a
// connection may hold, bytes that are not HTTP, event streams that are never read, requests
// dropped half-sent, a wrong token, an unknown member and an id that is not a UUID; and ten more
// whose headers trickle in a byte every half second, well within the idle timeout. The normal
// client's whole session (create, three inputs, a compaction, its reply, the events) is served
// while they are open; then each hostile connection shows a typed error or a close within the
// connection timeout (2 s here), each trickling one was closed at the request timeout (3 s), the
// streams nobody read hold every event, and the journal holds everything the normal client did
// and nothing the hostile ones sent.
TEST_F(ServeCli, HundredHostileConnectionsNeitherStopANormalClientNorLoseAnything) {
  const std::string token_file = dir_.Write("token", "s3cret-token\n");
  constexpr std::chrono::seconds kRequestTimeout{3};
  StartServer({"--token-file", token_file, "--connection-timeout", "2", "--request-timeout",
               std::to_string(kRequestTimeout.count()), "--max-body-bytes", "1024"});
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
  // A body is sent as JSON: the guard refuses another type before anything else is looked at.
  const std::string kJson = "Content-Type: application/json\r\n";
  const auto request = [&](const std::string& head, const std::string& body = "") {
    return head + "Host: 127.0.0.1\r\n" + bearer + kJson +
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
        bytes = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer + kJson +
                "Content-Length: 100\r\n\r\n{\"loops\":";
        break;
      case kBodyTooLarge:
        bytes = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer + kJson +
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
                "/input HTTP/1.1\r\nHost: 127.0.0.1\r\n" + bearer + kJson +
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

  // Trickling all along, until the server ends them (a bounded loop).
  Tricklers tricklers(port, 10, TrickledHead(bearer));
  std::jthread trickle([&] { tricklers.TrickleUntilEnded(std::chrono::seconds(20)); });

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
  trickle.join();
  // Alive past the idle timeout (2 s), closed at the request timeout.
  ExpectEndedAtTheDeadline(tricklers, kRequestTimeout, std::chrono::seconds(5));

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
      // The reply's frame, up to the command id it answers (CompactionCommitted, before it,
      // names the command too, among its waiters).
      const auto replied = [&](const std::string& b) {
        const std::size_t frame = b.find("event: CompactWaiterResolved");
        return frame != std::string::npos && b.find(command, frame) != std::string::npos;
      };
      const RawRead read = serve_testing::ReadRaw(h.fd, replied, left());
      EXPECT_FALSE(read.closed);
      EXPECT_TRUE(replied(read.bytes))
          << read.bytes.substr(read.bytes.size() > 1500 ? read.bytes.size() - 1500 : 0);
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

// As many connections as --max-connections, each trickling its headers a byte every half second
// (well within the idle timeout), lock every other client out while they are open (a connection
// over the limit waits in the listen queue); the request timeout closes them (2 s here), and the
// next client is served.
TEST_F(ServeCli, TricklingConnectionsAsManyAsTheLimitAreClosedAtTheRequestTimeout) {
  constexpr std::chrono::seconds kRequestTimeout{2};
  constexpr std::size_t kLimit = 20;
  StartServer({"--max-connections", std::to_string(kLimit), "--connection-timeout", "60",
               "--request-timeout", std::to_string(kRequestTimeout.count())});
  Tricklers tricklers(static_cast<std::uint16_t>(std::stoi(base_.substr(base_.rfind(':') + 1))),
                      kLimit, TrickledHead());
  tricklers.TrickleUntilEnded(std::chrono::seconds(20));
  ExpectEndedAtTheDeadline(tricklers, kRequestTimeout, std::chrono::seconds(5));
  const HttpReply served = Call("GET", base_ + "/v1/sessions");
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(StopServer(), 0) << server_->seen();
}

}  // namespace
}  // namespace harness::serve_e2e
