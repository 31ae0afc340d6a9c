// Properties of the durable event codec: every valid enduring event of every kind round-trips
// exactly (decode(encode(e)) == e and the encoding is a fixed point), and any mutation of a valid
// encoding decodes to an event or to one of the typed errors, never anything else.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/core/chars.h"
#include "harness/event/codec.h"

namespace harness {
namespace {

// ---------------------------------------------------------------------------------------------
// Generators of valid values

rc::Gen<Uuid> NonZeroId() {
  return rc::gen::exec([] {
    Uuid::Bytes bytes{};
    for (auto& b : bytes)
      b = *rc::gen::arbitrary<std::uint8_t>();
    bytes[15] |= 1;
    return Uuid(bytes);
  });
}

rc::Gen<Uuid> MaybeId() {
  return rc::gen::exec([] { return *rc::gen::inRange(0, 3) == 0 ? *NonZeroId() : Uuid(); });
}

rc::Gen<EventTime> Time() {
  return rc::gen::exec([] {
    std::int64_t ns = *rc::gen::arbitrary<std::int64_t>();
    if (ns == 0)
      ns = 1;
    return EventTime(std::chrono::nanoseconds(ns));
  });
}

// Valid UTF-8 of up to 12 code points, control characters and quotes included.
rc::Gen<std::string> Utf8() {
  return rc::gen::exec([] {
    std::string out;
    const int n = *rc::gen::inRange(0, 13);
    for (int i = 0; i < n; ++i) {
      const auto cp = *rc::gen::oneOf(rc::gen::inRange<std::uint32_t>(0, 0x80),
                                      rc::gen::element<std::uint32_t>('"', '\\', 0x7F),
                                      rc::gen::inRange<std::uint32_t>(0x80, 0x800),
                                      rc::gen::inRange<std::uint32_t>(0x800, 0xD800),
                                      rc::gen::inRange<std::uint32_t>(0xE000, 0x10000),
                                      rc::gen::inRange<std::uint32_t>(0x10000, 0x110000));
      AppendUtf8(out, cp);
    }
    return out;
  });
}

rc::Gen<std::optional<std::string>> Bytes() {
  return rc::gen::exec([]() -> std::optional<std::string> {
    if (*rc::gen::inRange(0, 3) == 0)
      return std::nullopt;
    std::string out;
    const int n = *rc::gen::inRange(0, 10);
    for (int i = 0; i < n; ++i)
      out.push_back(static_cast<char>(*rc::gen::arbitrary<std::uint8_t>()));
    return out;
  });
}

// Raw JSON already in the form the decoder writes back (compact, DOM-stable).
rc::Gen<std::optional<std::string>> RawJson() {
  return rc::gen::exec([]() -> std::optional<std::string> {
    if (*rc::gen::inRange(0, 3) == 0)
      return std::nullopt;
    return *rc::gen::element<std::string>("{}", "[]", R"({"path":"/tmp","n":3})",
                                          R"([1,-2,"x",true,false,null])", R"("text")", "0", "-7",
                                          R"({"a":{"b":[{}]}})", "1.5");
  });
}

rc::Gen<Block> LeafBlock() {
  return rc::gen::exec([]() -> Block {
    switch (*rc::gen::inRange(0, 7)) {
      case 0:
        return TextBlock{*Utf8()};
      case 1:
        return RefusalBlock{*Utf8()};
      case 2:
        return ImageBlock{*Utf8(), *Utf8(), *Bytes()};
      case 3:
        return AudioBlock{*Utf8(), *Bytes()};
      case 4:
        return DocumentBlock{*Utf8(), *Utf8(), *Bytes(), *Utf8()};
      case 5:
        return ThinkingBlock{*Utf8(), *Utf8(), *Utf8(), *RawJson(), *Utf8()};
      default:
        return ToolUseBlock{*Utf8(), *Utf8(), *RawJson(), *RawJson(), *Utf8()};
    }
  });
}

rc::Gen<std::vector<Block>> Blocks(int depth) {
  return rc::gen::exec([depth] {
    std::vector<Block> blocks;
    const int n = *rc::gen::inRange(0, 3);
    for (int i = 0; i < n; ++i) {
      if (depth > 0 && *rc::gen::inRange(0, 4) == 0) {
        blocks.push_back(ToolResultBlock{*Utf8(), *Blocks(depth - 1), *rc::gen::arbitrary<bool>()});
      } else {
        blocks.push_back(*LeafBlock());
      }
    }
    return blocks;
  });
}

// Assistant messages carry no top-level tool_use (retained histories add their calls).
rc::Gen<std::vector<Block>> BlocksWithoutCalls() {
  return rc::gen::exec([] {
    auto blocks = *Blocks(2);
    std::erase_if(blocks, [](const Block& b) { return b.is<ToolUseBlock>(); });
    return blocks;
  });
}

rc::Gen<std::optional<Usage>> MaybeUsage() {
  return rc::gen::exec([]() -> std::optional<Usage> {
    if (*rc::gen::arbitrary<bool>())
      return std::nullopt;
    return Usage{*rc::gen::arbitrary<std::uint64_t>(), *rc::gen::arbitrary<std::uint64_t>(),
                 *rc::gen::arbitrary<std::uint64_t>(), *rc::gen::arbitrary<std::uint64_t>(),
                 *rc::gen::arbitrary<std::uint64_t>()};
  });
}

rc::Gen<Message> AnyMessage() {
  return rc::gen::exec([]() -> Message {
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        return UserMessage{*Blocks(2)};
      case 1:
        return AssistantMessage{*Blocks(2), *MaybeUsage()};
      case 2:
        return SystemMessage{*Blocks(2)};
      default:
        return ToolResultMessage{*Blocks(2), *Utf8(), *rc::gen::arbitrary<bool>()};
    }
  });
}

// A history that obeys the retained-history rule: a user anchor, then segments of assistant
// calls answered in any order, with folded user input and prose in between.
rc::Gen<std::vector<Message>> RetainedHistory() {
  return rc::gen::exec([] {
    std::vector<Message> out;
    if (*rc::gen::inRange(0, 4) == 0)
      return out;
    out.push_back(UserMessage{*Blocks(2)});
    const int segments = *rc::gen::inRange(0, 4);
    for (int s = 0; s < segments; ++s) {
      switch (*rc::gen::inRange(0, 3)) {
        case 0:
          out.push_back(UserMessage{*Blocks(1)});
          break;
        case 1:
          out.push_back(SystemMessage{*Blocks(1)});
          break;
        default: {
          AssistantMessage call{*BlocksWithoutCalls(), *MaybeUsage()};
          std::vector<std::string> ids;
          const int n = *rc::gen::inRange(0, 4);
          for (int i = 0; i < n; ++i) {
            ids.push_back(std::string("call_").append(
                std::to_string(i)));  // reused across segments on purpose
            call.blocks.push_back(ToolUseBlock{ids.back(), *Utf8(), *RawJson(), {}, ""});
          }
          out.push_back(std::move(call));
          const auto order = *rc::gen::unique<std::vector<int>>(
              static_cast<std::size_t>(n), rc::gen::inRange(0, std::max(n, 1)));
          for (int i : order) {
            if (*rc::gen::inRange(0, 4) == 0)
              out.push_back(UserMessage{*Blocks(0)});  // folded input
            out.push_back(ToolResultMessage{*Blocks(2), ids[static_cast<std::size_t>(i)],
                                            *rc::gen::arbitrary<bool>()});
          }
        }
      }
    }
    return out;
  });
}

EventHeader Header(IdentityProfile profile) {
  EventHeader h;
  h.session_id = *NonZeroId();
  if (profile != IdentityProfile::kSession)
    h.loop_id = *NonZeroId();
  if (profile == IdentityProfile::kTurn) {
    h.turn_id = *NonZeroId();
    h.step_id = *MaybeId();
  }
  h.event_id = *NonZeroId();
  h.created_at = *Time();
  h.cause =
      Cause{*MaybeId(), *MaybeId(), *MaybeId(), *MaybeId(),
            *MaybeId(), *MaybeId(), *MaybeId(), *rc::gen::element(Agency::kMachine, Agency::kUser)};
  return h;
}

template <class E>
E WithHeader() {
  E e{};
  e.header = Header(E::kProfile);
  return e;
}

// A non-empty string: `prefix` followed by arbitrary UTF-8 (built with append, not operator+,
// which trips g++ 12's false -Wrestrict at -O3).
std::string Prefixed(char prefix) {
  std::string out(1, prefix);
  out.append(*Utf8());
  return out;
}

ModelKey Model() {
  return ModelKey{Prefixed('p'), Prefixed('m')};
}

ContextBasis Basis() {
  return ContextBasis{*rc::gen::inRange<std::uint64_t>(1, UINT64_MAX), *NonZeroId()};
}

ContextMeasurement Measurement(ContextBasis basis) {
  Sha256Digest digest{};
  for (auto& b : digest)
    b = *rc::gen::arbitrary<std::uint8_t>();
  digest[0] |= 1;
  return ContextMeasurement{
      basis,
      Model(),
      Fingerprint(digest),
      *rc::gen::arbitrary<std::uint64_t>(),
      *rc::gen::inRange<std::uint64_t>(1, UINT64_MAX),
      *rc::gen::element(CountQuality::kExactProvider, CountQuality::kExactLocal,
                        CountQuality::kHeuristicEstimate)};
}

std::vector<Uuid> Waiters() {
  return *rc::gen::unique<std::vector<Uuid>>(static_cast<std::size_t>(*rc::gen::inRange(1, 6)),
                                             NonZeroId());
}

CompactionReason Reason() {
  return *rc::gen::element(CompactionReason::kManual, CompactionReason::kAutomatic);
}

CompactRejectReason RejectReason() {
  return static_cast<CompactRejectReason>(*rc::gen::inRange(1, 16));
}

std::chrono::nanoseconds Duration() {
  return std::chrono::nanoseconds(*rc::gen::inRange<std::int64_t>(0, INT64_MAX));
}

template <class Enum>
Enum EnumIn(int first, int last) {
  return static_cast<Enum>(*rc::gen::inRange(first, last + 1));
}

// A TurnFailed body: any reason, with the measurement its reason may carry, or none.
void FailureBody(TurnFailed& e) {
  e.reason = EnumIn<TurnFailReason>(1, 10);
  const bool measured = *rc::gen::arbitrary<bool>();
  const bool sized = e.reason == TurnFailReason::kContextLimit ||
                     e.reason == TurnFailReason::kCoverageInsufficient ||
                     e.reason == TurnFailReason::kPinnedTooLarge ||
                     e.reason == TurnFailReason::kSummaryTooLarge;
  if (measured && sized) {
    const auto limit = *rc::gen::inRange<TokenCount>(1, 2'000'000);
    e.context = TurnFailedContext{limit + *rc::gen::inRange<TokenCount>(0, 1000), limit};
  }
  if (measured && e.reason == TurnFailReason::kStepLimit) {
    const auto limit = *rc::gen::inRange<std::uint64_t>(1, kMaxStepsPerTurn + 1);
    e.steps = TurnFailedSteps{limit, limit};
  }
}

// One valid enduring event of the given kind.
// check-sizes: one case of a switch for each enduring kind, which the compiler checks is whole.
Event EnduringEvent(EventKind kind) {
  switch (kind) {
    case EventKind::kCompactionCommitted: {
      auto e = WithHeader<CompactionCommitted>();
      e.attempt_id = *NonZeroId();
      e.waiter_command_ids = Waiters();
      e.reason = Reason();
      e.basis = ContextBasis{*rc::gen::inRange<std::uint64_t>(1, UINT64_MAX - 1), *NonZeroId()};
      e.summary = UserMessage{{TextBlock{Prefixed('s')}}};
      e.retained = *RetainedHistory();
      e.post_context = Measurement(ContextBasis{e.basis.revision + 1, e.header.event_id});
      e.duration = Duration();
      // Pinned: a run of plain messages (a whole step or none), each with a distinct id.
      const int pinned = *rc::gen::inRange(0, 3);
      for (int i = 0; i < pinned; ++i)
        e.pinned.push_back(
            PinnedMessage{*NonZeroId(), Message{UserMessage{{TextBlock{Prefixed('p')}}}}});
      return e;
    }
    case EventKind::kCompactionRejected: {
      auto e = WithHeader<CompactionRejected>();
      e.attempt_id = *NonZeroId();
      e.waiter_command_ids = Waiters();
      e.reason = Reason();
      e.basis = Basis();
      e.reject_reason = RejectReason();
      e.duration = Duration();
      return e;
    }
    case EventKind::kCompactWaiterResolved: {
      EventHeader terminal = Header(IdentityProfile::kLoop);
      auto e = MakeWaiterResolved(terminal, *NonZeroId(), *NonZeroId(),
                                  *rc::gen::element(Agency::kMachine, Agency::kUser), *NonZeroId());
      e.header.created_at = *Time();
      return e;
    }
    case EventKind::kCompactWaiterRejected: {
      EventHeader terminal = Header(IdentityProfile::kLoop);
      auto e =
          MakeWaiterRejected(terminal, *NonZeroId(), *NonZeroId(),
                             *rc::gen::element(Agency::kMachine, Agency::kUser), RejectReason());
      e.header.created_at = *Time();
      return e;
    }
    case EventKind::kContextMeasured: {
      auto e = WithHeader<ContextMeasured>();
      e.measurement = Measurement(Basis());
      return e;
    }
    case EventKind::kSessionActive:
      return WithHeader<SessionActive>();
    case EventKind::kSessionIdle:
      return WithHeader<SessionIdle>();
    case EventKind::kActiveLoopChanged: {
      auto e = WithHeader<ActiveLoopChanged>();
      e.active_loop_id = *NonZeroId();
      return e;
    }
    case EventKind::kLoopCreated: {
      auto e = WithHeader<LoopCreated>();
      e.kind = EnumIn<LoopKind>(1, 2);
      e.model = Model();
      e.compaction_policy = e.kind == LoopKind::kNative && *rc::gen::arbitrary<bool>();
      e.system_prompt = *Utf8();
      const int n = *rc::gen::inRange(0, 5);
      for (int i = 0; i < n; ++i)
        e.history.push_back(*AnyMessage());
      e.continued_history = *rc::gen::element<std::uint64_t>(0, 0, 1, kMaxHistoryMessages);
      e.max_steps_per_turn = *rc::gen::element(std::uint64_t{kDefaultMaxStepsPerTurn},
                                               std::uint64_t{kDefaultMaxStepsPerTurn},
                                               std::uint64_t{1}, std::uint64_t{kMaxStepsPerTurn});
      return e;
    }
    case EventKind::kLoopHistoryContinued: {
      auto e = WithHeader<LoopHistoryContinued>();
      const int n = *rc::gen::inRange(1, 5);
      for (int i = 0; i < n; ++i)
        e.history.push_back(*AnyMessage());
      return e;
    }
    case EventKind::kLoopRequestChanged: {
      auto e = WithHeader<LoopRequestChanged>();
      e.system_prompt = *Utf8();
      return e;
    }
    case EventKind::kMessagePinned: {
      auto e = WithHeader<MessagePinned>();
      e.message_id = *NonZeroId();
      return e;
    }
    case EventKind::kMessageUnpinned: {
      auto e = WithHeader<MessageUnpinned>();
      e.message_id = *NonZeroId();
      return e;
    }
    case EventKind::kHistoryReverted: {
      auto e = WithHeader<HistoryReverted>();
      e.reverted_event_id = *NonZeroId();
      e.basis = ContextBasis{*rc::gen::inRange<std::uint64_t>(1, UINT64_MAX - 1), *NonZeroId()};
      e.post_context = Measurement(ContextBasis{e.basis.revision + 1, e.header.event_id});
      return e;
    }
    case EventKind::kToolOutputsMasked:
    case EventKind::kToolOutputsUnmasked: {
      ContextBasis basis{*rc::gen::inRange<std::uint64_t>(1, UINT64_MAX - 1), *NonZeroId()};
      std::vector<Uuid> ids;
      const int count = *rc::gen::inRange(1, 5);
      for (int i = 0; i < count; ++i)
        ids.push_back(*NonZeroId());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      auto fill = [&](auto e) -> Event {
        e.basis = basis;
        e.message_ids = ids;
        e.post_context = Measurement(ContextBasis{basis.revision + 1, e.header.event_id});
        return e;
      };
      if (kind == EventKind::kToolOutputsMasked)
        return fill(WithHeader<ToolOutputsMasked>());
      return fill(WithHeader<ToolOutputsUnmasked>());
    }
    case EventKind::kCompactionChunkSummarized: {
      auto e = WithHeader<CompactionChunkSummarized>();
      e.attempt_id = *NonZeroId();
      e.reason = *rc::gen::element(CompactionReason::kManual, CompactionReason::kAutomatic);
      e.basis = Basis();
      e.request_fingerprint = Fingerprint(Sha256(Prefixed('r')));
      e.chunks = *rc::gen::inRange<std::uint32_t>(2, kMaxChunks + 1);
      e.chunk = *rc::gen::inRange<std::uint32_t>(0, e.chunks);
      e.digest = Fingerprint(Sha256(Prefixed('d')));
      e.summary = UserMessage{{TextBlock{Prefixed('s')}}};
      return e;
    }
    case EventKind::kCompactionProposed: {
      auto e = WithHeader<CompactionProposed>();
      e.attempt_id = *NonZeroId();
      e.waiter_command_ids = Waiters();
      e.reason = CompactionReason::kManual;
      e.basis = Basis();
      e.summary = UserMessage{{TextBlock{Prefixed('s')}}};
      e.replaced = *rc::gen::inRange<std::uint64_t>(1, UINT64_MAX);
      const int kept = *rc::gen::inRange(0, 4);
      for (int i = 0; i < kept; ++i)
        e.kept.push_back(*NonZeroId());
      std::sort(e.kept.begin(), e.kept.end());
      e.kept.erase(std::unique(e.kept.begin(), e.kept.end()), e.kept.end());
      e.post_context = Measurement(e.basis);
      e.expires_at = e.header.created_at + std::chrono::seconds(*rc::gen::inRange(0, 3600));
      return e;
    }
    case EventKind::kInputAccepted: {
      auto e = WithHeader<InputAccepted>();
      e.header.cause.command_id = *NonZeroId();
      e.message = UserMessage{*Blocks(2)};
      e.origin = EnumIn<InputOrigin>(1, 3);
      return e;
    }
    case EventKind::kInputRejected: {
      auto e = WithHeader<InputRejected>();
      e.header.cause.command_id = *NonZeroId();
      e.reason = EnumIn<InputRejectReason>(1, 2);
      return e;
    }
    case EventKind::kInputCancelled: {
      auto e = WithHeader<InputCancelled>();
      e.header.cause.command_id = *NonZeroId();
      e.reason = EnumIn<InputCancelReason>(1, 3);
      return e;
    }
    case EventKind::kLoopIdle:
      return WithHeader<LoopIdle>();
    case EventKind::kLoopExited: {
      auto e = WithHeader<LoopExited>();
      e.reason = EnumIn<LoopExitReason>(1, 2);
      return e;
    }
    case EventKind::kTurnStarted:
      return WithHeader<TurnStarted>();
    case EventKind::kMessageCommitted: {
      auto e = WithHeader<MessageCommitted>();
      if (*rc::gen::arbitrary<bool>()) {
        e.message = UserMessage{*Blocks(2)};
        e.input_command_id = *MaybeId();
      } else {
        e.message = *AnyMessage();
      }
      return e;
    }
    case EventKind::kTurnCompleted:
      return WithHeader<TurnCompleted>();
    case EventKind::kTurnFailed: {
      auto e = WithHeader<TurnFailed>();
      FailureBody(e);
      e.detail = *Utf8();
      return e;
    }
    case EventKind::kTurnInterrupted: {
      auto e = WithHeader<TurnInterrupted>();
      e.reason = EnumIn<TurnInterruptReason>(1, 4);
      return e;
    }
    default:
      break;
  }
  RC_FAIL("not an enduring kind");
}

std::vector<EventKind> EnduringKinds() {
  std::vector<EventKind> kinds;
  for (std::size_t i = 0; i < kEventKindCount; ++i) {
    if (ClassOf(static_cast<EventKind>(i)) == EventClass::kEnduring)
      kinds.push_back(static_cast<EventKind>(i));
  }
  return kinds;
}

rc::Gen<Event> ValidEnduringEvent() {
  return rc::gen::exec([] { return EnduringEvent(*rc::gen::elementOf(EnduringKinds())); });
}

std::string Describe(const Result<std::string, EventError>& r) {
  return r.ok() ? std::string("ok") : DescribeEventError(r.error());
}

// ---------------------------------------------------------------------------------------------
// Properties

TEST(EventProperties, GeneratorsCoverEveryEnduringKind) {
  EXPECT_EQ(EnduringKinds().size(), 28u);
}

RC_GTEST_PROP(EventProperties, EveryValidEnduringEventRoundTripsExactly, ()) {
  const Event event = *ValidEnduringEvent();
  RC_TAG(EventTypeName(event));
  const auto valid = Validate(event);
  RC_ASSERT(valid.ok());
  const auto encoded = EncodeEvent(event);
  if (!encoded.ok())
    RC_FAIL(Describe(encoded));
  const auto decoded = DecodeEvent(*encoded);
  if (!decoded.ok())
    RC_FAIL(DescribeEventError(decoded.error()));
  RC_ASSERT(*decoded == event);
  const auto again = EncodeEvent(*decoded);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *encoded);
}

