// The harness command line. Exit codes shared by every subcommand: 0 success, 1 the input was
// read and is invalid (for `compact`: the runtime failed), 2 bad usage or unreadable input (for
// `count`, also missing tokenizer data); `compact` adds 3, the compaction was rejected; `compact`
// and `chat` end with 128 + the signal on SIGINT, SIGTERM or SIGHUP (130, 143, 129); `serve`
// stops gracefully on them and exits 0.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "commands.h"
#include "settings.h"
#include "signals.h"

int main(int argc, char** argv) {
  CLI::App app{
      "harness: durable, validated context compaction for LLM agent sessions.\n"
      "Every subcommand takes --help."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "show help for every subcommand");
  // The project's version (CMakeLists.txt project(VERSION), docs/install.md).
  app.set_version_flag("--version", "harness " HARNESS_VERSION, "print the version and exit");

  std::string summary_path = "-";
  auto* validate_summary = app.add_subcommand(
      "validate-summary",
      "Check a <conversation_summary> document against the strict grammar.\n"
      "Prints `valid` (exit 0), or `invalid <reason>` and a detail line (exit 1).");
  validate_summary->add_option("FILE", summary_path, "summary file, or - for standard input")
      ->capture_default_str();

  std::string transcript_path = "-";
  auto* validate_transcript = app.add_subcommand(
      "validate-transcript",
      "Check a transcript file (a JSON array of messages in the harness codec).\n"
      "Prints `valid` (exit 0), or `invalid transcript <path>: <rule>` (exit 1).");
  validate_transcript->add_option("FILE", transcript_path, "transcript file, or - for stdin")
      ->capture_default_str();

  const auto journal = harness::cli::AddJournalCommands(app);
  const auto compact = harness::cli::AddCompactCommand(app);
  const auto eval = harness::cli::AddEvalCommand(app);
  const auto count = harness::cli::AddCountCommand(app);
  const auto models = harness::cli::AddModelsCommand(app);
  const auto chat = harness::cli::AddChatCommand(app);
  const auto sessions = harness::cli::AddSessionsCommands(app);
  const auto import_command = harness::cli::AddImportCommand(app);
  const auto serve = harness::cli::AddServeCommand(app);
  const auto config = harness::cli::AddConfigCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "harness: %s\nRun `harness --help` for usage.\n", e.what());
    return harness::cli::kExitUsage;
  }

  // What the command line leaves unset comes from the environment, the config files or the
  // defaults (settings.h).
  std::error_code no_directory;
  auto settings = harness::cli::ApplySettings(app, harness::cli::ProcessEnvironment,
                                              std::filesystem::current_path(no_directory));
  if (!settings.ok()) {
    std::fprintf(stderr, "harness: %s\n", settings.error().c_str());
    return harness::cli::kExitUsage;
  }
  for (const std::string& notice : *settings)
    std::fprintf(stderr, "%s\n", notice.c_str());

  // The commands that run a session handle SIGINT, SIGTERM and SIGHUP (signals.h): blocked here,
  // before any thread starts, so that every thread inherits the block and the command's watch
  // takes them. The others keep the default action (the block is never made for them).
  std::optional<harness::cli::TerminationSignalBlock> signals;
  if (app.got_subcommand("compact") || app.got_subcommand("chat") || app.got_subcommand("serve"))
    signals.emplace();

  // The commands return their failures as values; an exception that still escapes one (a
  // library's std::bad_alloc, say) ends the command with exit 1 and its message, never with
  // std::terminate's abort.
  try {
    if (const auto code = harness::cli::RunJournalCommand(*journal))
      return *code;
    if (const auto code = harness::cli::RunEvalCommand(*eval))
      return *code;
    if (const auto code = harness::cli::RunCompactCommand(*compact))
      return *code;
    if (const auto code = harness::cli::RunCountCommand(*count))
      return *code;
    if (const auto code = harness::cli::RunModelsCommand(*models))
      return *code;
    if (const auto code = harness::cli::RunChatCommand(*chat))
      return *code;
    if (const auto code = harness::cli::RunSessionsCommand(*sessions))
      return *code;
    if (const auto code = harness::cli::RunImportCommand(*import_command))
      return *code;
    if (const auto code = harness::cli::RunServeCommand(*serve))
      return *code;
    if (const auto code = harness::cli::RunConfigCommand(*config))
      return *code;
    if (validate_summary->parsed())
      return harness::cli::ValidateSummaryCommand(summary_path);
    if (validate_transcript->parsed()) {
      return harness::cli::ValidateTranscriptCommand(transcript_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: the command failed: %s\n", e.what());
    return harness::cli::kExitInvalid;
  }
  return harness::cli::kExitUsage;
}
