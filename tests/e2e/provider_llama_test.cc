// The harness against a real model server: llama-server (scripts/llama-server) serving the tiny
// random-weight model on 127.0.0.1, reached through the project's own OpenAI and Anthropic clients
// over libcurl. Everything between the session and the socket is production code; only the
// model's weights are random (docs/local-model.md), which is why a summary passes validation
// only when the GBNF grammar constrains it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli_support.h"
#include "harness/compaction/compactor.h"
#include "harness/compaction/model_compactor.h"
#include "harness/compaction/tail.h"
#include "harness/event/compaction.h"
#include "harness/event/event.h"
#include "harness/http/curl_client.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/provider/provider_environment.h"
#include "harness/runtime/session.h"
#include "llama_server.h"
#include "support/build_paths.h"

// g++ 12 at -O3 reports AssistantMessage::usage as maybe-uninitialized when a Message variant
// holding it is moved inside inlined vector code (a known false positive of that release).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace harness {
namespace {

using namespace std::chrono_literals;
using e2e::LlamaServer;

// One server for the whole suite: starting it loads the model, and every test here is a
// client of the same endpoint. The slot context is large enough for the summarizer prompt,
// the transcript and the summary budget together.
class LlamaSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    e2e::LlamaServerOptions options;
    options.context = 16384;
    options.parallel = 2;
    auto started = LlamaServer::Start(options);
    if (!started.ok()) {
      start_error_ = new std::string(started.error());
      return;
    }
    server_ = started->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "llama-server did not start: "
                                << (start_error_ ? *start_error_ : std::string("?"));
  }

  // The provider's client as the CLI builds it, pointed at the local server.
  static ProviderModel Provider(std::string_view provider, bool stream,
                                TextDeltaSink on_text = {}) {
    const std::map<std::string, std::string> environment = {
        {"OPENAI_BASE_URL", server_->base_url() + "/v1"},
        {"OPENAI_API_KEY", server_->api_key()},
        {"ANTHROPIC_BASE_URL", server_->base_url() + "/v1"},
        {"ANTHROPIC_API_KEY", server_->api_key()},
    };
    auto http = CurlHttpClient::Create();
    EXPECT_TRUE(http.ok());
    ProviderClientSettings settings;
    settings.stream = stream;
    settings.on_text = std::move(on_text);
    settings.timeouts.total = 120s;
    auto made = MakeProviderModel(
        provider, "tiny",
        [&](std::string_view name) -> std::optional<std::string> {
          auto it = environment.find(std::string(name));
          if (it == environment.end())
            return std::nullopt;
          return it->second;
        },
        std::shared_ptr<HttpClient>(std::move(*http)), settings);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().Message());
    return std::move(*made);
  }

  static LlamaServer* server_;
  static std::string* start_error_;
};

LlamaServer* LlamaSuite::server_ = nullptr;
std::string* LlamaSuite::start_error_ = nullptr;

// Remembers the compactor's last error so a test can name the invalid-summary reason, which the
// CompactionRejected event carries only as its kind.
class RecordingCompactor final : public Compactor {
 public:
  explicit RecordingCompactor(std::shared_ptr<Compactor> inner) : inner_(std::move(inner)) {}
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override {
    auto out = inner_->Compact(input, stop);
    if (!out.ok())
      last_error_.set_value(out.error());
    return out;
  }
  std::future<CompactorError> last_error() { return last_error_.get_future(); }

 private:
  std::shared_ptr<Compactor> inner_;
  std::promise<CompactorError> last_error_;
};

struct Chat {
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  std::unique_ptr<Session> session;
  std::optional<Subscription> events;  // set by Open
  Uuid loop;
};

CompactionPolicy Policy(bool automatic, TokenCount max_summary_tokens = 1'200) {
  CompactionPolicy policy;
  policy.automatic = automatic;
  policy.counter_policy = CounterPolicy::kAllowConservative;
  policy.compact_at = 8'000;
  policy.rearm_below = 6'000;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 64;
  policy.reserved_output = 64;
  policy.safety_margin = 200;
  policy.max_summary_tokens = max_summary_tokens;
  policy.count_timeout = 10s;
  return policy;
}

Message Assistant(std::string text) {
  AssistantMessage message;
  message.blocks.push_back(TextBlock{std::move(text)});
  return message;
}

std::vector<Message> Conversation(int rounds) {
  std::vector<Message> history;
  for (int i = 0; i < rounds; ++i) {
    std::string round = " Round ";
    round.append(std::to_string(i)).append(".");
    std::string ask =
        "Please refactor the parser module so that errors are typed; keep the public API stable "
        "and do not add dependencies.";
    std::string answer =
        "I moved the error handling into a typed result and kept the API. The tests pass; next "
        "I will update the documentation.";
    history.push_back(UserMessage{{TextBlock{ask.append(round)}}});
    history.push_back(Assistant(answer.append(round)));
  }
  return history;
}

