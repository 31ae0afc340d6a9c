#include "system_prompt.h"

#include "harness/event/lifecycle.h"
#include "input.h"

namespace harness::cli {

void SystemPromptFlags::Register(CLI::App& command) {
  text_option = command.add_option("--system", text, "the loop's system prompt");
  file_option = command.add_option("--system-file", file,
                                   "read the loop's system prompt from this file (- for stdin)");
  text_option->excludes(file_option);
}

Result<std::optional<std::string>, std::string> SystemPromptFlags::Given() const {
  if (text_option != nullptr && text_option->count() > 0)
    return std::optional<std::string>(text);
  if (file_option == nullptr || file_option->count() == 0)
    return std::optional<std::string>();
  auto read = ReadInput(file, kMaxSystemPromptBytes);
  if (!read.ok())
    return Fail("--system-file: " + read.error().message);
  return std::optional<std::string>(std::move(*read));
}

Result<bool, std::string> ResumeSystemPrompt(Session& session, const Uuid& loop,
                                             const std::optional<std::string>& wanted,
                                             const std::string& journaled) {
  if (!wanted || *wanted == journaled)
    return false;
  auto changed = session.ChangeLoopRequest(loop, LoopRequestChange{*wanted});
  if (!changed.ok())
    return Fail(changed.error().Message());
  return true;
}

}  // namespace harness::cli
