#include "harness/event/event.h"

#include <array>

namespace harness {
namespace {

struct KindInfo {
  std::string_view name;
  EventClass cls;
  IdentityProfile profile;
};

template <std::size_t... I>
constexpr std::array<KindInfo, kEventKindCount> MakeKindTable(std::index_sequence<I...>) {
  return {KindInfo{std::variant_alternative_t<I, Event>::kType,
                   std::variant_alternative_t<I, Event>::kClass,
                   std::variant_alternative_t<I, Event>::kProfile}...};
}

constexpr auto kKinds = MakeKindTable(std::make_index_sequence<kEventKindCount>{});

static_assert(kKindOf<CompactionStarted> == EventKind::kCompactionStarted);
static_assert(kKindOf<TurnInterrupted> == EventKind::kTurnInterrupted);
static_assert(kKinds[static_cast<std::size_t>(EventKind::kMessageCommitted)].name ==
              "MessageCommitted");
static_assert(kKinds[static_cast<std::size_t>(EventKind::kInputQueued)].name == "InputQueued");
static_assert(static_cast<std::size_t>(EventKind::kCompactionChunkSummarized) + 1 ==
              kEventKindCount);

}  // namespace

std::string_view EventKindName(EventKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKinds.size() ? kKinds[i].name : std::string_view();
}

std::optional<EventKind> EventKindFromName(std::string_view name) {
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (kKinds[i].name == name)
      return static_cast<EventKind>(i);
  }
  return std::nullopt;
}

EventClass ClassOf(EventKind kind) {
  return kKinds[static_cast<std::size_t>(kind)].cls;
}

IdentityProfile ProfileOf(EventKind kind) {
  return kKinds[static_cast<std::size_t>(kind)].profile;
}

std::string_view EventTypeName(const Event& event) {
  return std::visit([](const auto& e) { return std::decay_t<decltype(e)>::kType; }, event);
}

bool IsEnduring(const Event& event) {
  return std::visit([](const auto& e) { return kIsEnduring<std::decay_t<decltype(e)>>; }, event);
}

EventScope ScopeOf(const Event& event) {
  return ScopeOf(ProfileOf(KindOf(event)));
}

const EventHeader& HeaderOf(const Event& event) {
  return std::visit([](const auto& e) -> const EventHeader& { return e.header; }, event);
}

EventHeader& HeaderOf(Event& event) {
  return std::visit([](auto& e) -> EventHeader& { return e.header; }, event);
}

std::optional<Uuid> ReplyTo(const Event& event) {
  return std::visit(
      [](const auto& e) -> std::optional<Uuid> {
        if constexpr (kIsReplyEvent<std::decay_t<decltype(e)>>) {
          return e.header.cause.command_id;
        } else {
          return std::nullopt;
        }
      },
      event);
}

Status<InvalidEventError> Validate(const Event& event) {
  return std::visit(
      [](const auto& e) -> Status<InvalidEventError> {
        using E = std::decay_t<decltype(e)>;
        HARNESS_CHECK(ValidateIdentity(E::kType, E::kProfile, e.header));
        return ValidateBody(e);
      },
      event);
}

}  // namespace harness
