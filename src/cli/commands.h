// The subcommands of the harness CLI; each returns the process exit code and writes its verdict
// to standard output, problems with the invocation to standard error.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace harness::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRejected = 3;  // `harness compact`: the compaction was rejected; `harness
                                         // eval`: a required transcript did not commit

int ValidateSummaryCommand(const std::string& path);
int ValidateTranscriptCommand(const std::string& path);

// `harness journal show|verify|bench|compact` (journal_commands.cc): registered on `app` before
// parsing; RunJournalCommand returns the exit code of the one that was parsed, or nullopt.
struct JournalCommandLine;
std::shared_ptr<JournalCommandLine> AddJournalCommands(CLI::App& app);
std::optional<int> RunJournalCommand(const JournalCommandLine& line);

// `harness compact TRANSCRIPT [options]` (compact_command.cc, docs/cli.md): registered on `app`
// before parsing; RunCompactCommand returns its exit code when it was parsed, else nullopt.
struct CompactCommandLine;
std::shared_ptr<CompactCommandLine> AddCompactCommand(CLI::App& app);
std::optional<int> RunCompactCommand(const CompactCommandLine& line);

// `harness eval DIR [options]` (eval_command.cc, docs/eval.md): registered on `app` before
// parsing; RunEvalCommand returns its exit code when it was parsed, else nullopt.
struct EvalCommandLine;
std::shared_ptr<EvalCommandLine> AddEvalCommand(CLI::App& app);
std::optional<int> RunEvalCommand(const EvalCommandLine& line);

// `harness count [FILE|-] [--encoding E | --model openai:MODEL]` (count_command.cc, docs/cli.md):
// registered on `app` before parsing; RunCountCommand returns its exit code when it was parsed,
// else nullopt.
struct CountCommandLine;
std::shared_ptr<CountCommandLine> AddCountCommand(CLI::App& app);
std::optional<int> RunCountCommand(const CountCommandLine& line);

// `harness models` (models_command.cc, docs/models.md): the model catalog, one model a line.
struct ModelsCommandLine;
std::shared_ptr<ModelsCommandLine> AddModelsCommand(CLI::App& app);
std::optional<int> RunModelsCommand(const ModelsCommandLine& line);

// `harness chat --model SPEC [options]` (chat_command.cc, docs/cli.md): registered on `app`
// before parsing; RunChatCommand returns its exit code when it was parsed, else nullopt.
struct ChatCommandLine;
std::shared_ptr<ChatCommandLine> AddChatCommand(CLI::App& app);
std::optional<int> RunChatCommand(const ChatCommandLine& line);

// `harness sessions ls|show` (sessions_command.cc, docs/cli.md): registered on `app` before
// parsing; RunSessionsCommand returns the exit code of the one that was parsed, or nullopt.
struct SessionsCommandLine;
std::shared_ptr<SessionsCommandLine> AddSessionsCommands(CLI::App& app);
std::optional<int> RunSessionsCommand(const SessionsCommandLine& line);

// `harness import --from FORMAT FILE [-o OUT]` (import_command.cc, docs/import.md): registered
// on `app` before parsing; RunImportCommand returns its exit code when it was parsed, else
// nullopt.
struct ImportCommandLine;
std::shared_ptr<ImportCommandLine> AddImportCommand(CLI::App& app);
std::optional<int> RunImportCommand(const ImportCommandLine& line);

// `harness serve [--listen HOST:PORT] [--data-dir DIR | --journal URL] --model NAME=SPEC...`
// (serve_command.cc, docs/serve.md): registered on `app` before parsing; RunServeCommand
// returns its exit code when it was parsed, else nullopt.
struct ServeCommandLine;
std::shared_ptr<ServeCommandLine> AddServeCommand(CLI::App& app);
std::optional<int> RunServeCommand(const ServeCommandLine& line);

// `harness config [--json]` (config_command.cc, docs/cli.md "Config files"): the effective
// settings and where each came from; registered on `app` before parsing (it reads the other
// subcommands' defaults from `app`); RunConfigCommand returns its exit code when it was parsed,
// else nullopt.
struct ConfigCommandLine;
std::shared_ptr<ConfigCommandLine> AddConfigCommand(CLI::App& app);
std::optional<int> RunConfigCommand(const ConfigCommandLine& line);

}  // namespace harness::cli
