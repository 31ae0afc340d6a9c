#include "serve/journaled_command.h"

#include <string_view>
#include <utility>
#include <variant>

#include "harness/command/command.h"
#include "harness/event/codec.h"
#include "harness/event/json.h"

namespace harness::serve {

namespace {

bool IsReplyType(std::string_view type) {
  return type == CompactWaiterResolved::kType || type == CompactWaiterRejected::kType ||
         type == InputAccepted::kType || type == InputRejected::kType ||
         type == InputCancelled::kType;
}

}  // namespace

std::optional<Uuid> AnsweredCommand(const Event& event) {
  if (auto to = ReplyTo(event))
    return to;
  if (std::holds_alternative<InputAccepted>(event) ||
      std::holds_alternative<InputRejected>(event) ||
      std::holds_alternative<InputCancelled>(event)) {
    const Uuid& id = HeaderOf(event).cause.command_id;
    if (!id.IsZero())
      return id;
  }
  return std::nullopt;
}

Status<ApiError> ReadJournaledCommand(Journal& journal, const Uuid& session, const Uuid& command,
                                      JournaledCommand& so_far) {
  using State = JournaledCommand::State;
  while (so_far.state != State::kAnswered) {
    auto page = journal.Read(session, so_far.read_through + 1, kJournalCommandPage);
    if (!page.ok()) {
      return Fail(ApiError{ApiErrorKind::kJournal,
                           "the session's journal cannot be read: " + page.error().Describe()});
    }
    for (const JournalRecord& record : *page) {
      so_far.read_through = record.seq;
      if (so_far.state == State::kUnknown) {
        // A reply follows its intent: the runtime journals the intent before the loop sees the
        // command. Nothing before it needs decoding.
        if (record.kind == RecordKind::kCommand && record.record_id == command &&
            (record.type == Compact::kType || record.type == SubmitInput::kType))
          so_far.state = State::kPending;
        continue;
      }
      if (record.kind != RecordKind::kEvent || !IsReplyType(record.type))
        continue;
      auto event = DecodeEvent(record.payload);
      if (!event.ok()) {
        return Fail(ApiError{
            ApiErrorKind::kRestoreRefused,
            "record " + std::to_string(record.seq) +
                " of the session's journal does not decode: " + DescribeEventError(event.error())});
      }
      if (AnsweredCommand(*event) == command) {
        so_far.state = State::kAnswered;
        so_far.reply = EventJson(*event);
        return {};
      }
    }
    if (page->size() < kJournalCommandPage)
      return {};
  }
  return {};
}

}  // namespace harness::serve
