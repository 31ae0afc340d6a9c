#include "serve/client_tools.h"

#include <algorithm>

#include "harness/content/transcript.h"
#include "harness/core/json.h"
#include "harness/event/wire.h"
#include "serve/wire_members.h"

namespace harness::serve {

namespace {

// One client tool of a loop: its Run waits in the loop's box.
class ClientTool final : public Tool {
 public:
  ClientTool(std::shared_ptr<ClientToolBox> box, ToolDefinition definition)
      : box_(std::move(box)), definition_(std::move(definition)) {}
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const ToolCall& call, std::stop_token stop) override {
    return box_->Await(call, stop);
  }

 private:
  std::shared_ptr<ClientToolBox> box_;
  ToolDefinition definition_;
};

ApiError Error(ApiErrorKind kind, std::string detail) {
  return ApiError{kind, std::move(detail)};
}

}  // namespace

ClientToolBox::ClientToolBox(std::vector<ToolDefinition> tools, std::chrono::nanoseconds timeout)
    : tools_(std::move(tools)), timeout_(timeout) {}

std::vector<std::shared_ptr<Tool>> ClientToolBox::MakeTools() {
  std::vector<std::shared_ptr<Tool>> out;
  for (const ToolDefinition& definition : tools_)
    out.push_back(std::make_shared<ClientTool>(shared_from_this(), definition));
  return out;
}

bool ClientToolBox::Has(std::string_view name) const {
  return std::any_of(tools_.begin(), tools_.end(),
                     [&](const ToolDefinition& t) { return t.name == name; });
}

ToolOutput ClientToolBox::Await(const ToolCall& call, const std::stop_token& stop) {
  const Key key{call.turn, std::string(call.id)};
  std::unique_lock lock(mu_);
  // The loop runs one turn at a time: the calls of earlier turns are over.
  std::erase_if(calls_, [&](const auto& entry) { return entry.first.first != call.turn; });
  calls_[key].running = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // Looked up again after each wake-up: the map may have changed meanwhile.
  const bool answered = answered_.wait_until(lock, stop, deadline, [&] {
    auto it = calls_.find(key);
    return it == calls_.end() || it->second.answer.has_value();
  });
  auto it = calls_.find(key);
  if (it == calls_.end())
    return ToolOutput{"the turn ended before the client answered this tool call", true};
  Call& entry = it->second;
  entry.running = false;
  entry.done = true;
  if (answered && entry.answer) {
    ToolOutput output = std::move(*entry.answer);
    entry.answer.reset();
    return output;
  }
  if (stop.stop_requested())
    return ToolOutput{"the turn ended before the client answered this tool call", true};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count();
  const std::string within = ms == 1000       ? std::string("1 second")
                             : ms % 1000 == 0 ? std::to_string(ms / 1000) + " seconds"
                                              : std::to_string(ms) + " ms";
  return ToolOutput{"the client did not answer this tool call within " + within +
                        " (the server's --tool-timeout)",
                    true};
}

std::optional<std::string> ClientToolBox::Answer(const Uuid& turn, std::vector<Reply> results) {
  {
    std::lock_guard lock(mu_);
    for (const Reply& r : results) {
      auto it = calls_.find(Key{turn, r.tool_use_id});
      if (it != calls_.end() && (it->second.done || it->second.answer))
        return r.tool_use_id;
    }
    for (Reply& r : results)
      calls_[Key{turn, r.tool_use_id}].answer = std::move(r.output);
  }
  answered_.notify_all();
  return std::nullopt;
}

ClientToolBox::CallState ClientToolBox::StateOf(const Uuid& turn, const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(Key{turn, id});
  if (it == calls_.end())
    return CallState::kOpen;
  if (it->second.done || it->second.answer)
    return CallState::kAnswered;
  return it->second.running ? CallState::kWaiting : CallState::kOpen;
}

std::vector<ToolUseBlock> OpenCalls(const LoopSnapshot& snapshot) {
  if (!snapshot.turn)
    return {};
  return UnansweredToolCalls(snapshot.history);
}

std::string ToolCallsJson(const LoopSnapshot& snapshot, const ClientToolBox* box) {
  std::string out;
  WireWriter w(out);
  IdOrNull(w.Id("loop_id", snapshot.loop), "turn_id", snapshot.turn).Key("calls");
  out += '[';
  bool first = true;
  if (box != nullptr) {
    for (const ToolUseBlock& use : OpenCalls(snapshot)) {
      if (!box->Has(use.name))
        continue;
      const auto state = box->StateOf(*snapshot.turn, use.id);
      if (state == ClientToolBox::CallState::kAnswered)
        continue;
      if (!first)
        out += ',';
      first = false;
      WireWriter call(out);
      call.String("tool_use_id", use.id).String("name", use.name);
      // The input is the model's raw JSON as the history holds it (validated when committed).
      RawMember(call, "input", use.input.value_or("null"))
          .Bool("waiting", state == ClientToolBox::CallState::kWaiting)
          .Close();
    }
  }
  out += ']';
  w.Close();
  return out;
}

Result<std::string, ApiError> AnswerToolCalls(const LoopSnapshot& snapshot, ClientToolBox* box,
                                              std::vector<ToolResultRequest> results) {
  const std::vector<ToolUseBlock> open = OpenCalls(snapshot);
  std::vector<ClientToolBox::Reply> replies;
  // {"answered":["<tool_use_id>",…]}, in the order of the request.
  std::string answered;
  WireWriter w(answered);
  w.Key("answered").out() += '[';
  for (ToolResultRequest& result : results) {
    const std::string quoted = QuoteForDetail(result.tool_use_id, 64);
    auto call = std::find_if(open.begin(), open.end(),
                             [&](const ToolUseBlock& use) { return use.id == result.tool_use_id; });
    if (call == open.end()) {
      // A call of the history that has its result, or none at all.
      bool seen = false;
      for (const Message& message : snapshot.history) {
        if (const auto* assistant = message.as<AssistantMessage>()) {
          for (const Block& block : assistant->blocks) {
            const auto* use = block.as<ToolUseBlock>();
            seen = seen || (use != nullptr && use->id == result.tool_use_id);
          }
        }
      }
      if (seen) {
        return Fail(Error(ApiErrorKind::kToolCallAnswered,
                          "tool call " + quoted + " already has its result in the history"));
      }
      return Fail(
          Error(ApiErrorKind::kToolCallNotFound, "no tool call " + quoted +
                                                     " waits in this loop's running turn (see GET "
                                                     "…/tool_calls for the calls that do)"));
    }
    if (box == nullptr || !box->Has(call->name)) {
      return Fail(Error(ApiErrorKind::kToolCallNotFound,
                        "tool call " + quoted + " is of " + QuoteForDetail(call->name, 64) +
                            ", which is not a client tool of this loop"));
    }
    if (!replies.empty())
      answered += ',';
    AppendJsonString(answered, result.tool_use_id);
    replies.push_back(ClientToolBox::Reply{std::move(result.tool_use_id),
                                           ToolOutput{std::move(result.content), result.is_error}});
  }
  if (auto already = box->Answer(*snapshot.turn, std::move(replies))) {
    return Fail(Error(ApiErrorKind::kToolCallAnswered,
                      "tool call " + QuoteForDetail(*already, 64) +
                          " already has its result (answered, or its wait ended)"));
  }
  answered += ']';
  w.Close();
  return answered;
}

}  // namespace harness::serve
