// The harness command line. Exit codes shared by every subcommand: 0 success, 1 the input was
// read and is invalid (for `compact`: the runtime failed), 2 bad usage or unreadable input (for
// `count`, also missing tokenizer data); `compact` adds 3, the compaction was rejected; `compact`
// and `chat` end with 128 + the signal on SIGINT, SIGTERM or SIGHUP (130, 143, 129); `serve`
// stops gracefully on them and exits 0. `harness` alone prints the short help on standard error
// and exits 2 (no command is bad usage); `harness help [COMMAND]` and `harness version` are
// --help and --version (docs/cli.md, "Conventions").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "commands.h"
#include "settings.h"
#include "signals.h"

namespace {

// The commands a person starts with, in the order --help and the short help list them.
constexpr std::string_view kMainCommands[] = {"chat", "compact", "serve", "eval", "import"};

constexpr std::string_view kShortHelp =
    "usage: harness COMMAND [OPTIONS]\n"
    "\n"
    "  chat      chat with a model on a durable session (/compact, /undo, /pin, ...)\n"
    "  compact   compact a transcript, or a stored session, and print the summary\n"
    "  serve     the same sessions over HTTP, with a web inspector\n"
    "  eval      measure compaction on a directory of real transcripts\n"
    "  import    turn another agent's session file into a transcript\n"
    "\n"
    "Also: config, count, models, sessions, journal, validate-summary, validate-transcript.\n"
    "`harness help` lists every command, `harness help COMMAND` shows one.\n";

// The edit distance of two short ASCII names (insertions, deletions, substitutions, and
// transpositions of neighbours), for "did you mean".
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

bool IsCommand(CLI::App& app, std::string_view name) {
  return !app.get_subcommands(
                 [name](const CLI::App* command) { return command->get_name() == name; })
              .empty();
}

// The command `word` is closest to, when it is close enough to be a typo of one.
std::optional<std::string> NearestCommand(const CLI::App& app, std::string_view word) {
  // A word far longer than any command is no typo of one (and is not worth the table).
  if (word.size() > 40)
    return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_distance = 3;  // at most two edits
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::string& name = command->get_name();
    // A word a command begins with names the first such command (the main ones come first).
    if (word.size() >= 3 && name.rfind(word, 0) == 0)
      return name;
    const std::size_t distance = EditDistance(word, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

// The parsed command lines of every subcommand.
struct Commands {
  std::shared_ptr<harness::cli::ChatCommandLine> chat;
  std::shared_ptr<harness::cli::CompactCommandLine> compact;
  std::shared_ptr<harness::cli::ServeCommandLine> serve;
  std::shared_ptr<harness::cli::EvalCommandLine> eval;
  std::shared_ptr<harness::cli::ImportCommandLine> import_command;
  std::shared_ptr<harness::cli::CountCommandLine> count;
  std::shared_ptr<harness::cli::ModelsCommandLine> models;
  std::shared_ptr<harness::cli::SessionsCommandLine> sessions;
  std::shared_ptr<harness::cli::JournalCommandLine> journal;
  std::string summary_path = "-";
  CLI::App* validate_summary = nullptr;
  std::string transcript_path = "-";
  CLI::App* validate_transcript = nullptr;
  std::shared_ptr<harness::cli::ConfigCommandLine> config;
};

// Registers every subcommand on `app`, its options bound to `c` (which must outlive the parse).
void AddCommands(CLI::App& app, Commands& c) {
  // --help lists the commands in the order they are added, by group: the main commands first
  // (kMainCommands, the short help's order).
  c.chat = harness::cli::AddChatCommand(app);
  c.compact = harness::cli::AddCompactCommand(app);
  c.serve = harness::cli::AddServeCommand(app);
  c.eval = harness::cli::AddEvalCommand(app);
  c.import_command = harness::cli::AddImportCommand(app);
  c.count = harness::cli::AddCountCommand(app);
  c.models = harness::cli::AddModelsCommand(app);
  c.sessions = harness::cli::AddSessionsCommands(app);
  c.journal = harness::cli::AddJournalCommands(app);
  c.validate_summary = app.add_subcommand(
      "validate-summary",
      "Check a <conversation_summary> document against the strict grammar.\n"
      "Prints `valid` (exit 0), or `invalid <reason>` and a detail line (exit 1).");
  c.validate_summary->add_option("FILE", c.summary_path, "summary file, or - for standard input")
      ->capture_default_str();
  c.validate_transcript = app.add_subcommand(
      "validate-transcript",
      "Check a transcript file (a JSON array of messages in the harness codec).\n"
      "Prints `valid` (exit 0), or `invalid transcript <path>: <rule>` (exit 1).");
  c.validate_transcript->add_option("FILE", c.transcript_path, "transcript file, or - for stdin")
      ->capture_default_str();
  c.config = harness::cli::AddConfigCommand(app);
  for (CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    const bool main_command = std::find(std::begin(kMainCommands), std::end(kMainCommands),
                                        command->get_name()) != std::end(kMainCommands);
    command->group(main_command ? "Main commands" : "Other commands");
  }
}

// What is answered before the command line is parsed: no command (the short help), `version`,
// `help`, an unknown command; nullopt for the rest. `harness help COMMAND [SUBCOMMAND]` is
// `harness COMMAND [SUBCOMMAND] --help`: `args` (argv, to parse) and `help_args` (what it points
// into) are made so.
std::optional<int> BeforeParsing(CLI::App& app, int argc, char** argv,
                                 std::vector<std::string>& help_args, std::vector<char*>& args) {
  if (argc < 2) {
    std::fwrite(kShortHelp.data(), 1, kShortHelp.size(), stderr);
    return harness::cli::kExitUsage;
  }
  const std::string_view first = argv[1];
  if (first == "version") {
    std::printf("harness %s\n", HARNESS_VERSION);
    return harness::cli::kExitOk;
  }
  if (first == "help" && argc == 2) {
    std::fputs(app.help().c_str(), stdout);
    return harness::cli::kExitOk;
  }
  args.assign(argv, argv + argc);
  if (first == "help") {
    help_args.assign(argv + 2, argv + argc);
    help_args.emplace_back("--help");
    args.resize(1);
    for (std::string& arg : help_args)
      args.push_back(arg.data());
  }
  const std::string_view word = args[1];
  if (!word.empty() && word.front() != '-' && !IsCommand(app, word)) {
    // An unknown command is named back only when it is short and printable.
    const bool printable = word.size() <= 40 && std::all_of(word.begin(), word.end(), [](char c) {
                             return c > 0x20 && c < 0x7f;
                           });
    std::fprintf(stderr, "harness: unknown command%s%s%s", printable ? " `" : "",
                 printable ? std::string(word).c_str() : "", printable ? "`" : "");
    if (const auto nearest = NearestCommand(app, word))
      std::fprintf(stderr, "; did you mean `%s`?", nearest->c_str());
    std::fprintf(stderr, "\nRun `harness help` for the commands.\n");
    return harness::cli::kExitUsage;
  }
  return std::nullopt;
}

// The exit code of the command that was parsed.
int RunParsed(const Commands& c) {
  // The commands return their failures as values; an exception that still escapes one (a
  // library's std::bad_alloc, say) ends the command with exit 1 and its message, never with
  // std::terminate's abort.
  try {
    if (const auto code = harness::cli::RunJournalCommand(*c.journal))
      return *code;
    if (const auto code = harness::cli::RunEvalCommand(*c.eval))
      return *code;
    if (const auto code = harness::cli::RunCompactCommand(*c.compact))
      return *code;
    if (const auto code = harness::cli::RunCountCommand(*c.count))
      return *code;
    if (const auto code = harness::cli::RunModelsCommand(*c.models))
      return *code;
    if (const auto code = harness::cli::RunChatCommand(*c.chat))
      return *code;
    if (const auto code = harness::cli::RunSessionsCommand(*c.sessions))
      return *code;
    if (const auto code = harness::cli::RunImportCommand(*c.import_command))
      return *code;
    if (const auto code = harness::cli::RunServeCommand(*c.serve))
      return *code;
    if (const auto code = harness::cli::RunConfigCommand(*c.config))
      return *code;
    if (c.validate_summary->parsed())
      return harness::cli::ValidateSummaryCommand(c.summary_path);
    if (c.validate_transcript->parsed())
      return harness::cli::ValidateTranscriptCommand(c.transcript_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: the command failed: %s\n", e.what());
    return harness::cli::kExitInvalid;
  }
  return harness::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "harness: durable, validated context compaction for LLM agent sessions.\n"
      "Every subcommand takes --help."};
  // Named here, not after the path it was started by, so that help reads the same from
  // `harness help` (before parsing) and `--help`.
  app.name("harness");
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "show help for every subcommand");
  // The project's version (CMakeLists.txt project(VERSION), docs/install.md).
  app.set_version_flag("-V,--version", "harness " HARNESS_VERSION, "print the version and exit");
  Commands commands;
  AddCommands(app, commands);
  std::vector<std::string> help_args;
  std::vector<char*> args;
  if (const auto answered = BeforeParsing(app, argc, argv, help_args, args))
    return *answered;

  try {
    app.parse(static_cast<int>(args.size()), args.data());
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
  return RunParsed(commands);
}
