// Tool: something a native loop's model may call during a turn.
//
// Contract: Run(input_json, stop) executes one call with the model's raw JSON input and returns
// the text the model sees, flagged as an error or not. It may block (it runs on the session's
// blocking pool, never on the loop's actor) and should return promptly when `stop` is
// requested. An unknown tool name is answered by the runtime itself with an error result.
// Thread safety: Run may be called concurrently.
#pragma once

#include <stop_token>
#include <string>
#include <string_view>

#include "harness/inference/request.h"

namespace harness {

struct ToolOutput {
  std::string text;
  bool is_error = false;
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const ToolDefinition& definition() const = 0;
  virtual ToolOutput Run(std::string_view input_json, std::stop_token stop) = 0;
};

}  // namespace harness
