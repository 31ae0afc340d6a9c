#include "harness/event/revert.h"

#include <cstdint>

#include "event/next_revision.h"

namespace harness {

Status<InvalidEventError> ValidateBody(const HistoryReverted& e) {
  using E = HistoryReverted;
  const auto invalid = [](std::string_view field) {
    return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
  };
  if (e.header.visibility != Visibility::kPublic)
    return invalid("Visibility");
  if (e.reverted_event_id.IsZero())
    return invalid("RevertedEventID");
  if (!e.basis.IsValid())
    return invalid("Basis");
  return event_detail::CheckPostAtNextRevision(e);
}

}  // namespace harness
