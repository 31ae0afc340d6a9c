// Tools that run on the client of `harness serve` (docs/serve.md "Client tools").
//
// Contract:
// - ClientToolBox holds the client tools of one loop and the state of their calls, each keyed
//   by the call's turn and tool_use id. MakeTools() gives the loop's Tool objects; each Run
//   returns the client's answer to its call, or an error result when `timeout` passes first
//   (counted from the start of Run), or when the turn's stop is requested (the turn ended: the
//   runtime drops that result and answers the call itself).
// - Answer(turn, results) gives the client's results, all or none: it refuses (naming the id)
//   when one of the calls already has its result (answered, timed out or stopped). A result may
//   come before its call runs (the loop runs a message's calls one at a time): Run takes it.
//   Whether a call is open at all is the caller's to check against the loop's history
//   (OpenCalls): the box only knows calls that ran or were answered.
// - A Run holds its blocking-pool worker while it waits; it never waits past `timeout`.
// - The calls of earlier turns are forgotten when a call of a later turn runs.
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/content/message.h"
#include "harness/runtime/session.h"
#include "harness/runtime/tool.h"
#include "serve/api.h"

namespace harness::serve {

class ClientToolBox : public std::enable_shared_from_this<ClientToolBox> {
 public:
  ClientToolBox(std::vector<ToolDefinition> tools, std::chrono::nanoseconds timeout);

  std::vector<std::shared_ptr<Tool>> MakeTools();
  bool Has(std::string_view name) const;

  // Waits for the answer to `call` (ClientTool::Run).
  ToolOutput Await(const ToolCall& call, const std::stop_token& stop);

  struct Reply {
    std::string tool_use_id;
    ToolOutput output;
  };
  // The id of a call that already has its result (nothing is applied then), else nullopt.
  std::optional<std::string> Answer(const Uuid& turn, std::vector<Reply> results);

  enum class CallState { kOpen, kWaiting, kAnswered };
  CallState StateOf(const Uuid& turn, const std::string& id) const;

 private:
  struct Call {
    bool running = false;              // its Run waits
    bool done = false;                 // Run returned: answered, timed out or stopped
    std::optional<ToolOutput> answer;  // the client's, not yet taken
  };
  using Key = std::pair<Uuid, std::string>;

  const std::vector<ToolDefinition> tools_;
  const std::chrono::nanoseconds timeout_;
  mutable std::mutex mu_;
  std::condition_variable_any answered_;
  std::map<Key, Call> calls_;
};

// The tool calls of `snapshot`'s running turn that no result answers yet: the tool_use blocks of
// the history's last assistant message without a later tool_result. Empty when no turn runs.
std::vector<ToolUseBlock> OpenCalls(const LoopSnapshot& snapshot);

// GET …/tool_calls: {"loop_id","turn_id"|null,"calls":[{"tool_use_id","name","input",
// "waiting"}]}: the open calls of the box's tools that the client has not answered.
std::string ToolCallsJson(const LoopSnapshot& snapshot, const ClientToolBox* box);

// POST …/tool_results: checks each result against the loop's open calls (kToolCallNotFound: no
// such call of a client tool; kToolCallAnswered: it has its result), then answers them all.
// Returns {"answered":["id",…]}.
Result<std::string, ApiError> AnswerToolCalls(const LoopSnapshot& snapshot, ClientToolBox* box,
                                              std::vector<ToolResultRequest> results);

}  // namespace harness::serve
