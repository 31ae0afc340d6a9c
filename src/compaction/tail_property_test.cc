// Property tests of retained-tail selection and projection over random valid transcripts (some
// taken mid-step, with calls still open): the split loses nothing, never separates a call from
// its result, retains the open step and the current request verbatim, yields a retained list the
// commit event accepts, and the projection keeps the shape of the head. The cap keeps exactly
// 2000 runes of any text.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/compaction/tail.h"
#include "harness/content/user_text.h"

namespace harness {
namespace {

namespace gen = rc::gen;

struct RandomTranscript {
  std::vector<Message> messages;
  std::size_t derived_prefix = 0;
  std::optional<std::size_t> open_step;  // the assistant message whose calls are still open
};

// Text of 0-80 bytes, so that segments differ in their estimates.
std::string SomeText() {
  return std::string(*gen::inRange<std::size_t>(0, 81), *gen::inRange('a', 'z'));
}

// A valid transcript: an optional previous summary, a user message, then any mix of user,
// system and assistant messages, tool calls (ids reused once answered) and their results in any
// order; every call is answered by the end, or (sometimes) the last step's calls stay open with
// some of their results and folded user input after them.
rc::Gen<RandomTranscript> ValidTranscript() {
  return gen::exec([] {
    RandomTranscript out;
    if (*gen::arbitrary<bool>()) {
      out.messages.push_back(UserMessage{{TextBlock{"<conversation_summary/>"}}});
      out.derived_prefix = 1;
    }
    out.messages.push_back(UserMessage{{TextBlock{SomeText()}}});
    std::vector<std::string> outstanding;
    const int steps = *gen::inRange(0, 30);
    for (int step = 0; step < steps; ++step) {
      switch (*gen::inRange(0, 6)) {
        case 0:
          out.messages.push_back(UserMessage{{TextBlock{SomeText()}}});
          break;
        case 1:
          out.messages.push_back(SystemMessage{{TextBlock{SomeText()}}});
          break;
        case 2:
          out.messages.push_back(AssistantMessage{{TextBlock{SomeText()}}, std::nullopt});
          break;
        case 3: {
          AssistantMessage calls;
          const int count = *gen::inRange(1, 3);
          for (int c = 0; c < count; ++c) {
            // Small id space: completed ids come back.
            std::string id = "c";
            id.append(std::to_string(*gen::inRange(0, 6)));
            if (std::find(outstanding.begin(), outstanding.end(), id) != outstanding.end())
              continue;
            calls.blocks.push_back(ToolUseBlock{id, "tool", std::nullopt, {}, {}});
            outstanding.push_back(std::move(id));
          }
          out.messages.push_back(std::move(calls));
          break;
        }
        default:
          if (outstanding.empty())
            break;
          const auto pick = *gen::inRange<std::size_t>(0, outstanding.size());
          out.messages.push_back(
              ToolResultMessage{{TextBlock{SomeText()}}, outstanding[pick], false});
          outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(pick));
          break;
      }
    }
    for (const auto& id : outstanding)
      out.messages.push_back(ToolResultMessage{{}, id, true});
    if (*gen::arbitrary<bool>()) {
      // Taken mid-step: one more step whose calls are partly answered.
      const int count = *gen::inRange(1, 4);
      AssistantMessage calls;
      for (int c = 0; c < count; ++c)
        calls.blocks.push_back(
            ToolUseBlock{"open" + std::to_string(c), "tool", std::nullopt, {}, {}});
      out.messages.push_back(std::move(calls));
      out.open_step = out.messages.size() - 1;
      for (int c = 1; c < count; ++c) {
        if (*gen::arbitrary<bool>())
          out.messages.push_back(ToolResultMessage{{}, "open" + std::to_string(c), false});
      }
      if (*gen::arbitrary<bool>())
        out.messages.push_back(UserMessage{{TextBlock{SomeText()}}});
    }
    return out;
  });
}

// For each tool message, the index of the call it answers (the selection's own pairing rules).
std::map<std::size_t, std::size_t> CallOfResult(const std::vector<Message>& messages) {
  std::map<std::string, std::size_t> open;
  std::map<std::size_t, std::size_t> call_of;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (const auto* a = messages[i].as<AssistantMessage>()) {
      for (const auto& block : a->blocks) {
        if (const auto* call = block.as<ToolUseBlock>())
          open[call->id] = i;
      }
    } else if (const auto* r = messages[i].as<ToolResultMessage>()) {
      call_of[i] = open.at(r->tool_use_id);
      open.erase(r->tool_use_id);
    }
  }
  return call_of;
}