Chat Open(const ProviderModel& model, std::shared_ptr<Compactor> compactor,
          std::vector<Message> history, ModelLimits limits,
          CompactionPolicy policy = Policy(false)) {
  Chat chat;
  SessionOptions options;
  options.journal = chat.journal.get();
  auto session = Session::Open(std::move(options));
  EXPECT_TRUE(session.ok());
  chat.session = std::move(*session);
  chat.events = chat.session->Subscribe();
  LoopDefinition definition;
  definition.model = model.model;
  definition.limits = limits;
  definition.client = model.client;
  definition.counter = std::make_shared<EstimateCounter>();
  definition.compaction = policy;
  definition.compactor = std::move(compactor);
  definition.history = std::move(history);
  auto loop = chat.session->CreateLoop(std::move(definition));
  EXPECT_TRUE(loop.ok()) << (loop.ok() ? "" : loop.error().Message());
  chat.loop = *loop;
  return chat;
}

// Events until `done` accepts one; fails after 120 s without a new one.
std::vector<Event> Until(Subscription& events, const std::function<bool(const Event&)>& done) {
  std::vector<Event> seen;
  for (;;) {
    auto next = events.Next(std::chrono::steady_clock::now() + 120s);
    if (!next) {
      ADD_FAILURE() << "no event in 120 s after " << seen.size() << " events";
      return seen;
    }
    seen.push_back(*next->event);
    if (done(seen.back()))
      return seen;
  }
}

template <typename E>
bool Is(const Event& e) {
  return std::holds_alternative<E>(e);
}

template <typename E>
const E* Find(const std::vector<Event>& events) {
  for (const Event& e : events)
    if (const auto* found = std::get_if<E>(&e))
      return found;
  return nullptr;
}

bool TurnEnded(const Event& e) {
  return Is<TurnCompleted>(e) || Is<TurnFailed>(e) || Is<TurnInterrupted>(e);
}

