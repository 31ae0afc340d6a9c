// Tool: something a native loop's model may call during a turn.
//
// Contract: Run(call, stop) executes one call and returns the text the model sees, flagged as
// an error or not. `call` names the call: the turn it belongs to, the model's tool_use id (the
// id the result answers; unique within a turn for the providers, not across turns) and the
// model's raw JSON input; its views live until Run returns. Run may block (it runs on the
// session's blocking pool, never on the loop's actor, and holds one of its workers while it
// blocks) and should return promptly when `stop` is requested: the turn was interrupted, or its
// session is suspending or shutting down; what it returns then is dropped, and the runtime
// answers the call itself (tool_answers.h). A loop runs its calls one at a time, in the order of
// the assistant message. An unknown tool name is answered by the runtime itself with an error
// result. Thread safety: Run may be called concurrently (by different loops).
#pragma once

#include <stop_token>
#include <string>
#include <string_view>

#include "harness/core/uuid.h"
#include "harness/inference/request.h"

namespace harness {

struct ToolOutput {
  std::string text;
  bool is_error = false;
};

// One call of a tool, as Run receives it.
struct ToolCall {
  Uuid turn;                    // the turn that made the call
  std::string_view id;          // the tool_use block's id
  std::string_view input_json;  // the tool_use block's input ("null" when it has none)
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const ToolDefinition& definition() const = 0;
  virtual ToolOutput Run(const ToolCall& call, std::stop_token stop) = 0;
};

}  // namespace harness
