// Every wire example in docs/events.md is real: each line of a ```json block that starts with
// {"type": decodes (as an event, or else as a command) and re-encodes to itself byte for byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include "harness/command/codec.h"
#include "harness/event/codec.h"

namespace harness {
namespace {

TEST(EventsDoc, EveryWireExampleDecodesAndReencodesToItself) {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  if (root == nullptr)
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  std::ifstream in(std::filesystem::path(root) / "docs/events.md");
  ASSERT_TRUE(in.good());
  std::string line;
  bool in_json = false;
  int events = 0;
  int commands = 0;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_json = !in_json && line == "```json";
      continue;
    }
    if (!in_json || line.rfind(R"({"type":)", 0) != 0)
      continue;
    auto event = DecodeEvent(line);
    if (event.ok()) {
      auto encoded = EncodeEvent(*event);
      ASSERT_TRUE(encoded.ok()) << line;
      EXPECT_EQ(*encoded, line);
      ++events;
      continue;
    }
    ASSERT_TRUE(std::holds_alternative<UnknownEventTypeError>(event.error()))
        << line << "\n"
        << DescribeEventError(event.error());
    auto command = DecodeCommand(line);
    ASSERT_TRUE(command.ok()) << line << "\n"
                              << (command.ok() ? "" : DescribeCommandError(command.error()));
    auto encoded = EncodeCommand(*command);
    ASSERT_TRUE(encoded.ok()) << line;
    EXPECT_EQ(*encoded, line);
    ++commands;
  }
  EXPECT_GE(events, 19);
  EXPECT_GE(commands, 4);
}

}  // namespace
}  // namespace harness
