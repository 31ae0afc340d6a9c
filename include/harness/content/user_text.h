// What a user-role message is: words a person wrote, or text a client put in the user's turn.
//
// Agents' clients write much into the user's turn that no person typed: reminders, the output of
// a local command ("/exit", "!ls"), an interruption marker, the environment, a project's
// instruction file, or the summary of an earlier context. A compactor that reads these as the
// user's requests fills its goal with them, and a tail that counts them as the start of a user's
// segment keeps them instead of the work they follow. This is the one place that tells them
// apart, by the markers the clients write (docs/spec/user-text.md has the rule and every marker).
//
// Contract:
// - ReadUserText(text) classifies one text block. Spans a client embeds inside a person's words
//   (`<system-reminder>…</system-reminder>` and the other notice elements of the spec) are
//   removed first; an unclosed one runs to the end. What remains decides:
//   * nothing but white space, a local command without arguments (`<command-name>/exit…`), an
//     interruption or caveat marker → kNotice, words empty;
//   * another agent's summary of earlier work (its continuation summary; harness's own is the
//     derived prefix, read by the grammar, not here) → kCarriedSummary, words the whole text;
//   * a project instruction file a client read to the model → kProjectInstructions, words the
//     whole text;
//   * anything else → kRequest, words the remaining text trimmed (a slash command with
//     arguments is "/name arguments").
// - ReadUserMessage(message) reads every text block of a user message and joins the words of
//   the blocks of the strongest kind (request > carried summary > project instructions >
//   notice) with a blank line. A user message with no text block, or whose text is all notices
//   but which carries an image, a sound or a document, is a request: a person sent it.
//   A message of another role is a notice.
// - StartsUserSegment(message): a user message that is not a notice. Notices belong to the
//   segment before them.
// - Pure, total functions of their input: no allocation beyond the result, linear in the text.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/content/message.h"

namespace harness {

enum class UserTextKind : std::uint8_t {
  kNotice = 0,               // text a client added; no person wrote it
  kProjectInstructions = 1,  // a project's instruction file (AGENTS.md and the like)
  kCarriedSummary = 2,       // a summary of the work before this context
  kRequest = 3,              // words a person wrote to the agent
};

struct UserText {
  UserTextKind kind = UserTextKind::kNotice;
  std::string words;
};

UserText ReadUserText(std::string_view text);
UserText ReadUserMessage(const Message& message);
bool StartsUserSegment(const Message& message);

// "notice", "project_instructions", "carried_summary", "request".
std::string_view UserTextKindName(UserTextKind kind);

}  // namespace harness
