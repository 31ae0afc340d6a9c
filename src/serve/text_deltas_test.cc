// Text deltas (serve/text_deltas.h, docs/serve.md "Text deltas"): the frame, the query that asks
// for them, and a turn whose model streams its answer over HTTP, read by a stream that asked
// and one that did not, while the model's blocking worker delivers (run under ThreadSanitizer).
#include "serve/text_deltas.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "serve/api.h"
#include "serve/event_frames.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::ParseOrNull;
using serve_testing::ReadStream;
using serve_testing::StreamEvent;

TEST(TextDeltaFrame, NamesItsLoopAndTurnAndEscapesItsText) {
  const Uuid loop = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").value();
  const Uuid turn = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c").value();
  EXPECT_EQ(
      TextDeltaFrame(loop, turn, "a \"b\"\n"),
      "event: text_delta\ndata: {\"loop_id\":\"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b\","
      "\"turn_id\":\"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c\",\"text\":\"a \\\"b\\\"\\n\"}\n\n");
  // Unknown turn: null. One data line whatever the text holds (a newline would end the field).
  const std::string frame = TextDeltaFrame(loop, Uuid{}, "x\ny");
  EXPECT_NE(frame.find("\"turn_id\":null"), std::string::npos);
  EXPECT_EQ(std::count(frame.begin(), frame.end(), '\n'), 3);
}

TEST(DecodeEventsRequest, TextDeltasIsTrueOrFalseAndOffByDefault) {
  EXPECT_FALSE(DecodeEventsRequest({}, std::nullopt)->text_deltas);
  EXPECT_TRUE(DecodeEventsRequest({{"text_deltas", "true"}}, std::nullopt)->text_deltas);
  EXPECT_FALSE(DecodeEventsRequest({{"text_deltas", "false"}}, std::nullopt)->text_deltas);
  auto refused = DecodeEventsRequest({{"text_deltas", "1"}}, std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ApiErrorKind::kInvalidQuery);
  EXPECT_EQ(refused.error().detail, "text_deltas \"1\" is not true or false");
}

constexpr const char* kPieces[] = {"Hel", "lo, ", "wor", "ld."};

// Gives its answer to the sink in pieces, on the thread that runs Complete (a blocking
// worker), as a provider's stream does.
class StreamingModel final : public ModelClient {
 public:
  explicit StreamingModel(TextDeltaSink sink) : sink_(std::move(sink)) {}
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    std::string text;
    for (const char* piece : kPieces) {
      if (sink_)
        sink_(piece);
      text += piece;
    }
    return InferenceResponse{AssistantMessage{{TextBlock{text}}, {}}, StopReason::kEndTurn};
  }

 private:
  const TextDeltaSink sink_;
};

Result<ServedModel, std::string> MakeStreaming(TextDeltaSink sink) {
  return serve_testing::Served(std::make_shared<StreamingModel>(std::move(sink)));
}

bool TurnEnded(const std::vector<StreamEvent>& events) {
  return !events.empty() && events.back().name == "TurnCompleted";
}

TEST(TextDeltas, AStreamThatAsksGetsTheTurnsDeltasBeforeItsMessageAndNoOtherDoes) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  auto journal = NewMemoryJournal();
  ServeOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.journal = journal.get();
  options.threads = 2;
  options.models["s"] = ConfiguredModel{runtime_testing::TestModel(),
                                        [] { return MakeStreaming(nullptr); }, MakeStreaming};
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  auto server = std::move(started).value();
  const std::string base = "http://127.0.0.1:" + std::to_string(server->port());
  const auto created = Call("POST", base + "/v1/sessions",
                            R"({"loops":[{"model":"s","policy":{"automatic":false}}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string session = ParseOrNull(created.body)["session_id"].get<std::string>();
  const std::string loop = ParseOrNull(created.body)["loops"][0].get<std::string>();
  const std::string events = base + "/v1/sessions/" + session + "/events?from=1";

  // Each stream reads from the journal's start; its first event shows it is open, so the turn
  // that follows is all live on it.
  std::promise<void> open_with, open_without;
  std::vector<StreamEvent> with, without;
  auto read = [&](std::string url, std::vector<StreamEvent>& out, std::promise<void>& open) {
    bool told = false;
    out = ReadStream(url, [&](const std::vector<StreamEvent>& seen) {
      if (!told) {
        told = true;
        open.set_value();
      }
      return TurnEnded(seen);
    });
  };
  std::thread reader_with(read, events + "&text_deltas=true", std::ref(with), std::ref(open_with));
  std::thread reader_without(read, events, std::ref(without), std::ref(open_without));
  open_with.get_future().wait();
  open_without.get_future().wait();
  const auto input = Call("POST", base + "/v1/sessions/" + session + "/loops/" + loop + "/input",
                          R"({"text":"Say hello."})");
  EXPECT_EQ(input.status, 202) << input.body;
  reader_with.join();
  reader_without.join();

  std::string turn;
  std::string text;
  std::size_t deltas = 0;
  bool committed = false;
  for (const StreamEvent& e : with) {
    if (e.name == "TurnStarted")
      turn = e.data["event"]["turn_id"].get<std::string>();
    if (e.name == "MessageCommitted" && e.data["event"]["message"]["role"] == "assistant")
      committed = true;
    if (e.name == "text_delta") {
      EXPECT_FALSE(committed) << "a delta after its message";
      EXPECT_EQ(e.data["loop_id"], loop);
      EXPECT_EQ(e.data["turn_id"], turn);
      text += e.data["text"].get<std::string>();
      ++deltas;
    }
  }
  EXPECT_TRUE(committed);
  EXPECT_EQ(deltas, std::size(kPieces));
  EXPECT_EQ(text, "Hello, world.");
  for (const StreamEvent& e : without)
    EXPECT_NE(e.name, "text_delta");
  EXPECT_EQ(without.size(), with.size() - deltas);
  // Nothing of them in the journal: the export has the events only.
  const auto exported = Call("GET", base + "/v1/sessions/" + session + "/export");
  EXPECT_EQ(exported.body.find("text_delta"), std::string::npos);
  server->Shutdown();
}

}  // namespace
}  // namespace harness::serve
