// Smoke test of the real local model server the end-to-end tests use (docs/local-model.md):
// llama-server built by scripts/llama-server, serving the tiny random-weight model, answers
// the OpenAI and Anthropic wires with usage, enforces its API key, and obeys a GBNF grammar.
// These tests fail, never skip, when the server is missing: CI builds it first.
#include "llama_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli_support.h"
#include "core/internal/json_dom.h"

namespace harness::e2e {
namespace {

struct HttpReply {
  long status = 0;  // 0: no HTTP answer
  std::string body;
};

size_t Append(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// POST `body` as JSON (or GET when `body` is empty) with extra `headers`.
HttpReply Request(const std::string& url, const std::vector<std::string>& headers,
                  const std::string& body = "") {
  HttpReply reply;
  CURL* curl = curl_easy_init();
  if (curl == nullptr)
    return reply;
  curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& h : headers)
    list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 60000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (curl_easy_perform(curl) == CURLE_OK)
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return reply;
}

Json Parse(const std::string& body) {
  auto parsed = ParseStrictJson(body);
  EXPECT_TRUE(parsed.ok()) << body;
  return parsed.ok() ? std::move(parsed).value() : Json();
}

class LlamaServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = LlamaServer::Start();
    ASSERT_TRUE(started.ok()) << started.error();
    server_ = std::move(started).value();
  }

  std::string Url(const std::string& path) const {
    std::string url = server_->base_url();
    url.append(path);
    return url;
  }
  std::string Bearer() const {
    std::string header = "Authorization: Bearer ";
    header.append(server_->api_key());
    return header;
  }
  HttpReply Chat(const Json& request, const std::vector<std::string>& headers) const {
    return Request(Url("/v1/chat/completions"), headers, request.dump());
  }

  std::unique_ptr<LlamaServer> server_;
};

const Json kHello = Json::array({{{"role", "user"}, {"content", "Hello there"}}});

TEST_F(LlamaServerTest, HealthIsOkWithoutTheKey) {
  const HttpReply reply = Request(Url("/health"), {});
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Parse(reply.body).value("status", ""), "ok");
}

TEST_F(LlamaServerTest, ChatCompletionWithTheKeyReportsUsage) {
  const HttpReply reply =
      Chat({{"messages", kHello}, {"max_tokens", 8}, {"temperature", 0}}, {Bearer()});
  ASSERT_EQ(reply.status, 200) << reply.body << server_->log();
  const Json answer = Parse(reply.body);
  EXPECT_EQ(answer.value("object", ""), "chat.completion");
  ASSERT_TRUE(answer["choices"].is_array() && answer["choices"].size() == 1) << reply.body;
  EXPECT_TRUE(answer["choices"][0]["message"]["content"].is_string()) << reply.body;
  const Json& usage = answer["usage"];
  ASSERT_TRUE(usage.is_object()) << reply.body;
  const int prompt = usage.value("prompt_tokens", -1);
  const int completion = usage.value("completion_tokens", -1);
  EXPECT_GT(prompt, 0);
  EXPECT_GT(completion, 0);
  EXPECT_LE(completion, 8);
  EXPECT_EQ(usage.value("total_tokens", -1), prompt + completion);
}

TEST_F(LlamaServerTest, ChatCompletionWithoutTheRightKeyIs401) {
  const Json request = {{"messages", kHello}, {"max_tokens", 4}};
  EXPECT_EQ(Chat(request, {}).status, 401);
  EXPECT_EQ(Chat(request, {"Authorization: Bearer not-the-key"}).status, 401);
}

