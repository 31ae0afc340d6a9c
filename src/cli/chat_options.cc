// The flags of `harness chat` and what a chat reads of them before it opens anything
// (chat_options.h).
#include "chat_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "arguments.h"
#include "commands.h"
#include "harness/event/lifecycle.h"
#include "number_option.h"
#include "terminal_text.h"

namespace harness::cli {

Result<ChatStart, std::string> ReadChatStart(const ChatCommandLine& line) {
  ChatStart start;
  start.resume = !line.session.empty();
  if (!start.resume && line.model.empty())
    return Fail(std::string("--model is required for a new session"));
  if (start.resume && !line.history.empty())
    return Fail(
        std::string("--history starts a new session; a resumed one (--session) has its history"));
  if (start.resume) {
    HARNESS_TRY(start.session_id, ParseSessionId(line.session, "--session"));
  }
  HARNESS_TRY(start.store, StoreFromOptions(line.data_dir, line.journal));
  HARNESS_TRY(start.system_prompt, line.system.Given());
  return start;
}

bool Given(const ChatCommandLine& line, const char* flag) {
  const CLI::Option* option = line.command->get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}

// Whether the command line sets anything the compaction policy is made of.
bool PolicyFlagsGiven(const ChatCommandLine& line) {
  for (const char* flag :
       {"--keep-recent-segments", "--keep-recent-tokens", "--max-summary-tokens", "--coverage",
        "--context-window", "--max-output-tokens", "--no-auto-compact", "--no-mask"}) {
    if (Given(line, flag))
      return true;
  }
  return false;
}

int ChatUsage(std::string_view message) {
  std::fprintf(stderr, "harness chat: %s\n", TerminalText(message).c_str());
  return kExitUsage;
}

std::shared_ptr<ChatCommandLine> AddChatCommand(CLI::App& app) {
  auto line = std::make_shared<ChatCommandLine>();
  line->command = app.add_subcommand(
      "chat",
      "Chat with a model on a new session in the data directory (or resume one with\n"
      "--session). Each line is a message; /compact compacts now (/compact preview shows the\n"
      "summary first: /approve installs it, /discard drops it), /context shows the occupancy\n"
      "and what a compaction would keep, /history lists the loop's messages, /pin N keeps one\n"
      "verbatim, /undo reverts the last compaction or masking, /mask replaces old tool output\n"
      "with stubs (/output N shows an original, /unmask [N] puts it back), /quit (or end of\n"
      "input) suspends the session: --session resumes it.\n"
      "Exit 0 after a clean end; 2 bad usage; 1 the runtime failed, or (input from a pipe or a\n"
      "file) the last turn failed.");
  auto* c = line->command;
  c->add_option("--model", line->model,
                "scripted:PATH (a scripted model), or PROVIDER:MODEL; with --session it may be "
                "omitted for an openai or anthropic loop");
  c->add_option("--compactor", line->compactor,
                "model (the chat model), extractive (offline), scripted:PATH or PROVIDER:MODEL")
      ->capture_default_str();
  RegisterStoreOptions(*c, line->data_dir, line->journal);
  c->add_option("--history", line->history,
                "start the new session's loop from this transcript file (what `harness import` "
                "writes), to go on with another agent's session");
  c->add_option("--session", line->session,
                "resume this session (restored from the journal) instead of starting one");
  c->add_flag("--take-over", line->take_over,
              "with --session: take the session's lease even if another writer holds it (that "
              "writer is fenced off)");
  AddNumberOption(*c, "--lease-ttl", line->lease_ttl_seconds, {1, 3600},
                  "seconds the session's lease lasts without renewal (renewed at a third)");
  AddNumberOption(*c, "--max-steps", line->max_steps, {1, kMaxStepsPerTurn},
                  "model calls one turn may make (each tool round trip is one) before the turn "
                  "fails with step_limit");
  AddNumberOption(*c, "--snapshot-interval", line->snapshot_interval, {0, 1'000'000},
                  "records between two snapshots of the session's state in the journal, which a "
                  "resume starts from (0: none; a resume then reads the whole journal)");
  line->system.Register(*c);
  line->context.Register(*c);
  c->add_flag("--no-auto-compact", line->no_auto_compact,
              "never compact on its own (measure and show pressure only)");
  c->add_flag("--no-mask", line->no_mask,
              "automatic compaction summarizes at once, without masking old tool output first");
  c->add_flag("--constrain-output", line->constrain_output,
              "send the model compactor's GBNF grammar of the summary envelope with its request "
              "(for llama.cpp servers; the Anthropic client drops it, OpenAI's API refuses it)");
  return line;
}

}  // namespace harness::cli
