#include "harness/event/masking.h"

#include <algorithm>
#include <cstdint>

#include "event/next_revision.h"

namespace harness {
namespace {

template <class E>
Status<InvalidEventError> ValidateMaskChange(const E& e) {
  const auto invalid = [](std::string_view field) {
    return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
  };
  if (e.header.visibility != Visibility::kPublic)
    return invalid("Visibility");
  if (!e.basis.IsValid())
    return invalid("Basis");
  if (e.message_ids.empty() || e.message_ids.size() > kMaxMaskedOutputs)
    return invalid("MessageIDs");
  std::vector<Uuid> sorted = e.message_ids;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front().IsZero() || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return invalid("MessageIDs");
  return event_detail::CheckPostAtNextRevision(e);
}

}  // namespace

Status<InvalidEventError> ValidateBody(const ToolOutputsMasked& event) {
  return ValidateMaskChange(event);
}

Status<InvalidEventError> ValidateBody(const ToolOutputsUnmasked& event) {
  return ValidateMaskChange(event);
}

}  // namespace harness
