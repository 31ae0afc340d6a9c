// `harness import --from FORMAT FILE [-o OUT]`: another agent's session file as a harness
// transcript (docs/import.md).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "commands.h"
#include "harness/content/codec.h"
#include "harness/import/import.h"
#include "input.h"
#include "terminal_text.h"

namespace harness::cli {

struct ImportCommandLine {
  CLI::App* command = nullptr;
  std::string from;
  std::string path = "-";
  std::string output = "-";
};

namespace {

// The same limit as every transcript the CLI reads, so that what import writes, the other
// commands read.
constexpr std::size_t kMaxImportBytes = TranscriptLimits{}.max_bytes;

// "312 messages from 540 records; dropped: 120 × line type "progress", …"
std::string ReportLine(const ImportedTranscript& imported) {
  std::string line = std::to_string(imported.transcript.size()) + " messages from " +
                     std::to_string(imported.report.records) + " records";
  if (imported.report.results_added != 0) {
    line.append("; ")
        .append(std::to_string(imported.report.results_added))
        .append(" error results added for calls the source never answered");
  }
  const char* separator = "; dropped: ";
  for (const auto& [what, count] : imported.report.dropped) {
    line.append(separator).append(std::to_string(count)).append(" ").append(what);
    separator = ", ";
  }
  return line;
}

int Run(const ImportCommandLine& line) {
  const std::optional<ImportFormat> format = ImportFormatFromName(line.from);
  if (!format) {  // CLI11 checks the name; this keeps the two lists honest
    std::fputs("harness import: unknown --from format\n", stderr);
    return kExitUsage;
  }
  auto input = ReadInput(line.path, kMaxImportBytes);
  if (!input.ok()) {
    std::fprintf(stderr, "harness import: %s\n", TerminalText(input.error().message).c_str());
    return kExitUsage;
  }
  const std::string format_name(ImportFormatName(*format));
  auto imported = ImportTranscript(*format, *input);
  if (!imported.ok()) {
    const ImportError& error = imported.error();
    std::fprintf(stderr, "harness import: not an importable %s file: %s\nerror kind: %s\n",
                 format_name.c_str(), TerminalText(error.Describe()).c_str(),
                 std::string(ImportErrorKindName(error.kind)).c_str());
    return kExitInvalid;
  }
  input->clear();
  input->shrink_to_fit();
  auto encoded = EncodeTranscript(imported->transcript);
  if (!encoded.ok()) {  // the importer validates every message; kept as a typed refusal
    std::fprintf(stderr, "harness import: the imported transcript is not valid: %s\n",
                 TerminalText(encoded.error().Describe()).c_str());
    return kExitInvalid;
  }
  if (encoded->size() > kMaxImportBytes) {
    std::fprintf(stderr,
                 "harness import: the transcript would be %zu bytes, more than the %zu bytes a "
                 "transcript may have; import a shorter part of the session\n",
                 encoded->size(), kMaxImportBytes);
    return kExitInvalid;
  }
  encoded->push_back('\n');
  std::string problem;
  if (!WriteOutput(line.output, *encoded, ".import-tmp", problem)) {
    std::fprintf(stderr, "harness import: %s\n", TerminalText(problem).c_str());
    return kExitUsage;
  }
  std::fprintf(stderr, "harness import: %s: %s\n", format_name.c_str(),
               TerminalText(ReportLine(*imported)).c_str());
  return kExitOk;
}

}  // namespace

std::shared_ptr<ImportCommandLine> AddImportCommand(CLI::App& app) {
  auto line = std::make_shared<ImportCommandLine>();
  line->command = app.add_subcommand(
      "import",
      "Convert another agent's session file into a harness transcript (docs/import.md):\n"
      "Claude Code session JSONL, Codex rollout JSONL, an OpenHands trajectory, a SWE-agent\n"
      ".traj, a Gemini CLI saved chat or session recording, or a Cline / Roo Code\n"
      "api_conversation_history.json. Writes the transcript to standard output or -o OUT and one "
      "line on stderr saying\n"
      "what was read and dropped (exit 0); 1 the file is not of that format (the line, the\n"
      "JSONPath and why on stderr); 2 bad usage, an unreadable input, one over 64 MiB, or an\n"
      "output that cannot be written.");
  auto* c = line->command;
  c->add_option("--from", line->from, "the source format")
      ->required()
      ->check(CLI::IsMember({"claude-code", "codex", "openhands", "swe-agent", "gemini", "cline"}));
  c->add_option("FILE", line->path, "the session file, or - for standard input")
      ->capture_default_str();
  c->add_option("-o,--output", line->output, "where to write the transcript (- for stdout)")
      ->capture_default_str();
  return line;
}

std::optional<int> RunImportCommand(const ImportCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
