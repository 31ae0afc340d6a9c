// The loop states the decider tests (pin_decider_test.cc, undo_decider_test.cc, ...) decide on:
// built as the reducer would leave them, without a journal.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/runtime/loop_state.h"

namespace harness::runtime_detail::testing {

inline Uuid Id(std::uint8_t n) {
  std::array<std::uint8_t, 16> bytes{};
  bytes[15] = n;
  bytes[6] = 0x70;  // any non-zero id; the deciders never look inside
  return Uuid(bytes);
}

// `n` pins of messages no test names (to fill the pin limit).
inline std::set<Uuid> OtherPins(std::size_t n) {
  std::set<Uuid> pins;
  for (std::size_t i = 0; i < n; ++i) {
    std::array<std::uint8_t, 16> bytes{};
    bytes[6] = 0x70;
    bytes[0] = static_cast<std::uint8_t>(i >> 8);
    bytes[1] = static_cast<std::uint8_t>(i);
    bytes[15] = 0xEE;
    pins.insert(Uuid(bytes));
  }
  return pins;
}

inline Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}
inline Message Reply(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}
inline Message Call(std::string id) {
  return AssistantMessage{{ToolUseBlock{std::move(id), "bash", "{}", {}, {}}}, std::nullopt};
}
inline Message Output(std::string id, std::size_t bytes) {
  return ToolResultMessage{{TextBlock{std::string(bytes, 'o')}}, std::move(id), false};
}

// Two segments: a large tool output (index 2) in the first, the newest segment the retained tail
// under MaskingPolicy(). Message ids are Id(10 + index); the basis is {3, Id(200)}.
inline LoopState StateWith(std::vector<Message> history) {
  LoopState state;
  state.loop = Id(1);
  for (std::size_t i = 0; i < history.size(); ++i)
    state.history_ids.push_back(Id(static_cast<std::uint8_t>(10 + i)));
  state.history = std::move(history);
  state.basis = ContextBasis{3, Id(200)};
  return state;
}
inline LoopState State() {
  return StateWith(
      {User("u1"), Call("c1"), Output("c1", 4000), Reply("a1"), User("u2"), Reply("a2")});
}

inline CompactionPolicy MaskingPolicy() {
  CompactionPolicy policy;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 100'000;
  return policy;
}

inline ContextMeasurement Count(const ContextBasis& basis, TokenCount tokens, TokenCount limit) {
  ContextMeasurement m;
  m.basis = basis;
  m.input_tokens = tokens;
  m.input_limit = limit;
  return m;
}

}  // namespace harness::runtime_detail::testing
