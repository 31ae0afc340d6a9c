// The session of `harness chat`: its loop made from the command line (a new one, or a stored
// one resumed with what the chat that made it recorded), the session opened or restored from
// the journal with that loop, and the messages of its start and end (docs/cli.md has the
// behaviour and its proofs).
//
// Contract:
// - MakeChatLoop(line, spec, prompt, streaming, saved): the loop's definition and context from
//   the flags and a model spec; `saved` (chat_loop_settings.h) applies where the command line is
//   silent. The chat model's answer streams to streaming.on_text after the events before its
//   call are shown (ShownBeforeCall); a model compactor's progress to
//   streaming.compaction_progress. NewChatLoop: a new session's loop, with --history loaded
//   (its leading system messages lifted into the system prompt) and checked before anything is
//   opened, so that bad usage writes nothing.
// - OpenChatSession: a new session, or the stored one restored (checked with PreviewRestore
//   before its lease is taken, so a run that cannot go on fences off no live writer); its
//   refusals are printed, and the result is the exit code then. StartChatLoop: the new loop
//   created, or the resumed session's active loop with its system prompt brought up to date.
//   ShowResumed prints what the restore did and starts the queued input.
// - ResumeCommand: the command line that resumes the session, as it can be run; FaultedMessage:
//   the one message of a chat whose session faulted, with the resume that works.
// Thread safety: each function on the chat's main thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "chat_console.h"
#include "chat_loop_settings.h"
#include "chat_options.h"
#include "chat_view.h"
#include "harness/inference/client.h"
#include "harness/runtime/session.h"
#include "journal_factory.h"
#include "policy_defaults.h"

namespace harness::cli {

// Where the chat's model streams its answer, and what orders it after the events before it.
struct ChatStreaming {
  TextDeltaSink on_text;
  ShownBeforeCall& shown;
  // The progress of a model compactor whose model `spec` names: the sink its text streams to.
  std::function<TextDeltaSink(const std::string& spec)> compaction_progress;
};

// A loop definition made from the command line's flags and a model spec; the context
// (limits, policy, counter) it was made with is kept for /context.
struct ChatLoop {
  LoopDefinition definition;
  LoopContext context;
  std::string model_spec;     // the --model it was made with
  ChatLoopSettings recorded;  // what the chat recorded of it (or would have, for an old loop)
};

Result<ChatLoop, std::string> MakeChatLoop(const ChatCommandLine& line,
                                           const std::string& model_spec, std::string system_prompt,
                                           const ChatStreaming& streaming,
                                           const std::optional<ChatLoopSettings>& saved = {});
Result<ChatLoop, std::string> NewChatLoop(const ChatCommandLine& line, const ChatStart& start,
                                          const ChatStreaming& streaming);

// `resumed` is set to the resumed loop's ChatLoop (its definition as the restore made it).
Result<std::unique_ptr<Session>, int> OpenChatSession(const ChatCommandLine& line,
                                                      const ChatStart& start, Journal& journal,
                                                      SessionOptions options,
                                                      const ChatStreaming& streaming,
                                                      std::optional<ChatLoop>& resumed);
// `made`: the new loop, or null for a resumed session, which `resumed` becomes.
Result<Uuid, int> StartChatLoop(Session& session, const ChatStart& start,
                                std::optional<ChatLoop>& made, std::optional<ChatLoop>& resumed);
Status<int> ShowResumed(Session& session, const Uuid& loop, ChatConsole& console, ChatView& view,
                        Outstanding& outstanding);
// --history: what was loaded, counted now, so that /context can answer before any turn.
std::optional<LoadedCount> ShowLoadedHistory(ChatConsole& console, const ChatLoop& made);
// Whose variables a failure's hint names: the chat model's, or the compactor's own model.
std::string CompactorProvider(const ChatCommandLine& line, const std::string& provider);

std::string ResumeCommand(const JournalStore& store, const Uuid& session,
                          const std::string& model_spec);
std::string FaultedMessage(const Uuid& session, const std::optional<JournalError>& release_failure,
                           std::int64_t lease_ttl_seconds);

}  // namespace harness::cli
