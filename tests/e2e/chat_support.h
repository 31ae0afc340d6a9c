// What the `harness chat` end-to-end tests share: scripts for the scripted model, a temporary
// data directory, the command line of a chat, and the journal check after it.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "harness/core/json.h"
#include "journal_process.h"
#include "support/build_paths.h"

namespace harness::chat_e2e {

// A summary that passes the grammar, and one that misses <decisions> (xml_structure).
inline constexpr char kValidSummary[] =
    "<conversation_summary><goal>Say hello.</goal><constraints>Be brief.</constraints>"
    "<decisions>Answer in English.</decisions><state>Greeted.</state><open_items>None."
    "</open_items></conversation_summary>";
inline constexpr char kSummaryWithoutDecisions[] =
    "<conversation_summary><goal>Say hello.</goal><constraints></constraints><state>Greeted."
    "</state><open_items></open_items></conversation_summary>";

// One script step: a plain answer, or a summary envelope (optionally after a delay).
inline std::string Answer(const std::string& text) {
  std::string step = "{\"raw\":";
  AppendJsonString(step, text);
  return step.append("}");
}
// An answer streamed in pieces of at most `bytes` bytes, `gap_ms` apart (docs/scripted.md).
inline std::string StreamedAnswer(const std::string& text, int bytes, int gap_ms = 0) {
  std::string step = "{\"raw\":";
  AppendJsonString(step, text);
  return step.append(",\"stream\":{\"bytes\":")
      .append(std::to_string(bytes))
      .append(",\"gap_ms\":")
      .append(std::to_string(gap_ms))
      .append("}}");
}
inline std::string Summary(const std::string& xml, int delay_ms = 0) {
  std::string step = "{\"summary\":";
  AppendJsonString(step, xml);
  if (delay_ms > 0)
    step.append(",\"delay_ms\":").append(std::to_string(delay_ms));
  return step.append("}");
}

class ChatDir {
 public:
  std::string data() const { return (dir_.path() / "data").string(); }

  // Writes the steps as a script file and returns its path.
  std::string Script(const std::vector<std::string>& steps) {
    std::string json = "[";
    for (std::size_t i = 0; i < steps.size(); ++i)
      json.append(i == 0 ? "" : ",").append(steps[i]);
    json.append("]");
    return Write("script-" + std::to_string(files_++) + ".json", json);
  }

  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = (dir_.path() / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  // `harness chat --model scripted:SCRIPT --data-dir DATA EXTRA…`, single-quoted for a shell.
  std::string ChatCommand(const std::string& script, const std::string& extra = "") const {
    std::string command = "'";
    command.append(::harness::build_paths::HarnessBinary())
        .append("' chat --model 'scripted:")
        .append(script)
        .append("' --data-dir '")
        .append(data())
        .append("'");
    if (!extra.empty())
      command.append(" ").append(extra);
    return command;
  }

  // `harness journal verify` on the data directory: exit 0 and an "ok …" line.
  bool JournalVerifies() const {
    const auto verify = journal_e2e::Harness({"journal", "verify", data()});
    return verify.exit_code == 0 && verify.lines.size() == 1 &&
           verify.lines[0].rfind("ok ", 0) == 0;
  }

  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  journal_e2e::TempDir dir_;
  int files_ = 0;
};

}  // namespace harness::chat_e2e
