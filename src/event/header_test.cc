// The common header: identity profiles and their order (docs/spec/contracts.md §5.1), the
// error message, and the one time format (docs/spec/decisions.md D2).
#include "harness/event/header.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <string>

#include "harness/event/event.h"
#include "harness/event/time.h"
#include "test_events.h"

namespace harness {
namespace {

using namespace event_testing;

struct IdentityCase {
  const char* name;
  IdentityProfile profile;
  void (*mutate)(EventHeader&);
  const char* expected;
};

EventHeader HeaderFor(IdentityProfile profile) {
  switch (profile) {
    case IdentityProfile::kSession:
      return SessionHeader();
    case IdentityProfile::kLoop:
      return LoopHeader();
    case IdentityProfile::kTurn:
      return TurnHeader();
  }
  return {};
}

constexpr auto kS = IdentityProfile::kSession;
constexpr auto kL = IdentityProfile::kLoop;
constexpr auto kT = IdentityProfile::kTurn;

// Each row breaks one or more fields; the first rule in the order of §5.1 is reported.
const IdentityCase kIdentityCases[] = {
    {"loop_valid", kL, [](EventHeader&) {}, "valid"},
    {"loop_internal_passes_identity", kL,
     [](EventHeader& h) { h.visibility = Visibility::kInternal; }, "valid"},
    {"loop_visibility_2", kL, [](EventHeader& h) { h.visibility = static_cast<Visibility>(2); },
     "Visibility is invalid"},
    {"loop_visibility_before_event_id", kL,
     [](EventHeader& h) {
       h.visibility = static_cast<Visibility>(9);
       h.event_id = Uuid();
     },
     "Visibility is invalid"},
    {"loop_event_id_zero", kL, [](EventHeader& h) { h.event_id = Uuid(); }, "EventID must be set"},
    {"loop_event_id_before_session", kL,
     [](EventHeader& h) {
       h.event_id = Uuid();
       h.session_id = Uuid();
     },
     "EventID must be set"},
    {"loop_session_zero", kL, [](EventHeader& h) { h.session_id = Uuid(); },
     "SessionID must be set"},
    {"loop_session_before_loop", kL,
     [](EventHeader& h) {
       h.session_id = Uuid();
       h.loop_id = Uuid();
     },
     "SessionID must be set"},
    {"loop_loop_zero", kL, [](EventHeader& h) { h.loop_id = Uuid(); }, "LoopID must be set"},
    {"loop_loop_before_turn", kL,
     [](EventHeader& h) {
       h.loop_id = Uuid();
       h.turn_id = kTurn;
     },
     "LoopID must be set"},
    {"loop_turn_set", kL, [](EventHeader& h) { h.turn_id = kTurn; }, "TurnID must be zero"},
    {"loop_turn_before_step", kL,
     [](EventHeader& h) {
       h.turn_id = kTurn;
       h.step_id = kStep;
     },
     "TurnID must be zero"},
    {"loop_step_set", kL, [](EventHeader& h) { h.step_id = kStep; }, "StepID must be zero"},
    {"loop_step_before_created_at", kL,
     [](EventHeader& h) {
       h.step_id = kStep;
       h.created_at = EventTime();
     },
     "StepID must be zero"},
    {"loop_created_at_zero", kL, [](EventHeader& h) { h.created_at = EventTime(); },
     "CreatedAt must be set"},
    {"loop_created_at_before_agency", kL,
     [](EventHeader& h) {
       h.created_at = EventTime();
       h.cause.agency = static_cast<Agency>(2);
     },
     "CreatedAt must be set"},
    {"loop_agency_2", kL, [](EventHeader& h) { h.cause.agency = static_cast<Agency>(2); },
     "Agency is invalid"},
    {"loop_cause_is_free", kL,
     [](EventHeader& h) {
       h.cause = Cause{Id(1), Id(2), Id(3), Id(4), Id(5), Id(6), Id(7), Agency::kUser};
     },
     "valid"},

    {"session_valid", kS, [](EventHeader&) {}, "valid"},
    {"session_event_id_zero", kS, [](EventHeader& h) { h.event_id = Uuid(); },
     "EventID must be set"},
    {"session_session_zero", kS, [](EventHeader& h) { h.session_id = Uuid(); },
     "SessionID must be set"},
    {"session_loop_set", kS, [](EventHeader& h) { h.loop_id = kLoop; }, "LoopID must be zero"},
    {"session_loop_before_turn", kS,
     [](EventHeader& h) {
       h.loop_id = kLoop;
       h.turn_id = kTurn;
     },
     "LoopID must be zero"},
    {"session_turn_set", kS, [](EventHeader& h) { h.turn_id = kTurn; }, "TurnID must be zero"},
    {"session_step_set", kS, [](EventHeader& h) { h.step_id = kStep; }, "StepID must be zero"},
    {"session_created_at_zero", kS, [](EventHeader& h) { h.created_at = EventTime(); },
     "CreatedAt must be set"},

    {"turn_valid_with_step", kT, [](EventHeader&) {}, "valid"},
    {"turn_valid_without_step", kT, [](EventHeader& h) { h.step_id = Uuid(); }, "valid"},
    {"turn_loop_zero", kT, [](EventHeader& h) { h.loop_id = Uuid(); }, "LoopID must be set"},
    {"turn_turn_zero", kT, [](EventHeader& h) { h.turn_id = Uuid(); }, "TurnID must be set"},
    {"turn_step_without_turn", kT,
     [](EventHeader& h) {
       h.turn_id = Uuid();
       h.step_id = kStep;
     },
     "TurnID must be set"},
    {"turn_created_at_zero", kT, [](EventHeader& h) { h.created_at = EventTime(); },
     "CreatedAt must be set"},
};

TEST(ValidateIdentity, FollowsTheOrderOfTheProfile) {
  for (const auto& c : kIdentityCases) {
    EventHeader h = HeaderFor(c.profile);
    c.mutate(h);
    const auto status = ValidateIdentity("Probe", c.profile, h);
    EXPECT_EQ(Verdict(status), c.expected) << c.name;
    if (!status.ok()) {
      EXPECT_EQ(status.error().event, "Probe") << c.name;
    }
  }
}

TEST(ValidateIdentity, RunsBeforeTheBodyForEveryKind) {
  for (Event event : AllValidEvents()) {
    HeaderOf(event).event_id = Uuid();
    // Break the body as well where a body rule exists: visibility Internal is a body rule.
    HeaderOf(event).visibility = Visibility::kInternal;
    EXPECT_EQ(Verdict(Validate(event)), "EventID must be set") << EventTypeName(event);
  }
}

TEST(ValidateIdentity, EveryKindUsesItsProfile) {
  for (Event event : AllValidEvents()) {
    const IdentityProfile profile = ProfileOf(KindOf(event));
    EventHeader& h = HeaderOf(event);
    switch (profile) {
      case IdentityProfile::kSession:
        h.loop_id = kLoop;
        EXPECT_EQ(Verdict(Validate(event)), "LoopID must be zero") << EventTypeName(event);
        break;
      case IdentityProfile::kLoop:
        h.turn_id = kTurn;
        EXPECT_EQ(Verdict(Validate(event)), "TurnID must be zero") << EventTypeName(event);
        break;
      case IdentityProfile::kTurn:
        h.turn_id = Uuid();
        EXPECT_EQ(Verdict(Validate(event)), "TurnID must be set") << EventTypeName(event);
        break;
    }
  }
}

TEST(InvalidEventError, MessageNamesEventFieldAndRule) {
  EXPECT_EQ(
      (InvalidEventError{"CompactionRejected", "EventID", FieldRule::kMustBeSet, {}}.Message()),
      "event: invalid CompactionRejected: EventID must be set");
  EXPECT_EQ((InvalidEventError{"LoopIdle", "TurnID", FieldRule::kMustBeZero, {}}.Message()),
            "event: invalid LoopIdle: TurnID must be zero");
  EXPECT_EQ((InvalidEventError{"CompactWaiterRejected", "RejectReason", FieldRule::kIsInvalid, {}}
                 .Message()),
            "event: invalid CompactWaiterRejected: RejectReason is invalid");
}

TEST(Agency, WireValuesAndNames) {
  EXPECT_EQ(static_cast<int>(Agency::kMachine), 0);
  EXPECT_EQ(static_cast<int>(Agency::kUser), 1);
  EXPECT_EQ(static_cast<int>(Visibility::kPublic), 0);
  EXPECT_EQ(static_cast<int>(Visibility::kInternal), 1);
  EXPECT_EQ(AgencyName(Agency::kMachine), "machine");
  EXPECT_EQ(AgencyName(Agency::kUser), "user");
  EXPECT_EQ(AgencyName(static_cast<Agency>(2)), "");
}

// ---------------------------------------------------------------------------------------------
// EventTime

TEST(EventTime, FormatsNineFractionalDigitsInUtc) {
  EXPECT_EQ(FormatEventTime(T0()), "2024-05-06T07:08:09.123456789Z");
  EXPECT_EQ(FormatEventTime(EventTime()), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(FormatEventTime(EventTime(std::chrono::nanoseconds(-1))),
            "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(FormatEventTime(
                EventTime(std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::max()))),
            "2262-04-11T23:47:16.854775807Z");
  EXPECT_EQ(FormatEventTime(
                EventTime(std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::min()))),
            "1677-09-21T00:12:43.145224192Z");
}