RC_GTEST_PROP(EventProperties, EveryKindRoundTripsWithinItsOwnProperty, ()) {
  for (EventKind kind : EnduringKinds()) {
    const Event event = EnduringEvent(kind);
    const auto encoded = EncodeEvent(event);
    RC_ASSERT(encoded.ok());
    const auto decoded = DecodeEvent(*encoded);
    RC_ASSERT(decoded.ok());
    RC_ASSERT(*decoded == event);
  }
}

std::string Mutate(std::string bytes) {
  const int n = *rc::gen::element(1, 1, 1, 2, 3, 4);
  for (int i = 0; i < n; ++i) {
    const std::size_t size = bytes.size();
    const std::size_t at = size == 0 ? 0 : *rc::gen::inRange<std::size_t>(0, size);
    switch (*rc::gen::inRange(0, 8)) {
      case 6:
      case 7: {  // change one digit or lower-case hex letter into another: well-formed JSON with a
                 // different id, count or enum value, which validation must judge
        const auto pos = bytes.find_first_of("0123456789abcdef", at);
        if (pos == std::string::npos)
          break;
        const char c = bytes[pos];
        bytes[pos] = (c >= '0' && c <= '9') ? static_cast<char>('0' + *rc::gen::inRange(0, 10))
                                            : static_cast<char>('a' + *rc::gen::inRange(0, 6));
        break;
      }
      case 0:  // replace a byte
        if (size > 0)
          bytes[at] = static_cast<char>(*rc::gen::arbitrary<std::uint8_t>());
        break;
      case 1:  // replace with a structural byte
        if (size > 0)
          bytes[at] = *rc::gen::element('"', '{', '}', '[', ']', ',', ':', '0', '\\', ' ', 'n');
        break;
      case 2:  // insert
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     static_cast<char>(*rc::gen::arbitrary<std::uint8_t>()));
        break;
      case 3:  // delete
        if (size > 0)
          bytes.erase(at, 1);
        break;
      case 4:  // duplicate a range
        if (size > 0) {
          const std::size_t len =
              *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(size - at, 40) + 1);
          bytes.insert(at, bytes.substr(at, len));
        }
        break;
      default:  // truncate
        bytes.resize(at);
    }
  }
  return bytes;
}

bool IsTypedError(const EventError& error) {
  const std::string_view kind = EventErrorKindName(error);
  return (kind == "unknown_type" || kind == "unsupported_version" || kind == "decode" ||
          kind == "too_large" || kind == "invalid") &&
         !DescribeEventError(error).empty();
}

RC_GTEST_PROP(EventProperties, MutatedEncodingsDecodeToAnEventOrATypedError, ()) {
  const Event event = *ValidEnduringEvent();
  const auto encoded = EncodeEvent(event);
  RC_ASSERT(encoded.ok());
  for (int round = 0; round < 8; ++round) {
    const std::string mutated = Mutate(*encoded);
    const auto decoded = DecodeEvent(mutated);
    if (!decoded.ok()) {
      RC_ASSERT(IsTypedError(decoded.error()));
      continue;
    }
    RC_ASSERT(Validate(*decoded).ok());
    const auto again = EncodeEvent(*decoded);
    RC_ASSERT(again.ok());
    const auto twice = DecodeEvent(*again);
    RC_ASSERT(twice.ok());
    RC_ASSERT(*twice == *decoded);
  }
}

}  // namespace
}  // namespace harness
