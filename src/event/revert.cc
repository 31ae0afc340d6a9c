#include "harness/event/revert.h"

#include <cstdint>

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
  if (auto valid = e.post_context.Validate(); !valid.ok())
    return Fail(InvalidEventError{E::kType, "PostContext", FieldRule::kIsInvalid, valid.error()});
  if (e.basis.revision == UINT64_MAX ||
      e.post_context.basis != ContextBasis{e.basis.revision + 1, e.header.event_id}) {
    return invalid("PostContext");
  }
  return {};
}

}  // namespace harness
