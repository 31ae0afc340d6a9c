// Event: the closed union of everything a session reports (architecture: "what happened").
//
// Contract:
// - Every alternative is a plain struct with an EventHeader `header` and three compile-time
//   properties: kType (its wire name), kClass (Ephemeral: published live, never journaled;
//   Enduring: journaled before anyone sees it) and kProfile (its identity profile, which also
//   gives its scope: session or loop). kIsReplyEvent<E> marks the waiter replies, whose
//   header.cause.command_id is the command they answer.
// - EventKind mirrors the variant's alternatives in order (KindOf(event) == event.index()), for
//   filters that name kinds without holding an event. New kinds are added at the end.
// - Validate(event) runs ValidateIdentity (event/header.h) with the type's profile, then the
//   type's body validator (event/compaction.h, context_events.h, lifecycle.h, pins.h, revert.h):
//   identity first, then body, first failure wins.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "harness/event/compaction.h"
#include "harness/event/context_events.h"
#include "harness/event/header.h"
#include "harness/event/lifecycle.h"
#include "harness/event/masking.h"
#include "harness/event/pins.h"
#include "harness/event/revert.h"

namespace harness {

using Event = std::variant<
    CompactionStarted, CompactionCommitted, CompactionRejected, CompactWaiterResolved,
    CompactWaiterRejected, ContextMeasured, ContextPressure, SessionActive, SessionIdle,
    ActiveLoopChanged, LoopCreated, InputAccepted, InputQueued, InputRejected, InputCancelled,
    LoopIdle, LoopExited, TurnStarted, MessageCommitted, TurnCompleted, TurnFailed, TurnInterrupted,
    LoopHistoryContinued, LoopRequestChanged, MessagePinned, MessageUnpinned, HistoryReverted,
    CompactionProposed, ToolOutputsMasked, ToolOutputsUnmasked, CompactionChunkSummarized>;

enum class EventKind : std::uint8_t {
  kCompactionStarted,
  kCompactionCommitted,
  kCompactionRejected,
  kCompactWaiterResolved,
  kCompactWaiterRejected,
  kContextMeasured,
  kContextPressure,
  kSessionActive,
  kSessionIdle,
  kActiveLoopChanged,
  kLoopCreated,
  kInputAccepted,
  kInputQueued,
  kInputRejected,
  kInputCancelled,
  kLoopIdle,
  kLoopExited,
  kTurnStarted,
  kMessageCommitted,
  kTurnCompleted,
  kTurnFailed,
  kTurnInterrupted,
  kLoopHistoryContinued,
  kLoopRequestChanged,
  kMessagePinned,
  kMessageUnpinned,
  kHistoryReverted,
  kCompactionProposed,
  kToolOutputsMasked,
  kToolOutputsUnmasked,
  kCompactionChunkSummarized,
};

inline constexpr std::size_t kEventKindCount = std::variant_size_v<Event>;

template <class E>
inline constexpr bool kIsEnduring = E::kClass == EventClass::kEnduring;

template <class E>
inline constexpr bool kIsReplyEvent = false;
template <>
inline constexpr bool kIsReplyEvent<CompactWaiterResolved> = true;
template <>
inline constexpr bool kIsReplyEvent<CompactWaiterRejected> = true;

template <class E>
inline constexpr EventKind kKindOf = static_cast<EventKind>([
]<std::size_t... I>(std::index_sequence<I...>) {
  return ((std::is_same_v<E, std::variant_alternative_t<I, Event>> ? I : 0) + ...);
}(std::make_index_sequence<kEventKindCount>{}));

inline EventKind KindOf(const Event& event) {
  return static_cast<EventKind>(event.index());
}

// The wire name of the kind ("CompactionCommitted"); "" outside the enum.
std::string_view EventKindName(EventKind kind);
// Exact, case-sensitive; ephemeral names included.
std::optional<EventKind> EventKindFromName(std::string_view name);
EventClass ClassOf(EventKind kind);
IdentityProfile ProfileOf(EventKind kind);

std::string_view EventTypeName(const Event& event);
bool IsEnduring(const Event& event);
EventScope ScopeOf(const Event& event);
const EventHeader& HeaderOf(const Event& event);
EventHeader& HeaderOf(Event& event);
// The command a waiter reply answers; nullopt for every other event.
std::optional<Uuid> ReplyTo(const Event& event);

Status<InvalidEventError> Validate(const Event& event);

}  // namespace harness
