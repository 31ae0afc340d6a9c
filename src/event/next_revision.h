// The PostContext rule of the events that install a new basis revision (HistoryReverted,
// ToolOutputsMasked, ToolOutputsUnmasked): a valid measurement at {basis.revision + 1, the
// event's own id}; a basis at the last revision has no successor. Private to the event module.
#pragma once

#include <cstdint>

#include "harness/context/basis.h"
#include "harness/core/result.h"
#include "harness/event/header.h"

namespace harness::event_detail {

template <class E>
Status<InvalidEventError> CheckPostAtNextRevision(const E& e) {
  if (auto valid = e.post_context.Validate(); !valid.ok())
    return Fail(InvalidEventError{E::kType, "PostContext", FieldRule::kIsInvalid, valid.error()});
  if (e.basis.revision == UINT64_MAX ||
      e.post_context.basis != ContextBasis{e.basis.revision + 1, e.header.event_id}) {
    return Fail(InvalidEventError{E::kType, "PostContext", FieldRule::kIsInvalid, std::nullopt});
  }
  return {};
}

}  // namespace harness::event_detail
