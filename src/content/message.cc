#include "harness/content/message.h"

namespace harness {

const std::vector<Block>& Message::blocks() const {
  return std::visit([](const auto& m) -> const std::vector<Block>& { return m.blocks; }, value);
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kSystem:
      return "system";
    case Role::kTool:
      return "tool";
  }
  return "unknown";
}

}  // namespace harness