RC_GTEST_PROP(TailPropertyTest, SplitIsLosslessKeepsPairsTheOpenStepAndTheRequest, ()) {
  const RandomTranscript t = *ValidTranscript();
  const auto segments = *gen::inRange<std::int64_t>(1, 6);
  const auto tokens = *gen::inRange<TokenCount>(1, 400);
  const auto selection = SelectRetainedTail(t.messages, t.derived_prefix, segments, tokens);
  RC_CLASSIFY(selection.ok() && selection->inside_segment, "inside a segment");
  RC_CLASSIFY(selection.ok() && !selection->inside_segment, "segment cut");
  RC_CLASSIFY(t.open_step.has_value(), "open step");
  if (!selection.ok()) {
    RC_ASSERT(selection.error().kind == TailErrorKind::kNothingToCompact);
    RC_ASSERT(IsValid(selection.error().reject_detail));
    return;
  }
  const std::size_t cut = selection->head.size();
  RC_ASSERT(cut > t.derived_prefix);
  RC_ASSERT(!selection->retained.empty());
  RC_ASSERT(selection->retained.front().role() == Role::kUser);

  // Lossless: head + retained is the transcript, with an inside cut's request once more.
  std::vector<Message> joined(selection->head.begin(), selection->head.end());
  const std::size_t skip = selection->inside_segment ? 1 : 0;
  joined.insert(joined.end(), selection->retained.begin() + static_cast<std::ptrdiff_t>(skip),
                selection->retained.end());
  RC_ASSERT(joined == t.messages);

  // The retained request is verbatim the user message that opened the cut's segment: the nearest
  // one that starts a segment (a client's notice does not, content/user_text.h; an empty text
  // is one), or the first after the derived prefix.
  if (selection->inside_segment) {
    std::size_t request = cut - 1;
    while (t.messages[request].role() != Role::kUser ||
           (request > t.derived_prefix && !StartsUserSegment(t.messages[request])))
      --request;
    RC_ASSERT(request >= t.derived_prefix);
    RC_ASSERT(selection->retained.front() == t.messages[request]);
    RC_ASSERT(request + 1 < cut);  // at least one message of the segment is summarized
  }
  // Never a call in the head with its result retained; the open step is retained.
  for (const auto& [result, call] : CallOfResult(t.messages))
    RC_ASSERT(!(call < cut && result >= cut));
  if (t.open_step)
    RC_ASSERT(cut <= *t.open_step);
  // What the commit event accepts, whenever the history it comes from obeys the same rule (the
  // generator also makes assistant messages while calls are outstanding, which selection
  // tolerates and the event does not).
  const std::vector<Message> own(t.messages.begin() + static_cast<std::ptrdiff_t>(t.derived_prefix),
                                 t.messages.end());
  // The rule of the payload version the runtime writes (event/compaction.h).
  constexpr std::uint32_t kWrittenVersion = 2;
  RC_CLASSIFY(IsValidRetainedHistory(own, kWrittenVersion), "history obeys the rule");
  if (IsValidRetainedHistory(own, kWrittenVersion))
    RC_ASSERT(IsValidRetainedHistory(selection->retained, kWrittenVersion));
}

RC_GTEST_PROP(TailPropertyTest, ProjectionKeepsMessageCountAndRoles, ()) {
  const RandomTranscript t = *ValidTranscript();
  const auto projected = ProjectForCompaction(t.messages);
  RC_ASSERT(projected.size() == t.messages.size());
  for (std::size_t i = 0; i < projected.size(); ++i) {
    const Message& before = t.messages[i];
    const Message& after = projected[i];
    RC_ASSERT(after.role() == before.role());
    if (before.role() == Role::kTool) {
      RC_ASSERT(after.blocks().size() == (before.blocks().empty() ? 0u : 1u));
      RC_ASSERT(after.as<ToolResultMessage>()->tool_use_id ==
                before.as<ToolResultMessage>()->tool_use_id);
    } else {
      RC_ASSERT(after.blocks().size() == before.blocks().size());
    }
    for (const Block& block : after.blocks())
      RC_ASSERT(block.is<TextBlock>());
  }
}

RC_GTEST_PROP(TailPropertyTest, CapKeepsTheTextOrExactlyTwoThousandRunes, ()) {
  // ASCII runs and invalid bytes, so that bytes equal runes and the count is easy to check.
  const auto length = *gen::inRange<std::size_t>(0, 12'000);
  const char byte = *gen::element('x', '\xFF', '\x80');
  const std::string text(length, byte);
  const std::string capped = CapToolResultText(text);
  if (length <= kToolResultProjectionRunes) {
    RC_ASSERT(capped == text);
  } else {
    RC_ASSERT(capped.size() == kToolResultProjectionRunes);
    RC_ASSERT(capped.find("[tool result truncated for compaction: omitted ") != std::string::npos);
  }
}

}  // namespace
}  // namespace harness