TEST_F(LlamaServerTest, GrammarForcesTheSummaryShape) {
  // Random weights produce noise; the grammar alone makes it well-formed.
  const std::string grammar =
      "root ::= \"<summary>\" txt \"</summary>\"\ntxt ::= [a-zA-Z ,.]{1,40}\n";
  const HttpReply reply = Chat({{"messages", kHello},
                                {"max_tokens", 200},
                                {"temperature", 0.8},
                                {"seed", 7},
                                {"grammar", grammar}},
                               {Bearer()});
  ASSERT_EQ(reply.status, 200) << reply.body << server_->log();
  const Json answer = Parse(reply.body);
  const std::string content = answer["choices"][0]["message"].value("content", "");
  // <summary>[a-zA-Z ,.]{1,40}</summary>, checked by hand: g++ 12's <regex> trips a false
  // -Wmaybe-uninitialized in the sanitizer build.
  constexpr std::string_view kOpen = "<summary>";
  constexpr std::string_view kClose = "</summary>";
  ASSERT_GE(content.size(), kOpen.size() + kClose.size() + 1) << content;
  EXPECT_EQ(content.substr(0, kOpen.size()), kOpen) << content;
  EXPECT_EQ(content.substr(content.size() - kClose.size()), kClose) << content;
  const std::string text =
      content.substr(kOpen.size(), content.size() - kOpen.size() - kClose.size());
  EXPECT_LE(text.size(), 40u) << content;
  EXPECT_TRUE(std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ' || c == ',' || c == '.';
  })) << content;
  EXPECT_EQ(answer["choices"][0].value("finish_reason", ""), "stop");
}

TEST_F(LlamaServerTest, AnthropicMessagesReturnsAMessage) {
  const Json request = {
      {"model", "tiny"}, {"max_tokens", 8}, {"system", "Summarize."}, {"messages", kHello}};
  std::string key = "x-api-key: ";
  key.append(server_->api_key());
  const HttpReply reply =
      Request(Url("/v1/messages"), {key, "anthropic-version: 2023-06-01"}, request.dump());
  ASSERT_EQ(reply.status, 200) << reply.body << server_->log();
  const Json message = Parse(reply.body);
  EXPECT_EQ(message.value("type", ""), "message");
  EXPECT_EQ(message.value("role", ""), "assistant");
  ASSERT_TRUE(message["content"].is_array() && !message["content"].empty()) << reply.body;
  EXPECT_EQ(message["content"][0].value("type", ""), "text");
  EXPECT_GT(message["usage"].value("input_tokens", -1), 0);
  EXPECT_GT(message["usage"].value("output_tokens", -1), 0);

  const HttpReply unauthorized =
      Request(Url("/v1/messages"), {"anthropic-version: 2023-06-01"}, request.dump());
  EXPECT_EQ(unauthorized.status, 401);
}

TEST_F(LlamaServerTest, TwoServersRunSideBySideOnTheirOwnPortsAndKeys) {
  auto second = LlamaServer::Start();
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_NE((*second)->port(), server_->port());
  EXPECT_NE((*second)->api_key(), server_->api_key());
  EXPECT_EQ(Request(Url("/health"), {}).status, 200);
  std::string health = (*second)->base_url();
  health.append("/health");
  EXPECT_EQ(Request(health, {}).status, 200);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// The generator's output is a function of its input alone: running it again reproduces the
// served model byte for byte.
TEST(TinyModelTest, TheGeneratorReproducesTheServedModel) {
  const char* dir_variable = std::getenv("HARNESS_LLAMA_DIR");
  ASSERT_TRUE(dir_variable != nullptr && *dir_variable != '\0')
      << "HARNESS_LLAMA_DIR is not set: run scripts/llama-server";
  const std::filesystem::path dir = dir_variable;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "harness-tiny-model-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path out = std::filesystem::path(pattern) / "again.gguf";
  std::string command = "'";
  command.append((dir / "tiny-model").string())
      .append("' '")
      .append((dir / "src/models/ggml-vocab-gpt-2.gguf").string())
      .append("' '")
      .append(out.string())
      .append("' 2>&1");
  const CliRun run = Shell(command);
  const std::string again = ReadFile(out);
  std::filesystem::remove_all(pattern);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string served = ReadFile(dir / "tiny-gpt2.gguf");
  EXPECT_GT(served.size(), 1000000u);
  EXPECT_TRUE(again == served) << "the regenerated model differs from the served one";
}

TEST(TinyModelTest, TheGeneratorRefusesAFileThatIsNotGguf) {
  const char* dir_variable = std::getenv("HARNESS_LLAMA_DIR");
  ASSERT_TRUE(dir_variable != nullptr && *dir_variable != '\0');
  TempFile not_gguf("this is not a GGUF file");
  std::string command = "'";
  command.append((std::filesystem::path(dir_variable) / "tiny-model").string())
      .append("' ")
      .append(not_gguf.quoted())
      .append(" /dev/null 2>&1");
  const CliRun run = Shell(command);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("cannot read"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace harness::e2e