// One turn through a provider: the answer is an assistant message with the server's usage.
void ExpectTurn(const ProviderModel& model) {
  Chat chat =
      Open(model, std::make_shared<ModelCompactor>(model.client), {}, ModelLimits{16'000, 0, 24});
  ASSERT_TRUE(
      chat.session->SubmitInputToLoop(chat.loop, UserMessage{{TextBlock{"Hello there"}}}).ok());
  const auto seen = Until(*chat.events, TurnEnded);
  const auto* failed = Find<TurnFailed>(seen);
  ASSERT_EQ(failed, nullptr) << TurnFailReasonName(failed->reason) << ": " << failed->detail;
  ASSERT_NE(Find<TurnCompleted>(seen), nullptr);
  auto snapshot = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(snapshot.ok());
  ASSERT_EQ(snapshot->history.size(), 2u);
  const auto* answer = std::get_if<AssistantMessage>(&snapshot->history[1].value);
  ASSERT_NE(answer, nullptr);
  ASSERT_TRUE(answer->usage.has_value());
  EXPECT_GT(answer->usage->input_tokens, 0u);
  EXPECT_GT(answer->usage->output_tokens, 0u);
  EXPECT_LE(answer->usage->output_tokens, 24u);
}

TEST_F(LlamaSuite, OpenAiTurnWithoutStreaming) {
  ExpectTurn(Provider("openai", false));
}

TEST_F(LlamaSuite, OpenAiTurnStreaming) {
  std::atomic<int> deltas{0};
  ExpectTurn(Provider("openai", true, [&](std::string_view) { ++deltas; }));
  EXPECT_GT(deltas.load(), 0);
}

TEST_F(LlamaSuite, AnthropicTurnWithoutStreaming) {
  ExpectTurn(Provider("anthropic", false));
}

TEST_F(LlamaSuite, AnthropicTurnStreaming) {
  std::atomic<int> deltas{0};
  ExpectTurn(Provider("anthropic", true, [&](std::string_view) { ++deltas; }));
  EXPECT_GT(deltas.load(), 0);
}

// Anthropic's count_tokens endpoint as an exact provider counter: llama-server serves it with
// its own tokenizer, and a longer request costs more tokens.
TEST_F(LlamaSuite, AnthropicCountTokensIsAnExactProviderCount) {
  const ProviderModel model = Provider("anthropic", false);
  ASSERT_NE(model.exact_counter, nullptr);
  EXPECT_EQ(model.exact_counter->quality(), CountQuality::kExactProvider);
  InferenceRequest request;
  request.model = model.model;
  request.messages = Conversation(1);
  auto small = model.exact_counter->Count(request, {});
  ASSERT_TRUE(small.ok()) << small.error().Message();
  EXPECT_EQ(small->model, model.model);
  EXPECT_EQ(small->quality, CountQuality::kExactProvider);
  EXPECT_GT(small->input_tokens, 0u);
  request.messages = Conversation(4);
  auto large = model.exact_counter->Count(request, {});
  ASSERT_TRUE(large.ok()) << large.error().Message();
  EXPECT_GT(large->input_tokens, small->input_tokens);
}

// With the grammar the random model can only write a valid envelope echoing the identity, so
// the summary passes the strict validator and is committed as the new basis.
TEST_F(LlamaSuite, ManualCompactionWithTheGrammarCommits) {
  const ProviderModel model = Provider("openai", true);
  ModelCompactorOptions options;
  options.constrain_output = true;
  Chat chat = Open(model, std::make_shared<ModelCompactor>(model.client, options), Conversation(4),
                   ModelLimits{16'000, 0, 64});
  ASSERT_TRUE(chat.session->CompactToLoop(chat.loop).ok());
  const auto seen = Until(*chat.events, [](const Event& e) {
    return Is<CompactionCommitted>(e) || Is<CompactionRejected>(e);
  });
  const auto* committed = Find<CompactionCommitted>(seen);
  ASSERT_NE(committed, nullptr) << "rejected: "
                                << CompactRejectReasonName(
                                       Find<CompactionRejected>(seen)->reject_reason);
  auto snapshot = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->derived_prefix, 1u);
  EXPECT_EQ(snapshot->history.size(), 1 + committed->retained.size());
  EXPECT_LT(snapshot->history.size(), 8u);
}

// Without the grammar the random model writes no valid envelope: a typed invalid-summary
// rejection, and the history is exactly what it was.
TEST_F(LlamaSuite, ManualCompactionWithoutTheGrammarIsRejectedAndChangesNothing) {
  const ProviderModel model = Provider("openai", true);
  auto compactor =
      std::make_shared<RecordingCompactor>(std::make_shared<ModelCompactor>(model.client));
  auto error = compactor->last_error();
  Chat chat = Open(model, compactor, Conversation(4), ModelLimits{16'000, 0, 64});
  const auto before = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(chat.session->CompactToLoop(chat.loop).ok());
  const auto seen = Until(*chat.events, [](const Event& e) {
    return Is<CompactionCommitted>(e) || Is<CompactionRejected>(e);
  });
  const auto* rejected = Find<CompactionRejected>(seen);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->reject_reason, CompactRejectReason::kInvalidSummary);
  ASSERT_EQ(error.wait_for(10s), std::future_status::ready);
  const CompactorError failure = error.get();
  ASSERT_TRUE(failure.invalid_summary.has_value())
      << failure.Message() << (failure.inference ? failure.inference->Message() : "") << "\n"
      << server_->log().substr(server_->log().size() > 3000 ? server_->log().size() - 3000 : 0);
  auto after = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->history, before->history);
  EXPECT_EQ(after->basis, before->basis);
  EXPECT_EQ(after->derived_prefix, 0u);
}

// A small window: the first turn's measurement crosses 80 %, and the loop compacts on its own
// through the real model (with the grammar), then the history is summary + retained tail.
TEST_F(LlamaSuite, AutomaticCompactionInASmallWindow) {
  const ProviderModel model = Provider("openai", true);
  ModelCompactorOptions options;
  options.constrain_output = true;
  // The window puts the first turn's request at about 90 % of the input limit (the estimate
  // counter's own arithmetic), above CompactAt (80 %) and below the hard limit.
  InferenceRequest request;
  request.model = model.model;
  request.messages = Conversation(16);
  request.messages.push_back(UserMessage{{TextBlock{"Go on."}}});
  // The window must hold the summary budget next to the retained tail (else the attempt is
  // RetainedTailTooLarge before any model call).
  const CompactionPolicy policy = Policy(true, 800);
  const TokenCount window =
      EstimateRequestTokens(request) * 10 / 9 + policy.reserved_output + policy.safety_margin;
  Chat chat = Open(model, std::make_shared<ModelCompactor>(model.client, options), Conversation(16),
                   ModelLimits{window, 0, 16}, policy);
  ASSERT_TRUE(chat.session->SubmitInputToLoop(chat.loop, UserMessage{{TextBlock{"Go on."}}}).ok());
  const auto seen = Until(*chat.events, [](const Event& e) {
    return Is<CompactionCommitted>(e) || Is<CompactionRejected>(e) || Is<TurnFailed>(e);
  });
  const auto* committed = Find<CompactionCommitted>(seen);
  const auto* rejected = Find<CompactionRejected>(seen);
  ASSERT_NE(committed, nullptr) << "no automatic compaction; last event "
                                << EventTypeName(seen.back()) << " "
                                << (rejected ? CompactRejectReasonName(rejected->reject_reason)
                                             : std::string_view());
  EXPECT_EQ(committed->reason, CompactionReason::kAutomatic);
  auto snapshot = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->derived_prefix, 1u);
}

// docs/chunked.md against the real server: a span about five times the summarizer's budget is
// summarized in chunks (each journaled), then merged by the same model into one summary that
// passes the strict validator (its weights are random, so coverage is only reported).
TEST_F(LlamaSuite, ASpanFiveTimesTheSummarizersBudgetIsSummarizedInChunks) {
  const ProviderModel model = Provider("openai", true);
  ModelCompactorOptions options;
  options.constrain_output = true;
  std::vector<Message> history = Conversation(60);
  history.push_back(UserMessage{{TextBlock{"Go on."}}});
  TokenCount head = 0;
  for (std::size_t i = 0; i + 1 < history.size(); ++i)
    head += EstimateMessageTokens(history[i]);
  options.input_tokens = head / 5;
  Chat chat = Open(model, std::make_shared<ModelCompactor>(model.client, options),
                   std::move(history), ModelLimits{16'000, 0, 64}, Policy(false, 400));
  ASSERT_TRUE(chat.session->CompactToLoop(chat.loop).ok());
  const auto seen = Until(*chat.events, [](const Event& e) {
    return Is<CompactionCommitted>(e) || Is<CompactionRejected>(e);
  });
  std::size_t chunks = 0;
  for (const Event& e : seen)
    chunks += Is<CompactionChunkSummarized>(e) ? 1 : 0;
  const auto* committed = Find<CompactionCommitted>(seen);
  ASSERT_NE(committed, nullptr) << "rejected: "
                                << CompactRejectReasonName(
                                       Find<CompactionRejected>(seen)->reject_reason);
  EXPECT_GE(chunks, 5u);
  EXPECT_LE(chunks, 7u);
  EXPECT_TRUE(committed->coverage.has_value());
  auto snapshot = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->derived_prefix, 1u);
}

// An interrupt while the answer streams ends the turn promptly: the transfer is aborted, not
// awaited (the answer would take seconds more).
TEST_F(LlamaSuite, InterruptDuringAStreamingCall) {
  std::promise<void> first_delta;
  std::atomic<bool> signalled{false};
  const ProviderModel model = Provider("openai", true, [&](std::string_view) {
    if (!signalled.exchange(true))
      first_delta.set_value();
  });
  auto streaming = first_delta.get_future();
  Chat chat = Open(model, std::make_shared<ModelCompactor>(model.client), {},
                   ModelLimits{16'000, 0, 3'000});
  ASSERT_TRUE(
      chat.session->SubmitInputToLoop(chat.loop, UserMessage{{TextBlock{"Tell a long story"}}})
          .ok());
  ASSERT_EQ(streaming.wait_for(60s), std::future_status::ready);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(chat.session->Interrupt(chat.loop).ok());
  const auto seen = Until(*chat.events, TurnEnded);
  const auto took = std::chrono::steady_clock::now() - asked;
  ASSERT_NE(Find<TurnInterrupted>(seen), nullptr) << EventTypeName(seen.back());
  EXPECT_LT(took, 2s);
  auto snapshot = chat.session->Snapshot(chat.loop);
  ASSERT_TRUE(snapshot.ok());
  // The user's input stays; no partial answer is committed.
  ASSERT_EQ(snapshot->history.size(), 1u);
}

// The CLI end to end on the real server: `harness chat --model openai:tiny` with the base URL
// and key from the environment, two turns, then /compact with the grammar, committed, and the
// journal verifies.
TEST_F(LlamaSuite, ChatWithTheLocalServerCompacts) {
  const std::filesystem::path data =
      std::filesystem::temp_directory_path() / ("harness-llama-chat-" + std::to_string(::getpid()));
  std::filesystem::remove_all(data);
  const e2e::TempFile input("hello\nand then?\n/compact\n/history\n/quit\n");
  const std::string chat =
      "env OPENAI_BASE_URL='" + server_->base_url() + "/v1' OPENAI_API_KEY='" + server_->api_key() +
      "' '" + std::string(::harness::build_paths::HarnessBinary()) + "' chat --model openai:tiny " +
      "--context-window 8192 --max-output-tokens 24 --max-summary-tokens " +
      "700 --keep-recent-segments 1 --constrain-output --data-dir '" + data.string() + "' < " +
      input.quoted() + " 2>&1";
  const e2e::CliRun run = e2e::Shell(chat);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("assistant: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("compact committed: "), std::string::npos) << run.out;
  const e2e::CliRun verify = e2e::Shell("'" + std::string(::harness::build_paths::HarnessBinary()) +
                                        "' journal verify '" + data.string() + "' 2>&1");
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  std::filesystem::remove_all(data);
}

}  // namespace
}  // namespace harness