TEST(EventTime, ParsesExactlyTheCanonicalForm) {
  struct Case {
    const char* text;
    bool ok;
  };
  const Case cases[] = {
      {"2024-05-06T07:08:09.123456789Z", true},
      {"1970-01-01T00:00:00.000000000Z", true},
      {"2024-02-29T00:00:00.000000000Z", true},
      {"2000-02-29T23:59:59.999999999Z", true},
      {"2262-04-11T23:47:16.854775807Z", true},
      {"1677-09-21T00:12:43.145224192Z", true},
      {"2262-04-11T23:47:16.854775808Z", false},  // one nanosecond past int64
      {"1677-09-21T00:12:43.145224191Z", false},  // one nanosecond before int64
      {"9999-12-31T23:59:59.999999999Z", false},
      {"0000-01-01T00:00:00.000000000Z", false},
      {"2023-02-29T00:00:00.000000000Z", false},
      {"1900-02-29T00:00:00.000000000Z", false},
      {"2024-13-01T00:00:00.000000000Z", false},
      {"2024-00-01T00:00:00.000000000Z", false},
      {"2024-04-31T00:00:00.000000000Z", false},
      {"2024-05-00T00:00:00.000000000Z", false},
      {"2024-05-06T24:00:00.000000000Z", false},
      {"2024-05-06T07:60:00.000000000Z", false},
      {"2024-05-06T07:08:60.000000000Z", false},  // no leap seconds
      {"2024-05-06t07:08:09.123456789Z", false},
      {"2024-05-06T07:08:09.123456789z", false},
      {"2024-05-06 07:08:09.123456789Z", false},
      {"2024-05-06T07:08:09.12345678Z", false},
      {"2024-05-06T07:08:09.1234567891Z", false},
      {"2024-05-06T07:08:09Z", false},
      {"2024-05-06T07:08:09.123456789+00:00", false},
      {"2024-05-06T07:08:09.12345678+Z", false},
      {"-024-05-06T07:08:09.123456789Z", false},
      {"2024-05-06T07:08:09.123456789", false},
      {"", false},
  };
  for (const auto& c : cases) {
    const auto parsed = ParseEventTime(c.text);
    EXPECT_EQ(parsed.ok(), c.ok) << c.text;
    if (parsed.ok()) {
      EXPECT_EQ(FormatEventTime(*parsed), c.text);
    } else {
      EXPECT_FALSE(parsed.error().detail.empty());
    }
  }
}

RC_GTEST_PROP(EventTime, EveryInstantRoundTripsThroughItsText, (std::int64_t ns)) {
  const EventTime time{std::chrono::nanoseconds(ns)};
  const std::string text = FormatEventTime(time);
  RC_ASSERT(text.size() == kEventTimeTextSize);
  const auto parsed = ParseEventTime(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == time);
}

}  // namespace
}  // namespace harness
