// The chat completions wire as the end-to-end tests' OpenAI-compatible servers see and answer it
// (a test_support::ScriptedHttpServer with a responder): the compaction input a model
// compactor's request carries, and answers streamed or whole as the request asked.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "support/scripted_http_server.h"

namespace harness::e2e {

using test_support::ScriptedReply;

// The text of the last user message of an OpenAI request body: the string, or the first text
// part (a model compactor's request has two: the input wire, then the anchors to keep).
inline std::optional<std::string> LastUserText(const Json& body) {
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array())
    return std::nullopt;
  const Json& messages = body["messages"];
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->is_object() && it->value("role", "") == "user") {
      const Json content = it->value("content", Json());
      if (content.is_string())
        return content.get<std::string>();
      if (content.is_array() && !content.empty() && content[0].is_object() &&
          content[0].value("type", "") == "text" && content[0].contains("text") &&
          content[0]["text"].is_string()) {
        return content[0]["text"].get<std::string>();
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

inline std::optional<Json> ParseBody(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    return std::nullopt;
  return parsed;
}

inline std::string SseChunk(const Json& delta, const Json& finish) {
  Json chunk = {
      {"choices", Json::array({Json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
  return "data: " + chunk.dump() + "\n\n";
}

// Usage as the wire reports it: about 4 bytes a token (the compactor requires output tokens,
// and the envelope's must stay within --max-summary-tokens).
inline Json UsageOf(std::size_t prompt_bytes, std::size_t answer_bytes) {
  const std::size_t prompt = prompt_bytes / 4 + 1, completion = answer_bytes / 4 + 1;
  return Json{{"prompt_tokens", prompt},
              {"completion_tokens", completion},
              {"total_tokens", prompt + completion}};
}

// A whole answer, streamed or not as the request asked: `text`, or a tool call with that id.
inline ScriptedReply AnswerReply(bool stream, const std::string& text,
                                 const std::optional<std::string>& tool_call_id,
                                 std::size_t prompt_bytes) {
  const Json usage = UsageOf(prompt_bytes, text.size() + (tool_call_id ? 40 : 0));
  if (stream) {
    std::vector<std::string> chunks;
    if (tool_call_id) {
      chunks.push_back(SseChunk(
          Json{{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls",
                Json::array({Json{{"index", 0},
                                  {"id", *tool_call_id},
                                  {"type", "function"},
                                  {"function", Json{{"name", "lookup"}, {"arguments", "{}"}}}}})}},
          "tool_calls"));
    } else {
      const std::size_t half = text.size() / 2;
      chunks.push_back(
          SseChunk(Json{{"role", "assistant"}, {"content", text.substr(0, half)}}, nullptr));
      chunks.push_back(SseChunk(Json{{"content", text.substr(half)}}, "stop"));
    }
    chunks.push_back("data: " + Json{{"choices", Json::array()}, {"usage", usage}}.dump() + "\n\n");
    chunks.push_back("data: [DONE]\n\n");
    return ScriptedReply::Sse(std::move(chunks));
  }
  Json message = {{"role", "assistant"}, {"content", text}};
  std::string finish = "stop";
  if (tool_call_id) {
    message["content"] = nullptr;
    message["tool_calls"] =
        Json::array({Json{{"id", *tool_call_id},
                          {"type", "function"},
                          {"function", Json{{"name", "lookup"}, {"arguments", "{}"}}}}});
    finish = "tool_calls";
  }
  Json body = {
      {"id", "chatcmpl-crash"},
      {"object", "chat.completion"},
      {"choices",
       Json::array({Json{{"index", 0}, {"message", message}, {"finish_reason", finish}}})}};
  ScriptedReply reply;
  reply.body = body.dump();
  return reply;
}

}  // namespace harness::e2e
