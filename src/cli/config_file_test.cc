#include "config_file.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::cli {
namespace {

TEST(ConfigFile, EveryKindOfValueIsReadAsItsFlagWouldBeGiven) {
  auto file = ParseConfigFile(
      "model = \"openai:gpt-4o\"\n"
      "data_dir = \"caf\\u00e9\"\n"
      "context_window = 32768\n"
      "[policy]\n"
      "keep_recent_segments = 3\n"
      "coverage = \"enforce:0.9\"\n"
      "auto_compact = false\n"
      "constrain_output = true\n"
      "[serve]\n"
      "models = [\"main=openai:gpt-4o\", \"small=openai:gpt-4o-mini\"]\n",
      "/p/.harness.toml");
  ASSERT_TRUE(file.ok()) << file.error().Message();
  EXPECT_EQ(file->values.at("model").values, std::vector<std::string>{"openai:gpt-4o"});
  EXPECT_EQ(file->values.at("model").line, 1u);
  // A relative data directory is the file's directory's.
  EXPECT_EQ(file->values.at("data_dir").values, std::vector<std::string>{"/p/caf\xc3\xa9"});
  EXPECT_EQ(file->values.at("context_window").values, std::vector<std::string>{"32768"});
  EXPECT_EQ(file->values.at("policy.keep_recent_segments").values, std::vector<std::string>{"3"});
  EXPECT_EQ(file->values.at("policy.keep_recent_segments").line, 5u);
  EXPECT_FALSE(file->values.at("policy.auto_compact").boolean);
  EXPECT_TRUE(file->values.at("policy.constrain_output").boolean);
  EXPECT_EQ(file->values.at("serve.models").values,
            (std::vector<std::string>{"main=openai:gpt-4o", "small=openai:gpt-4o-mini"}));
  EXPECT_EQ(FindSetting("policy.auto_compact")->flag, "--no-auto-compact");
}

TEST(ConfigFile, BadConfigNamesTheFileTheLineAndTheKey) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"model = \"a\"\n[policy]\nkeep_recent_segments = \"three\"\n",
       "/c.toml:3: policy.keep_recent_segments: must be an integer"},
      {"modle = \"a\"\n", "/c.toml:1: modle: unknown key; the known ones are model, compactor, "},
      {"[policy]\nwindow = 3\n",
       "/c.toml:2: policy.window: unknown key; the known ones of "
       "[policy] are keep_recent_segments, "},
      {"[server]\nlisten = \"x\"\n", "/c.toml:1: server: unknown key"},
      {"policy = 3\n", "/c.toml:1: policy: must be a table ([policy])"},
      {"[policy]\nauto_compact = \"no\"\n",
       "/c.toml:2: policy.auto_compact: must be true or false"},
      {"[serve]\nmodels = [\"a\", 3]\n", "/c.toml:2: serve.models: must be an array of strings"},
      {"model = \n", "/c.toml:1: not valid TOML: "},
      {"a = 1\na = 2\n", "/c.toml:2: not valid TOML: "},
      // Found by the fuzz target: toml++ quotes the line end it saw; the message stays one line.
      {"[policy]\nauto_compact = t\n",
       "/c.toml:2: not valid TOML: Error while parsing boolean: "
       "expected 'true', saw 't\\x0a'"},
      {"\"\\u001b[31m\" = 1\n", "/c.toml:1: \\x1b[31m: unknown key"},
      {"[\rserve]\n", "/c.toml:1: not valid TOML: a control character (byte 13)"},
      {"model = \"a\"\n# \x01\n", "/c.toml:2: not valid TOML: a control character (byte 1)"},
      // Found by the fuzz target: inputs that break preconditions toml++ 3.3 asserts.
      {"[ =s [erve]\nli", "/c.toml:1: not valid TOML: "},
      {"a = [[[[}\n", "/c.toml:1: not valid TOML: "},
      // Found by the fuzz target: toml++ 3.3 takes U+FEBF for white space undefinedly.
      {"a = [\xef\xba\xbf[ [\xef\xbb\xbf}\n",
       "/c.toml:1: not ASCII: write other characters in a string as \\uXXXX escapes"},
      {"model = 1\ndata_dir = \"caf\xc3\xa9\"\n",
       "/c.toml:2: not ASCII: write other characters in a string as \\uXXXX escapes"},
  };
  for (const Case& c : cases) {
    auto file = ParseConfigFile(c.text, "/c.toml");
    ASSERT_FALSE(file.ok()) << c.text;
    EXPECT_EQ(file.error().Message().rfind(c.message, 0), 0u) << c.text << "\n"
                                                              << file.error().Message();
  }
}

TEST(ConfigFile, AnEmptyFileSetsNothing) {
  auto file = ParseConfigFile("# nothing yet\n", "/c.toml");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->values.empty());
}

}  // namespace
}  // namespace harness::cli
