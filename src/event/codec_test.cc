// The durable event codec (docs/spec/contracts.md §5.7 under docs/spec/decisions.md D2): golden
// encodings, round trips of every enduring kind, ephemeral refusal, the decode order and every seed
// behaviour of §5.7 and §5.9, with "_under_d2" in the name where D2 changes the outcome.
// check-sizes: every kind's golden encoding and decode cases in one suite, as the codec is one.
#include "harness/event/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "harness/event/json.h"
#include "test_events.h"

namespace harness {
namespace {

using namespace event_testing;
using ::testing::HasSubstr;

std::string Encoded(const Event& event) {
  auto encoded = EncodeEvent(event);
  EXPECT_TRUE(encoded.ok()) << EventTypeName(event) << ": "
                            << (encoded.ok() ? "" : DescribeEventError(encoded.error()));
  return encoded.ok() ? *encoded : std::string();
}

// "ok", or the error kind, with the field and rule for invalid events.
std::string Verdict(const EventError& error) {
  std::string out(EventErrorKindName(error));
  if (const auto* invalid = std::get_if<InvalidEventError>(&error)) {
    out += ": ";
    out.append(invalid->field);
    out.push_back(' ');
    out.append(FieldRuleText(invalid->rule));
  }
  return out;
}

std::string DecodeVerdict(std::string_view bytes) {
  auto decoded = DecodeEvent(bytes);
  return decoded.ok() ? "ok" : Verdict(decoded.error());
}

std::string Replace(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

const std::string kRejectedWire =
    R"({"type":"CompactionRejected","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)"
    R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
    R"("event_id":"00000000-0000-4000-8000-000000000010",)"
    R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
    R"("attempt_id":"00000000-0000-4000-8000-000000000020",)"
    R"("waiter_command_ids":["00000000-0000-4000-8000-000000000031"],"reason":2,)"
    R"("basis":{"revision":1,"through_event_id":"00000000-0000-4000-8000-000000000001"},)"
    R"("reject_reason":8,"duration":1000000000})";

// ---------------------------------------------------------------------------------------------
// Encoding

TEST(EncodeEvent, GoldenCompactionRejected) {
  EXPECT_EQ(Encoded(ValidRejected()), kRejectedWire);
}

TEST(EncodeEvent, GoldenCompactionCommitted) {
  CompactionCommitted e = ValidCommitted();
  e.retained = {User("keep")};
  EXPECT_EQ(
      Encoded(e),
      R"({"type":"CompactionCommitted","v":2,"session_id":"00000000-0000-4000-8000-0000000000a1",)"
      R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
      R"("event_id":"00000000-0000-4000-8000-000000000010",)"
      R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
      R"("attempt_id":"00000000-0000-4000-8000-000000000020",)"
      R"("waiter_command_ids":["00000000-0000-4000-8000-000000000031",)"
      R"("00000000-0000-4000-8000-000000000032"],"reason":1,)"
      R"("basis":{"revision":1,"through_event_id":"00000000-0000-4000-8000-000000000001"},)"
      R"("summary":{"role":"user","blocks":[{"type":"text","text":"summary"}]},)"
      R"("retained":[{"role":"user","blocks":[{"type":"text","text":"keep"}]}],)"
      R"("post_context":{"basis":{"revision":2,)"
      R"("through_event_id":"00000000-0000-4000-8000-000000000010"},)"
      R"("model":{"provider":"provider","model":"model"},)"
      R"("request_fingerprint":"0100000000000000000000000000000000000000000000000000000000000000",)"
      R"("input_tokens":2,"input_limit":100,"quality":2},"duration":1500000000})");
}

// A commit decoded from a version 1 payload keeps its version: it re-encodes with "v":1, byte for
// byte, and the version 1 rule judges its retained list (calls open at the end are invalid).
TEST(EncodeEvent, VersionOneCommitKeepsItsVersion) {
  CompactionCommitted e = ValidCommitted();
  e.payload_version = 1;
  const std::string v1 = Encoded(e);
  EXPECT_EQ(v1.rfind(R"({"type":"CompactionCommitted","v":1,)", 0), 0u) << v1;
  auto decoded = DecodeEvent(v1);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<CompactionCommitted>(*decoded).payload_version, 1u);
  EXPECT_EQ(EventPayloadVersion(*decoded), 1u);
  EXPECT_EQ(EncodeEvent(*decoded).value(), v1);
  e.payload_version = 2;
  EXPECT_EQ(EventPayloadVersion(Event(e)), 2u);
  for (std::uint32_t bad : {0u, 3u}) {
    e.payload_version = bad;
    const auto encoded = EncodeEvent(Event(e));
    ASSERT_FALSE(encoded.ok());
    EXPECT_EQ(DescribeEventError(encoded.error()),
              DescribeEventError(EventError(InvalidEventError{
                  "CompactionCommitted", "Version", FieldRule::kIsInvalid, std::nullopt})));
  }
  EXPECT_EQ(EventPayloadVersion(Event(ValidRejected())), 1u);
}

// The detail of a rejection is written only when set: without it the bytes are those of the
// codec before the member existed (docs/decisions.md P10).
TEST(EncodeEvent, RejectionDetailIsAdditive) {
  EXPECT_EQ(Encoded(ValidRejected()).find("detail"), std::string::npos);
  CompactionRejected e = ValidRejected();
  e.reject_reason = CompactRejectReason::kRetainedTailTooLarge;
  e.detail = CompactRejectDetail{RejectDetailKind::kTailTooLarge, {}, 9000, 8000, 1024};
  const std::string wire = Encoded(e);
  EXPECT_NE(wire.find(R"("duration":1000000000,"detail":{"kind":"tail_too_large",)"
                      R"("tail_tokens":9000,"limit":8000,"summary_budget":1024}})"),
            std::string::npos)
      << wire;
  auto decoded = DecodeEvent(wire);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<CompactionRejected>(*decoded), e);

  CompactWaiterRejected reply = ValidWaiterRejected();
  reply.reason = CompactRejectReason::kUnavailable;
  reply.detail = CompactRejectDetail{RejectDetailKind::kOpenToolCall, 7, {}, {}, {}};
  const std::string reply_wire = Encoded(reply);
  EXPECT_NE(reply_wire.find(R"("reason":7,"detail":{"kind":"open_tool_call","message":7}})"),
            std::string::npos)
      << reply_wire;
  auto reply_decoded = DecodeEvent(reply_wire);
  ASSERT_TRUE(reply_decoded.ok()) << DescribeEventError(reply_decoded.error());
  EXPECT_EQ(std::get<CompactWaiterRejected>(*reply_decoded), reply);

  // A veto's note is the last member of its detail (runtime/hook.h).
  CompactionRejected vetoed = ValidRejected();
  vetoed.reject_reason = CompactRejectReason::kUnavailable;
  vetoed.detail =
      CompactRejectDetail{RejectDetailKind::kVetoed, {}, {}, {}, {}, {}, {}, "freeze \"v2\""};
  const std::string vetoed_wire = Encoded(vetoed);
  EXPECT_NE(vetoed_wire.find(R"("detail":{"kind":"vetoed","note":"freeze \"v2\""}})"),
            std::string::npos)
      << vetoed_wire;
  auto vetoed_decoded = DecodeEvent(vetoed_wire);
  ASSERT_TRUE(vetoed_decoded.ok()) << DescribeEventError(vetoed_decoded.error());
  EXPECT_EQ(std::get<CompactionRejected>(*vetoed_decoded), vetoed);

  // A compactor's failure: its note says what it failed with (compaction/compactor.h).
  CompactionRejected failed = ValidRejected();
  failed.reject_reason = CompactRejectReason::kExecutionFailed;
  failed.detail = CompactRejectDetail{RejectDetailKind::kCompactorFailed, {}, {}, {}, {}, {}, {},
                                      "model refused: HTTP 401"};
  const std::string failed_wire = Encoded(failed);
  EXPECT_NE(
      failed_wire.find(R"("detail":{"kind":"compactor_failed","note":"model refused: HTTP 401"}})"),
      std::string::npos)
      << failed_wire;
  auto failed_decoded = DecodeEvent(failed_wire);
  ASSERT_TRUE(failed_decoded.ok()) << DescribeEventError(failed_decoded.error());
  EXPECT_EQ(std::get<CompactionRejected>(*failed_decoded), failed);
}

// `e` encodes with `fragment` in its bytes and decodes back to itself.
template <class E>
void ExpectRoundTripWith(const E& e, std::string_view fragment) {
  const std::string wire = Encoded(e);
  EXPECT_NE(wire.find(fragment), std::string::npos) << wire;
  auto decoded = DecodeEvent(wire);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<E>(*decoded), e);
}

// The would_not_shrink detail of an ineffective rejection: its two numbers are additive members
// written after the older ones, and the event round-trips exactly (docs/decisions.md P15).
TEST(EncodeEvent, AnIneffectiveRejectionCarriesItsFigures) {
  CompactionRejected e = ValidRejected();
  e.reject_reason = CompactRejectReason::kIneffective;
  CompactRejectDetail detail{RejectDetailKind::kWouldNotShrink, {}, 5200, 8000, 1024};
  detail.estimate = 6224;
  detail.context_tokens = 6000;
  e.detail = detail;
  const std::string figures = R"("detail":{"kind":"would_not_shrink","tail_tokens":5200,)"
                              R"("limit":8000,"summary_budget":1024,"estimate":6224,)"
                              R"("context_tokens":6000}})";
  ExpectRoundTripWith(e, R"("reject_reason":17,"duration":1000000000,)" + figures);
  CompactWaiterRejected reply = ValidWaiterRejected();
  reply.reason = CompactRejectReason::kIneffective;
  reply.detail = detail;
  ExpectRoundTripWith(reply, R"("reason":17,)" + figures);

  // A detail written before the two members existed reads as it did.
  CompactionRejected tail = ValidRejected();
  tail.reject_reason = CompactRejectReason::kRetainedTailTooLarge;
  tail.detail = CompactRejectDetail{RejectDetailKind::kTailTooLarge, {}, 9000, 8000, 1024};
  EXPECT_EQ(Encoded(tail).find("estimate"), std::string::npos);
}

// CompactionStarted is ephemeral: EventJson writes it, with the pre-flight's estimate only when
// it is set, so a start without one is the shape it had before the member existed.
TEST(EventJson, CompactionStartedCarriesTheEstimateWhenSet) {
  CompactionStarted started = ValidStarted();
  const std::string without = EventJson(started);
  EXPECT_EQ(without.find("estimate"), std::string::npos) << without;
  EXPECT_EQ(without.find(R"({"type":"CompactionStarted",)"), 0u) << without;
  started.estimate = 4321;
  const std::string with = EventJson(started);
  EXPECT_NE(with.find(R"("reason":1,"basis":{"revision":1,"through_event_id":")"),
            std::string::npos)
      << with;
  EXPECT_EQ(with.size() - without.size(), std::string(R"(,"estimate":4321)").size());
  EXPECT_NE(with.find(R"("},"estimate":4321})"), std::string::npos) << with;
  started.estimate = 0;
  EXPECT_NE(EventJson(started).find(R"("estimate":0})"), std::string::npos);
}

// DecodeEvent on `text`: "ok", or the error's whole description.
std::string DecodeDescription(const std::string& text) {
  auto result = DecodeEvent(text);
  return result.ok() ? std::string("ok") : DescribeEventError(result.error());
}

// The additive coverage member (docs/decisions.md P10, P13): written only when set, so an event
// without it is the bytes above; with it, it comes last and round-trips exactly.
TEST(EncodeEvent, CoverageIsAnAdditiveLastMember) {
  CompactionRejected e = ValidRejected();
  e.reject_reason = CompactRejectReason::kCoverageInsufficient;
  e.coverage = CoverageReport{
      {{AnchorClass::kConstraint, 0, 1}, {AnchorClass::kPath, 2, 3}},
      {{AnchorClass::kConstraint, "never \"push\""}, {AnchorClass::kPath, "src/foo.cc"}},
      false,
      {},
      0};
  const std::string bytes = Encoded(e);
  EXPECT_EQ(bytes, Replace(Replace(kRejectedWire, R"("reject_reason":8)", R"("reject_reason":15)"),
                           R"("duration":1000000000})",
                           R"("duration":1000000000,"coverage":{"classes":[{"class":2,"found":0,)"
                           R"("total":1},{"class":3,"found":2,"total":3}],"missing":[{"class":2,)"
                           R"("text":"never \"push\""},{"class":3,"text":"src/foo.cc"}]}})"));
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(e));

  CompactionCommitted committed = ValidCommitted();
  committed.coverage = CoverageReport{{}, {}, true, {}, 0};
  const std::string committed_bytes = Encoded(committed);
  EXPECT_NE(committed_bytes.find(R"("coverage":{"classes":[],"missing":[],"waived":true}})"),
            std::string::npos);
  auto committed_decoded = DecodeEvent(committed_bytes);
  ASSERT_TRUE(committed_decoded.ok()) << DescribeEventError(committed_decoded.error());
  EXPECT_EQ(*committed_decoded, Event(committed));
  EXPECT_EQ(Encoded(*committed_decoded), committed_bytes);
}

TEST(EncodeEvent, CoverageRules) {
  CompactionRejected e = ValidRejected();
  e.coverage = CoverageReport{};
  // Only a coverage rejection carries a report, and never a waived one.
  EXPECT_EQ(Verdict(EncodeEvent(e).error()), "invalid: Coverage is invalid");
  e.reject_reason = CompactRejectReason::kCoverageInsufficient;
  EXPECT_TRUE(EncodeEvent(e).ok());
  e.coverage->waived = true;
  EXPECT_EQ(Verdict(EncodeEvent(e).error()), "invalid: Coverage is invalid");
  CompactionCommitted c = ValidCommitted();
  const CoverageReport bad[] = {
      {{{AnchorClass::kPath, 4, 3}}, {}, false, {}, 0},  // found > total
      {{{AnchorClass::kPath, 0, 0}}, {}, false, {}, 0},  // an empty class
      {{{AnchorClass::kUrl, 0, 1}, {AnchorClass::kPath, 0, 1}}, {}, false, {}, 0},  // out of order
      {{{static_cast<AnchorClass>(10), 0, 1}}, {}, false, {}, 0},                   // class 10
      {{{AnchorClass::kPath, 2, 3}},
       {{AnchorClass::kPath, "a"}, {AnchorClass::kPath, "b"}},
       false,
       {},
       0},  // more than unfound
      {{{AnchorClass::kPath, 0, 3}},
       {{AnchorClass::kUrl, "a"}},
       false,
       {},
       0},  // a class not listed
      {{{AnchorClass::kPath, 0, 3}}, {{AnchorClass::kPath, ""}}, false, {}, 0},  // empty text
      {{{AnchorClass::kPath, 0, 3}},
       {{AnchorClass::kPath, std::string(kMaxReportedAnchorBytes + 1, 'a')}},
       false,
       {},
       0},  // text too long
  };
  for (const CoverageReport& report : bad) {
    c.coverage = report;
    EXPECT_EQ(Verdict(EncodeEvent(c).error()), "invalid: Coverage is invalid");
  }
  CoverageReport many{{{AnchorClass::kPath, 0, 20}}, {}, false, {}, 0};
  for (std::size_t i = 0; i <= kMaxReportedMissing; ++i)
    many.missing.push_back({AnchorClass::kPath, "p"});
  c.coverage = many;
  EXPECT_EQ(Verdict(EncodeEvent(c).error()), "invalid: Coverage is invalid");
  many.missing.pop_back();
  c.coverage = many;
  EXPECT_TRUE(EncodeEvent(c).ok());
}

// The repaired anchors (coverage mode repair, docs/decisions.md P21): inside the coverage
// object, after waived, only when repair wrote something; a report without them is the bytes it
// was before. They round-trip exactly; a zero count and a stray member are refused.
TEST(EncodeEvent, CoverageRepairedIsAnAdditiveMember) {
  CompactionCommitted committed = ValidCommitted();
  committed.coverage =
      CoverageReport{{{AnchorClass::kConstraint, 1, 1}, {AnchorClass::kPath, 2, 3}},
                     {{AnchorClass::kPath, "src/b.cc"}},
                     false,
                     {},
                     0};
  const std::string without = Encoded(committed);
  EXPECT_NE(without.find(R"("missing":[{"class":3,"text":"src/b.cc"}]}})"), std::string::npos)
      << without;
  committed.coverage->repaired = {{AnchorClass::kConstraint, "never \"push\""},
                                  {AnchorClass::kPath, "src/a.cc"}};
  committed.coverage->repaired_count = 2;
  const std::string bytes = Encoded(committed);
  EXPECT_EQ(bytes, Replace(without, R"("text":"src/b.cc"}]}})",
                           R"("text":"src/b.cc"}],"repaired":[{"class":2,"text":"never \"push\""},)"
                           R"({"class":3,"text":"src/a.cc"}],"repaired_count":2}})"));
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(committed));
  EXPECT_EQ(Encoded(*decoded), bytes);

  EXPECT_THAT(DecodeDescription(Replace(bytes, R"("repaired_count":2)", R"("repaired_count":0)")),
              HasSubstr("nothing repaired is written by omitting repaired"));
  EXPECT_THAT(DecodeDescription(Replace(bytes, R"(,"repaired_count":2)", "")),
              HasSubstr("repaired_count"));
  EXPECT_THAT(
      DecodeDescription(Replace(bytes, R"("text":"src/a.cc"})", R"("text":"src/a.cc","x":1})")),
      HasSubstr("unknown member \"x\""));
  // More written than listed: the count says so, the list holds the first eight.
  committed.coverage->classes = {{AnchorClass::kPath, 12, 12}};
  committed.coverage->missing.clear();
  committed.coverage->repaired.assign(kMaxReportedMissing, {AnchorClass::kPath, "p.cc"});
  committed.coverage->repaired_count = 12;
  const std::string many = Encoded(committed);
  auto many_decoded = DecodeEvent(many);
  ASSERT_TRUE(many_decoded.ok()) << DescribeEventError(many_decoded.error());
  EXPECT_EQ(*many_decoded, Event(committed));
}

TEST(EncodeEvent, CoverageRepairedRules) {
  CompactionCommitted c = ValidCommitted();
  const CoverageReport bad[] = {
      // listed without a count, and a count without the list
      {{{AnchorClass::kPath, 1, 1}}, {}, false, {{AnchorClass::kPath, "a"}}, 0},
      {{{AnchorClass::kPath, 1, 1}}, {}, false, {}, 1},
      // more than found, in all or of one class
      {{{AnchorClass::kPath, 1, 2}}, {}, false, {{AnchorClass::kPath, "a"}}, 2},
      {{{AnchorClass::kPath, 1, 1}, {AnchorClass::kUrl, 1, 1}},
       {},
       false,
       {{AnchorClass::kPath, "a"}, {AnchorClass::kPath, "b"}},
       2},
      // a class not listed, empty text, text too long, class 0
      {{{AnchorClass::kPath, 1, 1}}, {}, false, {{AnchorClass::kUrl, "a"}}, 1},
      {{{AnchorClass::kPath, 1, 1}}, {}, false, {{AnchorClass::kPath, ""}}, 1},
      {{{AnchorClass::kPath, 1, 1}},
       {},
       false,
       {{AnchorClass::kPath, std::string(kMaxReportedAnchorBytes + 1, 'a')}},
       1},
      {{{AnchorClass::kPath, 1, 1}}, {}, false, {{AnchorClass::kUnspecified, "a"}}, 1},
  };
  for (std::size_t i = 0; i < std::size(bad); ++i) {
    SCOPED_TRACE(i);
    c.coverage = bad[i];
    EXPECT_EQ(Verdict(EncodeEvent(c).error()), "invalid: Coverage is invalid");
  }
  // A rejection never carries repaired anchors: repair does not reject for coverage.
  CompactionRejected r = ValidRejected();
  r.reject_reason = CompactRejectReason::kCoverageInsufficient;
  r.coverage =
      CoverageReport{{{AnchorClass::kPath, 1, 2}}, {}, false, {{AnchorClass::kPath, "a"}}, 1};
  EXPECT_EQ(Verdict(EncodeEvent(r).error()), "invalid: Coverage is invalid");
  r.coverage->repaired.clear();
  r.coverage->repaired_count = 0;
  EXPECT_TRUE(EncodeEvent(r).ok());
}

// An additive member's bytes decode to the event and re-encode to the same bytes.
void ExpectRoundTrip(const std::string& bytes, const Event& event) {
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, event);
  EXPECT_EQ(Encoded(*decoded), bytes);
}

// The additive pinned member (docs/pins.md, docs/decisions.md P10): written last and only when
// a commit keeps pinned messages, so a commit without any is byte for byte what the codec wrote
// before; with them it round-trips exactly, and an empty list has no encoding.
TEST(EncodeEvent, PinnedIsAnAdditiveLastMember) {
  const std::string without = Encoded(ValidCommitted());
  CompactionCommitted committed = ValidCommitted();
  committed.pinned = {
      PinnedMessage{Id(0x51), AssistantMessage{{ToolUseBlock{"c1", "grep", "{}", {}, {}}}, {}}},
      PinnedMessage{Id(0x52), ToolResultMessage{{TextBlock{"found"}}, "c1", false}}};
  const std::string bytes = Encoded(committed);
  ASSERT_EQ(bytes.substr(0, without.size() - 1), without.substr(0, without.size() - 1));
  EXPECT_EQ(
      bytes.substr(without.size() - 1),
      R"(,"pinned":[{"id":"00000000-0000-4000-8000-000000000051","message":{"role":)"
      R"("assistant","blocks":[{"type":"tool_use","id":"c1","name":"grep","input":{}}],"usage":null}},)"
      R"({"id":"00000000-0000-4000-8000-000000000052","message":{"role":"tool","blocks":)"
      R"([{"type":"text","text":"found"}],"tool_use_id":"c1","is_error":false}}]})");
  ExpectRoundTrip(bytes, Event(committed));
  EXPECT_THAT(DecodeDescription(Replace(without, R"("duration":1500000000})",
                                        R"("duration":1500000000,"pinned":[]})")),
              HasSubstr("an empty pinned list is written by omitting it"));
  EXPECT_THAT(DecodeDescription(
                  Replace(bytes, R"("is_error":false}}]})", R"("is_error":false},"extra":1}]})")),
              HasSubstr("unknown member \"extra\""));
}

TEST(EncodeEvent, PinnedRules) {
  const Message reply = AssistantMessage{{TextBlock{"kept"}}, {}};
  CompactionCommitted c = ValidCommitted();
  c.pinned = {PinnedMessage{Id(0x51), reply}};
  EXPECT_TRUE(EncodeEvent(c).ok());  // a pinned run need not start with a user message
  const std::vector<std::vector<PinnedMessage>> bad = {
      {PinnedMessage{Uuid{}, reply}},                                    // a zero id
      {PinnedMessage{Id(0x51), reply}, PinnedMessage{Id(0x51), reply}},  // an id twice
      {PinnedMessage{Id(0x51), AssistantMessage{{ToolUseBlock{"c1", "grep", "{}", {}, {}}}, {}}}},
      {PinnedMessage{Id(0x51), ToolResultMessage{{TextBlock{"orphan"}}, "c1", false}}},
      // A message ValidateMessage refuses: raw JSON input that is not JSON.
      {PinnedMessage{Id(0x51), UserMessage{{ToolUseBlock{"c9", "grep", "{", {}, {}}}}}},
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    c.pinned = bad[i];
    auto encoded = EncodeEvent(c);
    ASSERT_FALSE(encoded.ok());
    EXPECT_EQ(Verdict(encoded.error()), "invalid: Pinned is invalid");
  }
}

// The additive shortened member (docs/events.md, docs/spec/runtime.md §2.8.1): written last and
// only when a commit shortened tool output, so every commit without it is byte for byte what the
// codec wrote before; with it, it round-trips exactly, and an empty list has no encoding.
CompactionCommitted CommittedWithShortenedOutput() {
  CompactionCommitted committed = ValidCommitted();
  committed.retained = {
      User("build it"), AssistantMessage{{ToolUseBlock{"c1", "bash", "{}", {}, {}}}, {}},
      ToolResultMessage{{TextBlock{"head\n[harness shortened …]\ntail"}}, "c1", false}};
  committed.shortened = {ShortenedBlock{2, 0, 240'000, 2'048}};
  return committed;
}

TEST(EncodeEvent, ShortenedIsAnAdditiveLastMember) {
  CompactionCommitted plain = CommittedWithShortenedOutput();
  plain.shortened.clear();
  const std::string without = Encoded(plain);
  EXPECT_EQ(without.find("shortened\":"), std::string::npos);
  CompactionCommitted committed = CommittedWithShortenedOutput();
  committed.pinned = {PinnedMessage{Id(0x51), AssistantMessage{{TextBlock{"kept"}}, {}}}};
  const std::string with_pin = [&] {
    CompactionCommitted pinned_only = committed;
    pinned_only.shortened.clear();
    return Encoded(pinned_only);
  }();
  const std::string bytes = Encoded(committed);
  ASSERT_EQ(bytes.substr(0, with_pin.size() - 1), with_pin.substr(0, with_pin.size() - 1));
  EXPECT_EQ(bytes.substr(with_pin.size() - 1),
            R"(,"shortened":[{"message":2,"block":0,"original_bytes":240000,"kept_bytes":2048}]})");
  ExpectRoundTrip(bytes, Event(committed));
  EXPECT_THAT(DecodeDescription(Replace(without, R"("duration":1500000000})",
                                        R"("duration":1500000000,"shortened":[]})")),
              HasSubstr("an empty shortened list is written by omitting it"));
  EXPECT_THAT(
      DecodeDescription(Replace(bytes, R"("kept_bytes":2048})", R"("kept_bytes":2048,"x":1})")),
      HasSubstr("unknown member \"x\""));
  EXPECT_THAT(DecodeDescription(Replace(bytes, R"("message":2,)", R"("message":4294967296,)")),
              HasSubstr("message"));
  EXPECT_THAT(DecodeDescription(Replace(bytes, R"("kept_bytes":2048)", R"("kept_bytes":-1)")),
              HasSubstr("kept_bytes"));
}

TEST(EncodeEvent, ShortenedRules) {
  CompactionCommitted c = CommittedWithShortenedOutput();
  EXPECT_TRUE(EncodeEvent(c).ok());
  const std::vector<std::vector<ShortenedBlock>> bad = {
      {ShortenedBlock{0, 0, 10, 5}},                               // a user message's text
      {ShortenedBlock{3, 0, 10, 5}},                               // no such message
      {ShortenedBlock{2, 1, 10, 5}},                               // no such block
      {ShortenedBlock{2, 0, 10, 10}},                              // nothing cut
      {ShortenedBlock{2, 0, 10, 0}},                               // nothing kept
      {ShortenedBlock{2, 0, 10, 5}, ShortenedBlock{2, 0, 10, 5}},  // twice
      {ShortenedBlock{2, 0, 10, 5}, ShortenedBlock{1, 0, 10, 5}},  // out of order
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    c.shortened = bad[i];
    auto encoded = EncodeEvent(c);
    ASSERT_FALSE(encoded.ok());
    EXPECT_EQ(Verdict(encoded.error()), "invalid: Shortened is invalid");
  }
  // A call's input is shortenable too; the ascending order is by message, then block.
  c.shortened = {ShortenedBlock{1, 0, 10, 5}, ShortenedBlock{2, 0, 10, 5}};
  EXPECT_TRUE(EncodeEvent(c).ok());
  c.shortened.assign(kMaxShortenedBlocks + 1, ShortenedBlock{2, 0, 10, 5});
  EXPECT_EQ(Verdict(EncodeEvent(c).error()), "invalid: Shortened is invalid");
}

TEST(EncodeEvent, PinEventsCarryTheMessageId) {
  MessagePinned pinned{LoopHeader(), Id(0x51)};
  const std::string bytes = Encoded(pinned);
  EXPECT_NE(bytes.find(R"("type":"MessagePinned","v":1,)"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"("message_id":"00000000-0000-4000-8000-000000000051"})"),
            std::string::npos)
      << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(pinned));
  EXPECT_EQ(Verdict(EncodeEvent(MessageUnpinned{LoopHeader(), Uuid{}}).error()),
            "invalid: MessageID is invalid");
  EXPECT_EQ(Verdict(EncodeEvent(MessagePinned{TurnHeader(), Id(0x51)}).error()),
            "invalid: TurnID must be zero");
}

TEST(EncodeEvent, HistoryRevertedNamesTheReplacementAndMeasuresTheRestoredRequest) {
  HistoryReverted reverted{LoopHeader(), Id(0x61), ContextBasis{3, kThrough},
                           Measurement(ContextBasis{4, kEventId})};
  const std::string bytes = Encoded(reverted);
  EXPECT_NE(bytes.find(R"("type":"HistoryReverted","v":1,)"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"("reverted_event_id":"00000000-0000-4000-8000-000000000061","basis":)"
                       R"({"revision":3,)"),
            std::string::npos)
      << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(reverted));
  HistoryReverted bad = reverted;
  bad.reverted_event_id = Uuid{};
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: RevertedEventID is invalid");
  bad = reverted;
  bad.basis = ContextBasis{};
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: Basis is invalid");
  bad = reverted;
  bad.post_context.basis = ContextBasis{3, kEventId};  // not the successor of the basis
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: PostContext is invalid");
}

// docs/masking.md: a masking names the tool results it changed and measures the changed request
// at the next revision; its validation order is the header's contract.
TEST(EncodeEvent, ToolOutputsMaskedNamesTheResultsAndMeasuresTheMaskedRequest) {
  ToolOutputsMasked masked{LoopHeader(),
                           ContextBasis{3, kThrough},
                           {Id(0x61), Id(0x62)},
                           Measurement(ContextBasis{4, kEventId})};
  const std::string bytes = Encoded(masked);
  EXPECT_NE(bytes.find(R"("type":"ToolOutputsMasked","v":1,)"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"("message_ids":["00000000-0000-4000-8000-000000000061",)"
                       R"("00000000-0000-4000-8000-000000000062"],"post_context":)"),
            std::string::npos)
      << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(masked));
  ToolOutputsMasked bad = masked;
  bad.header.visibility = Visibility::kInternal;
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: Visibility is invalid");
  bad = masked;
  bad.basis = ContextBasis{};
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: Basis is invalid");
  bad = masked;
  bad.message_ids.clear();
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: MessageIDs is invalid");
  bad.message_ids = {Id(0x61), Id(0x61)};
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: MessageIDs is invalid");
  bad.message_ids = {Id(0x61), Uuid{}};
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: MessageIDs is invalid");
  bad = masked;
  bad.post_context.basis = ContextBasis{3, kEventId};  // not the successor of the basis
  EXPECT_EQ(Verdict(EncodeEvent(bad).error()), "invalid: PostContext is invalid");

  ToolOutputsUnmasked unmasked{
      LoopHeader(), ContextBasis{4, kThrough}, {Id(0x62)}, Measurement(ContextBasis{5, kEventId})};
  const std::string unmasked_bytes = Encoded(unmasked);
  EXPECT_NE(unmasked_bytes.find(R"("type":"ToolOutputsUnmasked","v":1,)"), std::string::npos);
  auto back = DecodeEvent(unmasked_bytes);
  ASSERT_TRUE(back.ok()) << DescribeEventError(back.error());
  EXPECT_EQ(*back, Event(unmasked));
}

// docs/chunked.md: a chunk's summary names its attempt, its place and its content's digest, and
// round-trips byte for byte; its validation order is the header's contract.
TEST(EncodeEvent, CompactionChunkSummarizedNamesItsPlaceAndContent) {
  const CompactionChunkSummarized chunk = ValidChunk();
  const std::string bytes = Encoded(chunk);
  EXPECT_NE(bytes.find(R"("type":"CompactionChunkSummarized","v":1,)"), std::string::npos);
  EXPECT_EQ(bytes.find("waiter_command_ids"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"("chunk":1,"chunks":3,"digest":")"), std::string::npos) << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(chunk));
  const std::vector<std::pair<std::function<void(CompactionChunkSummarized&)>, std::string>> cases =
      {
          {[](auto& e) { e.attempt_id = Uuid{}; }, "invalid: AttemptID is invalid"},
          {[](auto& e) { e.basis = ContextBasis{}; }, "invalid: Basis is invalid"},
          {[](auto& e) { e.request_fingerprint = Fingerprint{}; },
           "invalid: RequestFingerprint is invalid"},
          {[](auto& e) { e.chunks = 1; }, "invalid: Chunks is invalid"},
          {[](auto& e) { e.chunks = kMaxChunks + 1; }, "invalid: Chunks is invalid"},
          {[](auto& e) { e.chunk = 3; }, "invalid: Chunk is invalid"},
          {[](auto& e) { e.digest = Fingerprint{}; }, "invalid: Digest is invalid"},
          {[](auto& e) { e.summary = UserMessage{}; }, "invalid: Summary is invalid"},
      };
  for (const auto& [mutate, verdict] : cases) {
    CompactionChunkSummarized bad = chunk;
    mutate(bad);
    auto encoded = EncodeEvent(bad);
    ASSERT_FALSE(encoded.ok()) << verdict;
    EXPECT_EQ(Verdict(encoded.error()), verdict);
  }
}

// docs/preview.md: a proposal carries what the commit would install and what it would leave out,
// and round-trips byte for byte; its validation order is the header's contract.
TEST(EncodeEvent, CompactionProposedCarriesTheSummaryTheKeptIdsAndTheCountAfter) {
  const CompactionProposed proposed = ValidProposed();
  const std::string bytes = Encoded(proposed);
  EXPECT_NE(bytes.find(R"("type":"CompactionProposed","v":1,)"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"("replaced":2,"kept":["00000000-0000-4000-8000-000000000041"],)"),
            std::string::npos)
      << bytes;
  EXPECT_NE(bytes.find(R"("expires_at":"2024-05-06T07:18:09.123456789Z")"), std::string::npos)
      << bytes;
  EXPECT_EQ(bytes.find("coverage"), std::string::npos) << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(proposed));
  EXPECT_EQ(Encoded(std::get<CompactionProposed>(*decoded)), bytes);

  const std::pair<std::function<void(CompactionProposed&)>, std::string> cases[] = {
      {[](CompactionProposed& e) { e.waiter_command_ids.clear(); },
       "invalid: WaiterCommandIDs is invalid"},
      {[](CompactionProposed& e) { e.reason = CompactionReason::kAutomatic; },
       "invalid: Reason is invalid"},
      {[](CompactionProposed& e) { e.summary = User("  "); }, "invalid: Summary is invalid"},
      {[](CompactionProposed& e) { e.replaced = 0; }, "invalid: Replaced is invalid"},
      {[](CompactionProposed& e) {
         e.kept = {kPinnedMessageId, kPinnedMessageId};
       },
       "invalid: Kept is invalid"},
      {[](CompactionProposed& e) { e.kept = {Uuid{}}; }, "invalid: Kept is invalid"},
      {[](CompactionProposed& e) {
         e.post_context.basis = ContextBasis{2, kEventId};
       },
       "invalid: PostContext is invalid"},
      {[](CompactionProposed& e) { e.expires_at = T0() - std::chrono::seconds(1); },
       "invalid: ExpiresAt is invalid"},
  };
  for (const auto& [mutate, verdict] : cases) {
    CompactionProposed bad = proposed;
    mutate(bad);
    auto encoded = EncodeEvent(bad);
    ASSERT_FALSE(encoded.ok()) << verdict;
    EXPECT_EQ(Verdict(encoded.error()), verdict);
  }
}

// The approval members of a policy (docs/preview.md) are additive: absent for the defaults.
TEST(EncodeEvent, APolicysApprovalIsWrittenOnlyWhenNotTheDefault) {
  LoopCreated created = ValidLoopCreatedWithEverything();
  const std::string plain = Encoded(created);
  EXPECT_EQ(plain.find("approval"), std::string::npos) << plain;
  created.policy->approval = CompactionApproval::kManual;
  created.policy->approval_timeout = std::chrono::seconds(30);
  const std::string manual = Encoded(created);
  EXPECT_NE(manual.find(R"(,"approval":2,"approval_timeout":30000000000})"), std::string::npos)
      << manual;
  auto decoded = DecodeEvent(manual);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(created));
  std::string explicit_auto = manual;
  explicit_auto.replace(explicit_auto.find(R"("approval":2)"), 12, R"("approval":1)");
  EXPECT_FALSE(DecodeEvent(explicit_auto).ok());
}

// Masking in a policy (docs/masking.md) is additive too: absent when off.
TEST(EncodeEvent, APolicysMaskingIsWrittenOnlyWhenFirst) {
  LoopCreated created = ValidLoopCreatedWithEverything();
  EXPECT_EQ(Encoded(created).find("masking"), std::string::npos);
  created.policy->masking = CompactionMasking::kFirst;
  const std::string first = Encoded(created);
  EXPECT_NE(first.find(R"(,"masking":2})"), std::string::npos) << first;
  auto decoded = DecodeEvent(first);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(created));
  std::string explicit_off = first;
  explicit_off.replace(explicit_off.find(R"("masking":2)"), 11, R"("masking":1)");
  EXPECT_FALSE(DecodeEvent(explicit_off).ok());
}

TEST(InitialMessageId, IsDerivedFromTheCreatedEventAndTheIndexAlone) {
  const Uuid created = Id(0x11);
  EXPECT_EQ(InitialMessageId(created, 0), InitialMessageId(created, 0));
  EXPECT_NE(InitialMessageId(created, 0), InitialMessageId(created, 1));
  EXPECT_NE(InitialMessageId(created, 0), InitialMessageId(Id(0x12), 0));
  EXPECT_EQ(InitialMessageId(created, 7).version(), 8);
  // A fixed vector (computed apart, with Python's hashlib): journals written today derive the
  // same ids forever.
  EXPECT_EQ(InitialMessageId(created, 0).ToString(), "5f3a9390-e32d-8d7e-84f6-43c27baf6aa6");
}

TEST(EncodeEvent, GoldenWaiterReplyWithCause) {
  EXPECT_EQ(
      Encoded(ValidWaiterRejected()),
      R"({"type":"CompactWaiterRejected","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)"
      R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
      R"("event_id":"c1738255-8cad-80f6-8fcb-d69d4b4cf3e7",)"
      R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
      R"("cause":{"command_id":"00000000-0000-4000-8000-000000000031","agency":1},)"
      R"("attempt_id":"00000000-0000-4000-8000-000000000020","reason":3})");
}

// A turn event's header after its session id, as TurnHeader() encodes.
const std::string kTurnHeaderRest = R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
                                    R"("turn_id":"00000000-0000-4000-8000-0000000000a3",)"
                                    R"("step_id":"00000000-0000-4000-8000-0000000000a4",)"
                                    R"("event_id":"00000000-0000-4000-8000-000000000010",)"
                                    R"("created_at":"2024-05-06T07:08:09.123456789Z",)";

TEST(EncodeEvent, GoldenTurnAndSessionEvents) {
  EXPECT_EQ(
      Encoded(ValidMessageCommitted()),
      R"({"type":"MessageCommitted","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)" +
          kTurnHeaderRest +
          R"("message":{"role":"user","blocks":[{"type":"text","text":"hello"}]},)"
          R"("input_command_id":"00000000-0000-4000-8000-000000000040"})");
  EXPECT_EQ(Encoded(SessionIdle{SessionHeader()}),
            R"({"type":"SessionIdle","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)"
            R"("event_id":"00000000-0000-4000-8000-000000000010",)"
            R"("created_at":"2024-05-06T07:08:09.123456789Z"})");
  // A zero input command id is omitted.
  const std::string assistant =
      Encoded(MessageCommitted{TurnHeader(), AssistantMessage{{Text("hi")}, std::nullopt}, Uuid()});
  EXPECT_EQ(assistant.find("input_command_id"), std::string::npos);
  EXPECT_NE(
      assistant.find(
          R"("message":{"role":"assistant","blocks":[{"type":"text","text":"hi"}],"usage":null})"),
      std::string::npos);
}

TEST(EncodeEvent, EveryCauseMemberInOrder) {
  SessionActive e{SessionHeader()};
  e.header.cause = Cause{Id(1), Id(2), Id(3), Id(4), Id(5), Id(6), Id(7), Agency::kUser};
  const std::string encoded = Encoded(e);
  EXPECT_NE(
      encoded.find(R"("cause":{"session_id":"00000000-0000-4000-8000-000000000001",)"
                   R"("loop_id":"00000000-0000-4000-8000-000000000002",)"
                   R"("turn_id":"00000000-0000-4000-8000-000000000003",)"
                   R"("step_id":"00000000-0000-4000-8000-000000000004",)"
                   R"("command_id":"00000000-0000-4000-8000-000000000005",)"
                   R"("event_id":"00000000-0000-4000-8000-000000000006",)"
                   R"("tool_execution_id":"00000000-0000-4000-8000-000000000007","agency":1}})"),
      std::string::npos)
      << encoded;
}

TEST(EncodeEvent, RefusesEphemeralEventsBeforeValidating) {
  for (Event event : {Event(ValidStarted()), Event(ValidPressure()),
                      Event(InputQueued{CommandCause(LoopHeader(), Id(0x40), Agency::kUser)})}) {
    HeaderOf(event).event_id = Uuid();  // invalid too: the class is judged first
    auto encoded = EncodeEvent(event);
    ASSERT_FALSE(encoded.ok());
    const auto* error = std::get_if<EphemeralNotPersistableError>(&encoded.error());
    ASSERT_NE(error, nullptr) << EventTypeName(event);
    EXPECT_EQ(error->type, EventTypeName(event));
    EXPECT_EQ(DescribeEventError(encoded.error()), "event " + std::string(EventTypeName(event)) +
                                                       " is ephemeral and cannot be persisted");
  }
}

TEST(EncodeEvent, VisibilityDomainComesBeforeTheClass) {
  CompactionStarted started = ValidStarted();
  started.header.visibility = static_cast<Visibility>(2);
  auto encoded = EncodeEvent(started);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: Visibility is invalid");
}

TEST(EncodeEvent, ValidatesIdentityThenBody) {
  CompactionRejected e = ValidRejected();
  e.reject_reason = CompactRejectReason::kUnspecified;
  auto encoded = EncodeEvent(e);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: RejectReason is invalid");
  e.header.session_id = Uuid();
  encoded = EncodeEvent(e);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: SessionID must be set");
  EXPECT_EQ(DescribeEventError(encoded.error()),
            "event: invalid CompactionRejected: SessionID must be set");
}

TEST(EncodeEvent, RefusesAnEncodingLargerThan16MiB) {
  LoopCreated e = ValidLoopCreated();
  e.history = {User(std::string(kMaxRecordBytes, 'x'))};
  auto encoded = EncodeEvent(e);
  ASSERT_FALSE(encoded.ok());
  const auto* limit = std::get_if<EventLimitError>(&encoded.error());
  ASSERT_NE(limit, nullptr);
  EXPECT_GT(limit->size, kMaxRecordBytes);
  EXPECT_EQ(limit->limit, kMaxRecordBytes);
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(DecodeEvent, EveryEnduringKindRoundTripsExactly) {
  std::size_t enduring = 0;
  for (const Event& event : AllValidEvents()) {
    if (!IsEnduring(event))
      continue;
    ++enduring;
    const std::string bytes = Encoded(event);
    auto decoded = DecodeEvent(bytes);
    ASSERT_TRUE(decoded.ok()) << EventTypeName(event) << ": "
                              << DescribeEventError(decoded.error());
    EXPECT_EQ(*decoded, event) << EventTypeName(event);
    EXPECT_EQ(Encoded(*decoded), bytes) << EventTypeName(event);
  }
  EXPECT_EQ(enduring, 28u);
}

TEST(DecodeEvent, ALoopCreatedWithToolsPolicyAndCompactorRoundTripsExactly) {
  const LoopCreated e = ValidLoopCreatedWithEverything();
  const std::string bytes = Encoded(Event(e));
  // The schema is kept as its text, the description is left out when empty.
  EXPECT_NE(bytes.find(R"("tools":[{"name":"read_file","description":"Reads a \"file\".",)"
                       R"("input_schema":"{\"type\":\"object\",)"),
            std::string::npos)
      << bytes;
  EXPECT_NE(bytes.find(R"({"name":"run-tests_2","input_schema":"{\"type\":\"object\"}"})"),
            std::string::npos);
  EXPECT_NE(bytes.find(R"("compactor":"model:summarizer")"), std::string::npos);
  EXPECT_NE(bytes.find(R"("max_steps_per_turn":12)"), std::string::npos);
  EXPECT_NE(bytes.find(R"("coverage":{"mode":3,"min_ratio":7500,"required":)"), std::string::npos);
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<LoopCreated>(*decoded), e);
  EXPECT_EQ(Encoded(*decoded), bytes);
}

// Coverage mode repair (4, docs/decisions.md P21) is journaled with the loop like the others and
// decodes back to itself; the modes written before it (here enforce, 3) are unchanged above.
TEST(DecodeEvent, ALoopCreatedWithCoverageRepairRoundTripsExactly) {
  LoopCreated e = ValidLoopCreatedWithEverything();
  e.policy->coverage.mode = CoverageMode::kRepair;
  const std::string bytes = Encoded(Event(e));
  EXPECT_NE(bytes.find(R"("coverage":{"mode":4,"min_ratio":7500,"required":)"), std::string::npos)
      << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<LoopCreated>(*decoded).policy->coverage.mode, CoverageMode::kRepair);
  EXPECT_EQ(Encoded(*decoded), bytes);
}

TEST(DecodeEvent, ALoopCreatedWithoutTheNewerMembersIsWhatTheCodecWroteBefore) {
  // The bytes of a LoopCreated as the codec wrote it before tools, policy and compactor were
  // recorded: it decodes with none of them and the default step limit, and re-encodes to the
  // same bytes.
  const std::string before =
      R"({"type":"LoopCreated","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)"
      R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
      R"("event_id":"00000000-0000-4000-8000-000000000011",)"
      R"("created_at":"2024-05-06T07:08:09.123456789Z","kind":1,)"
      R"("model":{"provider":"provider","model":"model"},"compaction_policy":true,"history":[]})";
  auto decoded = DecodeEvent(before);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  const auto& created = std::get<LoopCreated>(*decoded);
  EXPECT_TRUE(created.tools.empty());
  EXPECT_FALSE(created.policy.has_value());
  EXPECT_TRUE(created.compactor.empty());
  EXPECT_EQ(created.max_steps_per_turn, kDefaultMaxStepsPerTurn);
  EXPECT_EQ(Encoded(*decoded), before);
}

// The default step limit is the absent member: a loop made with it is written as before the
// member existed, any other limit is written.
TEST(DecodeEvent, ALoopCreatedWritesItsStepLimitOnlyWhenItIsNotTheDefault) {
  LoopCreated e = ValidLoopCreated();
  EXPECT_EQ(Encoded(Event(e)).find("max_steps_per_turn"), std::string::npos);
  e.max_steps_per_turn = 3;
  const std::string bytes = Encoded(Event(e));
  EXPECT_NE(bytes.find(R"("max_steps_per_turn":3)"), std::string::npos) << bytes;
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(std::get<LoopCreated>(*decoded).max_steps_per_turn, 3u);
  EXPECT_EQ(Encoded(*decoded), bytes);
}

// A long autonomous turn's step limit survives the journal: 100,000 and the largest limit,
// kMaxStepsPerTurn, are written and read back as they are; one more is refused on decode.
TEST(DecodeEvent, ALoopCreatedKeepsAStepLimitUpToTheMaximum) {
  for (const std::uint64_t steps : {std::uint64_t{100000}, kMaxStepsPerTurn}) {
    LoopCreated e = ValidLoopCreated();
    e.max_steps_per_turn = steps;
    const std::string bytes = Encoded(Event(e));
    EXPECT_NE(bytes.find(R"("max_steps_per_turn":)" + std::to_string(steps) + "}"),
              std::string::npos)
        << bytes;
    auto decoded = DecodeEvent(bytes);
    ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
    EXPECT_EQ(std::get<LoopCreated>(*decoded).max_steps_per_turn, steps);
    EXPECT_EQ(Encoded(*decoded), bytes);
  }
  LoopCreated e = ValidLoopCreated();
  e.max_steps_per_turn = 100000;
  const std::string over = Replace(Encoded(Event(e)), R"("max_steps_per_turn":100000)",
                                   R"("max_steps_per_turn":1000001)");
  auto refused = DecodeEvent(over);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(DescribeEventError(refused.error()), HasSubstr("$.max_steps_per_turn"));
}

TEST(DecodeEvent, ALoopCreatedsNewerMembersHaveOneEncodingEach) {
  const std::string bytes = Encoded(Event(ValidLoopCreatedWithEverything()));
  // The decode error's description, or "ok" / the verdict of any other outcome.
  const auto described = [](std::string_view text) {
    auto decoded = DecodeEvent(text);
    if (decoded.ok())
      return std::string("ok");
    if (!std::holds_alternative<EventDecodeError>(decoded.error()))
      return Verdict(decoded.error());
    return DescribeEventError(decoded.error());
  };
  const auto tools_at = bytes.find(R"("tools":)");
  const auto policy_at = bytes.find(R"(,"policy":)");
  ASSERT_NE(tools_at, std::string::npos);
  ASSERT_NE(policy_at, std::string::npos);
  std::string empty_tools = bytes;
  empty_tools.replace(tools_at, policy_at - tools_at, R"("tools":[])");
  EXPECT_THAT(described(empty_tools), HasSubstr("an empty tools is written by omitting it"));
  EXPECT_THAT(described(Replace(bytes, R"("compactor":"model:summarizer")", R"("compactor":"")")),
              HasSubstr("an empty compactor is written by omitting it"));
  EXPECT_THAT(described(Replace(bytes, R"("name":"run-tests_2",)",
                                R"("name":"run-tests_2","description":"",)")),
              HasSubstr("an empty description is written by omitting it"));
  EXPECT_THAT(described(Replace(bytes, R"("min_ratio":7500,)", R"("min_ratio":7500,"extra":1,)")),
              HasSubstr("at $.policy.coverage: unknown member \"extra\""));
  EXPECT_THAT(described(Replace(bytes, R"("automatic":true,)", "")),
              HasSubstr("$.policy.automatic"));
  EXPECT_THAT(described(Replace(bytes, R"("input_schema":"{\"type\":\"object\"}")",
                                R"("input_schema":{"type":"object"})")),
              HasSubstr("$.tools[1].input_schema"));
  EXPECT_EQ(described(Replace(bytes, R"("name":"read_file")", R"("name":"read file")")),
            "invalid: Tools is invalid");
  EXPECT_EQ(
      described(Replace(bytes, R"("compaction_policy":true)", R"("compaction_policy":false)")),
      "invalid: Policy is invalid");
  EXPECT_THAT(described(Replace(bytes, R"("max_steps_per_turn":12)", R"("max_steps_per_turn":64)")),
              HasSubstr("the default max_steps_per_turn (64) is written by omitting it"));
  EXPECT_EQ(described(Replace(bytes, R"("max_steps_per_turn":12)", R"("max_steps_per_turn":0)")),
            "invalid: MaxStepsPerTurn is invalid");
  EXPECT_THAT(
      described(Replace(bytes, R"("max_steps_per_turn":12)", R"("max_steps_per_turn":1000001)")),
      HasSubstr("$.max_steps_per_turn"));
  EXPECT_THAT(
      described(Replace(bytes, R"("max_steps_per_turn":12)", R"("max_steps_per_turn":"12")")),
      HasSubstr("$.max_steps_per_turn"));
}

// --- a loop's creation in several records ----------------------------------------------------

std::vector<Message> TextMessages(std::size_t count, std::size_t bytes) {
  std::vector<Message> history;
  for (std::size_t i = 0; i < count; ++i)
    history.emplace_back(User(std::to_string(i) + std::string(bytes, 'x')));
  return history;
}

TEST(LoopCreationEvents, AHistoryThatFitsIsOneLoopCreated) {
  LoopCreated created = ValidLoopCreated();
  created.system_prompt = "be brief";
  auto events = LoopCreationEvents(created);
  ASSERT_TRUE(events.ok()) << DescribeEventError(events.error());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front(), Event(created));
}

TEST(LoopCreationEvents, ALongerHistoryContinuesInRecordsNoneOverTheCap) {
  constexpr std::size_t kCap = 4096;
  LoopCreated created = ValidLoopCreated();
  created.system_prompt = std::string(500, 's');
  created.history = TextMessages(40, 200);
  auto events = LoopCreationEvents(created, kCap);
  ASSERT_TRUE(events.ok()) << DescribeEventError(events.error());
  ASSERT_GE(events->size(), 3u);
  const auto& first = std::get<LoopCreated>(events->front());
  EXPECT_EQ(first.header, created.header);
  EXPECT_EQ(first.system_prompt, created.system_prompt);
  std::vector<Message> whole = first.history;
  std::vector<Uuid> ids{first.header.event_id};
  for (std::size_t i = 0; i < events->size(); ++i) {
    const std::string bytes = Encoded((*events)[i]);
    EXPECT_LE(bytes.size(), kCap) << i;
    if (i + 1 < events->size()) {
      EXPECT_GT(bytes.size(), kCap / 2) << i << ": every record but the last is nearly full";
    }
    if (i == 0)
      continue;
    const auto& continued = std::get<LoopHistoryContinued>((*events)[i]);
    EXPECT_EQ(continued.header.loop_id, created.header.loop_id);
    EXPECT_EQ(continued.header.created_at, created.header.created_at);
    ids.push_back(continued.header.event_id);
    whole.insert(whole.end(), continued.history.begin(), continued.history.end());
  }
  EXPECT_EQ(whole, created.history);
  EXPECT_EQ(first.continued_history, created.history.size() - first.history.size());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "every record has its own id";
}

TEST(LoopCreationEvents, TheContinuationIdsFollowFromTheCreatedIdAlone) {
  LoopCreated created = ValidLoopCreated();
  created.history = TextMessages(40, 200);
  auto first = LoopCreationEvents(created, 4096);
  auto second = LoopCreationEvents(created, 4096);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_GE(first->size(), 3u);
  EXPECT_EQ(*first, *second);  // nothing minted: the same batch on every run
  created.header.event_id = Uuid::V7();
  auto other = LoopCreationEvents(created, 4096);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(HeaderOf((*other)[1]).event_id, HeaderOf((*first)[1]).event_id);
  EXPECT_EQ(HeaderOf((*first)[1]).event_id.version(), 8);
}

TEST(LoopCreationEvents, AMessageThatCannotFitARecordAloneIsTooLarge) {
  LoopCreated created = ValidLoopCreated();
  created.history = TextMessages(3, 100);
  created.history.push_back(User(std::string(5000, 'y')));
  auto events = LoopCreationEvents(created, 4096);
  ASSERT_FALSE(events.ok());
  EXPECT_EQ(EventErrorKindName(events.error()), "too_large");
  created.header.loop_id = Uuid{};
  EXPECT_EQ(EventErrorKindName(LoopCreationEvents(created, 4096).error()), "invalid");
}

// The refusal names the message (its index, role and encoded size), and CheckLoopCreation, which
// builds nothing, refuses exactly what LoopCreationEvents refuses and accepts what it accepts.
TEST(LoopCreationEvents, ATooLargeMessageIsNamedAndCheckLoopCreationAgrees) {
  LoopCreated created = ValidLoopCreated();
  created.history = TextMessages(3, 100);
  created.history.push_back(User(std::string(5000, 'y')));
  created.history.push_back(User("after"));
  auto events = LoopCreationEvents(created, 4096);
  ASSERT_FALSE(events.ok());
  const auto* limit = std::get_if<EventLimitError>(&events.error());
  ASSERT_NE(limit, nullptr) << DescribeEventError(events.error());
  ASSERT_TRUE(limit->message.has_value());
  EXPECT_EQ(limit->message->index, 3u);
  EXPECT_EQ(limit->message->role, Role::kUser);
  EXPECT_GT(limit->message->bytes, 5000u);
  EXPECT_GT(limit->size, limit->message->bytes);
  EXPECT_EQ(limit->limit, 4096u);
  EXPECT_THAT(limit->Message(), HasSubstr(": history message 3 (user) alone is "));

  LoopCreated bare = created;
  bare.history.clear();
  auto checked = CheckLoopCreation(bare, created.history, 4096);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(DescribeEventError(checked.error()), DescribeEventError(events.error()));

  created.history = TextMessages(40, 200);
  ASSERT_TRUE(LoopCreationEvents(created, 4096).ok());
  EXPECT_TRUE(CheckLoopCreation(bare, created.history, 4096).ok());
  bare.header.loop_id = Uuid{};
  ASSERT_FALSE(CheckLoopCreation(bare, created.history, 4096).ok());
  EXPECT_EQ(EventErrorKindName(CheckLoopCreation(bare, created.history, 4096).error()), "invalid");
}

TEST(DecodeEvent, RoundTripsRichContent) {
  CompactionCommitted e = ValidCommitted();
  e.duration = std::chrono::nanoseconds(1'500'000'001);  // upstream codec test
  e.header.cause = Cause{Id(1), Id(2), Id(3), Id(4), Id(5), Id(6), Id(7), Agency::kUser};
  e.retained = {
      UserMessage{{Text("a \"quoted\" \\ line\nbreak \u2028 <&>"),
                   ImageBlock{"image/png", "", "\x00\x01\xff"}}},
      AssistantMessage{{ThinkingBlock{"hmm", "sig", "base64", R"({"k":[1,2]})", "fmt"},
                        ToolUseBlock{"c1", "ls", R"({"path":"/tmp","n":3})", {}, ""},
                        ToolUseBlock{"c2", "pwd", {}, {}, ""}},
                       Usage{10, 20, 1, 2, 5}},
      UserMessage{{Text("folded")}},
      ToolResultMessage{
          {ToolResultBlock{
              "c2", {Text("/"), DocumentBlock{"text/plain", "n", std::nullopt, "t"}}, true}},
          "c2",
          true},
      ToolResultMessage{{AudioBlock{"audio/wav", std::string()}}, "c1", false},
      SystemMessage{{RefusalBlock{""}}},
  };
  e.post_context.input_tokens = UINT64_MAX;
  e.post_context.input_limit = UINT64_MAX;
  const std::string bytes = Encoded(e);
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(e));
}

TEST(DecodeEvent, MemberOrderAndWhiteSpaceAreFree) {
  const std::string shuffled =
      R"( { "duration" : 1000000000 , "reject_reason":8, "v":1, "type":"CompactionRejected",)"
      R"("basis":{"through_event_id":"00000000-0000-4000-8000-000000000001","revision":1},)"
      R"("reason":2,"waiter_command_ids":["00000000-0000-4000-8000-000000000031"],)"
      R"("attempt_id":"00000000-0000-4000-8000-000000000020",)"
      R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
      R"("event_id":"00000000-0000-4000-8000-000000000010",)"
      R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)"
      "\"session_id\":\"00000000-0000-4000-8000-0000000000a1\"}\n\t ";
  auto decoded = DecodeEvent(shuffled);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(ValidRejected()));
}

TEST(DecodeEvent, ExplicitZeroHeaderIdsAndAnEmptyCauseMeanZero) {
  const std::string bytes = Replace(
      kRejectedWire, R"("created_at")",
      R"("turn_id":"00000000-0000-0000-0000-000000000000","cause":{},"visibility":0,"created_at")");
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  EXPECT_EQ(*decoded, Event(ValidRejected()));
}

// ---------------------------------------------------------------------------------------------
// Decode order and every failure class

struct DecodeCase {
  const char* name;
  std::string bytes;
  const char* expected;
};

std::string CommittedWire() {
  return Encoded(ValidCommitted());
}

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<DecodeCase> DecodeCases() {
  const std::string r = kRejectedWire;
  // A rejection with reject reason `reason` and the detail `detail` (its JSON object).
  const auto with_detail = [&r](int reason, const std::string& detail) {
    return Replace(
        Replace(r, R"("reject_reason":8)", "\"reject_reason\":" + std::to_string(reason)),
        R"("duration":1000000000)", R"("duration":1000000000,"detail":)" + detail);
  };
  const std::string kShrink =
      R"({"kind":"would_not_shrink","tail_tokens":5,"limit":80,"summary_budget":10,)"
      R"("estimate":15,"context_tokens":12})";
  const std::string c = CommittedWire();
  const std::string retained_key = R"("retained":[)";
  const auto with_retained = [&](const std::string& elements) {
    const auto start = c.find(retained_key);
    const auto end = c.find(R"(],"post_context")");
    std::string out = c;
    out.replace(start, end - start + 1, retained_key + elements + "]");
    return out;
  };
  return {
      {"valid", r, "ok"},
      // §5.7 seeds.
      {"seed_rejected_without_members_is_a_decode_error_under_d2",
       R"({"type":"CompactionRejected","v":1})", "decode"},
      {"seed_committed_duration_only_is_a_decode_error_under_d2",
       R"({"type":"CompactionCommitted","v":1,"duration":-1})", "decode"},
      {"seed_resolved_attempt_array", R"({"type":"CompactWaiterResolved","v":1,"attempt_id":[]})",
       "decode"},
      {"seed_started_is_unknown", R"({"type":"CompactionStarted","v":1})", "unknown_type"},
      {"seed_corpus_v10", R"({"0000":"000000000000000000","v":10})", "unsupported_version"},
      // The seeds' intent with every member present: identity comes first.
      {"seed_rejected_without_event_id",
       Replace(r, R"("event_id":"00000000-0000-4000-8000-000000000010",)", ""),
       "invalid: EventID must be set"},
      {"seed_committed_duration_negative_identity_first",
       Replace(Replace(c, R"("duration":1500000000)", R"("duration":-1)"),
               R"("event_id":"00000000-0000-4000-8000-000000000010",)", ""),
       "invalid: EventID must be set"},
      {"committed_duration_negative", Replace(c, R"("duration":1500000000)", R"("duration":-1)"),
       "invalid: Duration is invalid"},
      // Upstream codec tests.
      {"reject_reason_0", Replace(r, R"("reject_reason":8)", R"("reject_reason":0)"),
       "invalid: RejectReason is invalid"},
      {"reject_reason_200", Replace(r, R"("reject_reason":8)", R"("reject_reason":200)"),
       "invalid: RejectReason is invalid"},
      {"reject_reason_256", Replace(r, R"("reject_reason":8)", R"("reject_reason":256)"), "decode"},
      {"reason_0", Replace(r, R"("reason":2)", R"("reason":0)"), "invalid: Reason is invalid"},
      {"reason_3", Replace(r, R"("reason":2)", R"("reason":3)"), "invalid: Reason is invalid"},
      {"retained_null_element_is_a_decode_error_under_d2", with_retained("null"), "decode"},
      {"retained_alien_role", with_retained(R"({"role":"alien","blocks":[]})"), "decode"},
      {"retained_null_block", with_retained(R"({"role":"user","blocks":[null]})"), "decode"},
      {"retained_empty", with_retained(""), "ok"},
      {"retained_absent_is_a_decode_error_under_d2",
       Replace(
           c,
           R"("retained":[{"role":"user","blocks":[{"type":"text","text":"keep this"}]},{"role":"assistant","blocks":[{"type":"text","text":"kept"}],"usage":null}],)",
           ""),
       "decode"},
      {"retained_null_is_a_decode_error_under_d2",
       with_retained("").replace(c.find(retained_key) + 11, 2, "null"), "decode"},
      {"retained_assistant_anchor",
       with_retained(R"({"role":"assistant","blocks":[],"usage":null})"),
       "invalid: Retained is invalid"},
      // Version 2 retains a step whose calls are still open; version 1 did not.
      {"retained_open_call_v2",
       with_retained(
           R"({"role":"user","blocks":[]},{"role":"assistant","blocks":[{"type":"tool_use","id":"c","name":"n","input":null}],"usage":null})"),
       "ok"},
      {"retained_open_call_v1",
       Replace(
           with_retained(
               R"({"role":"user","blocks":[]},{"role":"assistant","blocks":[{"type":"tool_use","id":"c","name":"n","input":null}],"usage":null})"),
           R"("v":2)", R"("v":1)"),
       "invalid: Retained is invalid"},
      {"committed_v3", Replace(c, R"("v":2)", R"("v":3)"), "unsupported_version"},
      {"detail_unknown_kind",
       Replace(r, R"("duration":1000000000)", R"("duration":1000000000,"detail":{"kind":"why"})"),
       "decode"},
      {"detail_unknown_member",
       Replace(r, R"("duration":1000000000)",
               R"("duration":1000000000,"detail":{"kind":"no_history","x":1})"),
       "decode"},
      {"detail_of_another_reason",
       Replace(r, R"("duration":1000000000)",
               R"("duration":1000000000,"detail":{"kind":"no_history"})"),
       "invalid: Detail is invalid"},
      {"detail_missing_number",
       Replace(Replace(r, R"("reject_reason":8)", R"("reject_reason":7)"),
               R"("duration":1000000000)",
               R"("duration":1000000000,"detail":{"kind":"open_tool_call"})"),
       "invalid: Detail is invalid"},
      {"detail_extra_number",
       Replace(Replace(r, R"("reject_reason":8)", R"("reject_reason":7)"),
               R"("duration":1000000000)",
               R"("duration":1000000000,"detail":{"kind":"no_history","limit":3})"),
       "invalid: Detail is invalid"},
      {"detail_null",
       Replace(r, R"("duration":1000000000)", R"("duration":1000000000,"detail":null)"), "decode"},
      {"detail_would_not_shrink", with_detail(17, kShrink), "ok"},
      {"detail_would_not_shrink_without_estimate",
       with_detail(17, Replace(kShrink, R"("estimate":15,)", "")), "invalid: Detail is invalid"},
      {"detail_would_not_shrink_of_another_reason", with_detail(14, kShrink),
       "invalid: Detail is invalid"},
      {"detail_estimate_on_another_kind",
       with_detail(14, Replace(Replace(kShrink, "would_not_shrink", "tail_too_large"),
                               R"(,"context_tokens":12)", "")),
       "invalid: Detail is invalid"},
      {"detail_estimate_negative", with_detail(17, Replace(kShrink, "15", "-1")), "decode"},
      {"reject_reason_20", Replace(r, R"("reject_reason":8)", R"("reject_reason":20)"),
       "invalid: RejectReason is invalid"},
      {"summary_not_user",
       Replace(c, R"("summary":{"role":"user")", R"("summary":{"role":"system")"), "decode"},
      {"summary_blank", Replace(c, R"("text":"summary")", R"("text":" \n\u3000")"),
       "invalid: Summary is invalid"},
      {"summary_null",
       Replace(c, R"("summary":{"role":"user","blocks":[{"type":"text","text":"summary"}]})",
               R"("summary":null)"),
       "decode"},
      {"post_context_quality_4", Replace(c, R"("quality":2)", R"("quality":4)"),
       "invalid: PostContext is invalid"},
      {"post_context_unknown_member", Replace(c, R"("quality":2)", R"("quality":2,"extra":0)"),
       "decode"},
      // The envelope: v first, then type.
      {"v_missing", Replace(r, R"("v":1,)", ""), "unsupported_version"},
      {"v_0_is_unsupported_under_d2", Replace(r, R"("v":1)", R"("v":0)"), "unsupported_version"},
      {"v_2", Replace(r, R"("v":1)", R"("v":2)"), "unsupported_version"},
      {"v_huge", Replace(r, R"("v":1)", R"("v":18446744073709551615)"), "unsupported_version"},
      {"v_string", Replace(r, R"("v":1)", R"("v":"1")"), "decode"},
      {"v_negative", Replace(r, R"("v":1)", R"("v":-1)"), "decode"},
      {"v_float", Replace(r, R"("v":1)", R"("v":1.0)"), "decode"},
      {"v_exponent", Replace(r, R"("v":1)", R"("v":1e0)"), "decode"},
      {"v_null", Replace(r, R"("v":1)", R"("v":null)"), "decode"},
      {"v_before_type", R"({"type":"Nope","v":3})", "unsupported_version"},
      {"v_2_of_an_unknown_type", R"({"type":"Nope","v":2})", "unknown_type"},
      {"v_only", R"({"v":1})", "unknown_type"},
      {"type_not_string", Replace(r, R"("type":"CompactionRejected")", R"("type":7)"), "decode"},
      {"type_wrong_case",
       Replace(r, R"("type":"CompactionRejected")", R"("type":"compactionrejected")"),
       "unknown_type"},
      {"type_member_upper_case_is_not_the_type_under_d2",
       Replace(r, R"("type":"CompactionRejected")", R"("TYPE":"CompactionRejected")"),
       "unknown_type"},
      {"type_context_pressure",
       Replace(r, R"("type":"CompactionRejected")", R"("type":"ContextPressure")"), "unknown_type"},
      {"type_input_queued", Replace(r, R"("type":"CompactionRejected")", R"("type":"InputQueued")"),
       "unknown_type"},
      {"type_empty", Replace(r, R"("type":"CompactionRejected")", R"("type":"")"), "unknown_type"},
      // Strict JSON (D2).
      {"duplicate_top_member", Replace(r, R"("reason":2,)", R"("reason":2,"reason":2,)"), "decode"},
      {"duplicate_nested_member", Replace(r, R"("revision":1,)", R"("revision":1,"revision":1,)"),
       "decode"},
      {"case_variant_member_is_unknown_under_d2",
       Replace(r, R"("reason":2,)", R"("reason":2,"Reason":2,)"), "decode"},
      {"unknown_top_member", Replace(r, R"("reason":2,)", R"("reason":2,"note":"x",)"), "decode"},
      {"unknown_basis_member", Replace(r, R"("revision":1,)", R"("revision":1,"x":1,)"), "decode"},
      {"unknown_cause_member", Replace(r, R"("attempt_id")", R"("cause":{"why":1},"attempt_id")"),
       "decode"},
      {"cause_null", Replace(r, R"("attempt_id")", R"("cause":null,"attempt_id")"), "decode"},
      {"cause_agency_2", Replace(r, R"("attempt_id")", R"("cause":{"agency":2},"attempt_id")"),
       "invalid: Agency is invalid"},
      {"cause_agency_256", Replace(r, R"("attempt_id")", R"("cause":{"agency":256},"attempt_id")"),
       "decode"},
      {"visibility_internal", Replace(r, R"("attempt_id")", R"("visibility":1,"attempt_id")"),
       "invalid: Visibility is invalid"},
      {"visibility_2_identity_first",
       Replace(Replace(r, R"("attempt_id")", R"("visibility":2,"attempt_id")"),
               R"("event_id":"00000000-0000-4000-8000-000000000010",)", ""),
       "invalid: Visibility is invalid"},
      {"visibility_256", Replace(r, R"("attempt_id")", R"("visibility":256,"attempt_id")"),
       "decode"},
      {"missing_attempt", Replace(r, R"("attempt_id":"00000000-0000-4000-8000-000000000020",)", ""),
       "decode"},
      {"missing_created_at", Replace(r, R"("created_at":"2024-05-06T07:08:09.123456789Z",)", ""),
       "decode"},
      {"created_at_without_nanoseconds",
       Replace(r, R"("2024-05-06T07:08:09.123456789Z")", R"("2024-05-06T07:08:09Z")"), "decode"},
      {"created_at_offset",
       Replace(r, R"("2024-05-06T07:08:09.123456789Z")",
               R"("2024-05-06T07:08:09.123456789+00:00")"),
       "decode"},
      {"created_at_epoch",
       Replace(r, R"("2024-05-06T07:08:09.123456789Z")", R"("1970-01-01T00:00:00.000000000Z")"),
       "invalid: CreatedAt must be set"},
      {"uppercase_uuid_is_a_decode_error_under_d2",
       Replace(r, R"("session_id":"00000000-0000-4000-8000-0000000000a1")",
               R"("session_id":"00000000-0000-4000-8000-0000000000A1")"),
       "decode"},
      {"uuid_without_hyphens",
       Replace(r, R"("00000000-0000-4000-8000-000000000020")",
               R"("00000000000040008000000000000020")"),
       "decode"},
      {"zero_attempt_is_invalid_not_malformed",
       Replace(r, R"("00000000-0000-4000-8000-000000000020")",
               R"("00000000-0000-0000-0000-000000000000")"),
       "invalid: AttemptID is invalid"},
      {"waiters_empty", Replace(r, R"(["00000000-0000-4000-8000-000000000031"])", "[]"),
       "invalid: WaiterCommandIDs is invalid"},
      {"waiters_null_is_a_decode_error_under_d2",
       Replace(r, R"(["00000000-0000-4000-8000-000000000031"])", "null"), "decode"},
      {"waiters_duplicate",
       Replace(
           r, R"(["00000000-0000-4000-8000-000000000031"])",
           R"(["00000000-0000-4000-8000-000000000031","00000000-0000-4000-8000-000000000031"])"),
       "invalid: WaiterCommandIDs is invalid"},
      {"fingerprint_as_int_array_is_a_decode_error_under_d2",
       Replace(c, R"("0100000000000000000000000000000000000000000000000000000000000000")",
               "[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"),
       "decode"},
      {"fingerprint_upper_case",
       Replace(c, R"("0100000000000000000000000000000000000000000000000000000000000000")",
               R"("0A00000000000000000000000000000000000000000000000000000000000000")"),
       "decode"},
      {"model_key_capitalized_is_a_decode_error_under_d2",
       Replace(c, R"({"provider":"provider","model":"model"})",
               R"({"Provider":"provider","Model":"model"})"),
       "decode"},
      {"duration_float", Replace(r, R"("duration":1000000000)", R"("duration":1.5)"), "decode"},
      {"duration_string", Replace(r, R"("duration":1000000000)", R"("duration":"1s")"), "decode"},
      {"duration_beyond_int64",
       Replace(r, R"("duration":1000000000)", R"("duration":9223372036854775808)"), "decode"},
      {"duration_int64_max",
       Replace(r, R"("duration":1000000000)", R"("duration":9223372036854775807)"), "ok"},
      {"revision_negative", Replace(r, R"("revision":1)", R"("revision":-1)"), "decode"},
      {"not_an_object_array", "[]", "decode"},
      {"not_an_object_string", R"("CompactionRejected")", "decode"},
      {"not_an_object_null", "null", "decode"},
      {"empty_input", "", "decode"},
      {"trailing_value", r + " {}", "decode"},
      {"byte_order_mark", "\xEF\xBB\xBF" + r, "decode"},
      {"invalid_utf8_in_string", Replace(c, "keep this", "keep \xC3\x28"), "decode"},
      {"lone_surrogate_escape", Replace(c, "keep this", R"(keep \ud800)"), "decode"},
      {"too_deep",
       Replace(r, R"("reason":2,)",
               R"("reason":2,"x":)" + std::string(600, '[') + std::string(600, ']') + ","),
       "decode"},
  };
}

TEST(DecodeEvent, OrderAndVerdicts) {
  for (const auto& c : DecodeCases()) {
    EXPECT_EQ(DecodeVerdict(c.bytes), c.expected) << c.name;
  }
}

TEST(DecodeEvent, ErrorsCarryTheirDetails) {
  auto decoded = DecodeEvent(Replace(kRejectedWire, R"("v":1)", R"("v":2)"));
  ASSERT_FALSE(decoded.ok());
  const auto* schema = std::get_if<UnsupportedSchemaError>(&decoded.error());
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->kind, "event");
  EXPECT_EQ(schema->version, 2u);
  EXPECT_EQ(DescribeEventError(decoded.error()), "unsupported event schema version 2");

  decoded = DecodeEvent(Replace(kRejectedWire, R"("v":1,)", ""));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(DescribeEventError(decoded.error()), "event without a schema version");

  decoded = DecodeEvent(
      Replace(kRejectedWire, R"("type":"CompactionRejected")", R"("type":"CompactionStarted")"));
  ASSERT_FALSE(decoded.ok());
  const auto* unknown = std::get_if<UnknownEventTypeError>(&decoded.error());
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->type, "CompactionStarted");
  EXPECT_EQ(DescribeEventError(decoded.error()), R"(unknown event type "CompactionStarted")");

  decoded = DecodeEvent(R"({"v":1,"type":")" + std::string(1000, 'A') + "\"}");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(std::get<UnknownEventTypeError>(decoded.error()).type.size(), 128u);

  decoded = DecodeEvent(Replace(kRejectedWire, R"("reason":2,)", R"("reason":2,"note":"x",)"));
  ASSERT_FALSE(decoded.ok());
  const auto* decode = std::get_if<EventDecodeError>(&decoded.error());
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->type, "CompactionRejected");
  ASSERT_TRUE(std::holds_alternative<JsonError>(decode->cause));
  EXPECT_EQ(std::get<JsonError>(decode->cause).kind, JsonErrorKind::kUnknownMember);
  EXPECT_EQ(
      DescribeEventError(decoded.error()),
      R"(cannot decode event CompactionRejected: unknown_member at $: unknown member "note")");

  // A message failure keeps the content codec's error and path.
  decoded = DecodeEvent(Replace(CommittedWire(),
                                R"("role":"user","blocks":[{"type":"text","text":"keep this"}])",
                                R"("role":"user","blocks":[null])"));
  ASSERT_FALSE(decoded.ok());
  decode = std::get_if<EventDecodeError>(&decoded.error());
  ASSERT_NE(decode, nullptr);
  ASSERT_TRUE(std::holds_alternative<TranscriptError>(decode->cause));
  EXPECT_EQ(std::get<TranscriptError>(decode->cause).kind, TranscriptErrorKind::kBlock);
  EXPECT_EQ(std::get<TranscriptError>(decode->cause).path, "$.retained[0].blocks[0]");

  decoded = DecodeEvent("{");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(std::get<EventDecodeError>(decoded.error()).type, "");
  EXPECT_EQ(EventErrorKindName(decoded.error()), "decode");
}

TEST(DecodeEvent, SizeLimitIsCheckedFirstAndIsInclusive) {
  std::string exact = kRejectedWire;
  exact.resize(kMaxRecordBytes, ' ');  // trailing white space is allowed
  EXPECT_EQ(DecodeVerdict(exact), "ok");
  exact.push_back(' ');
  EXPECT_EQ(DecodeVerdict(exact), "too_large");
  const std::string garbage(kMaxRecordBytes + 1, '\xff');
  auto decoded = DecodeEvent(garbage);
  ASSERT_FALSE(decoded.ok());
  const auto& limit = std::get<EventLimitError>(decoded.error());
  EXPECT_EQ(limit.size, kMaxRecordBytes + 1);
  EXPECT_EQ(DescribeEventError(decoded.error()),
            "event of 16777217 bytes exceeds the limit of 16777216");
}

TEST(DecodeEvent, RetainedAndHistoryCountLimits) {
  CompactionCommitted e = ValidCommitted();
  e.retained.assign(kMaxRetainedMessages, User("u"));
  auto decoded = DecodeEvent(Encoded(e));
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  e.retained.push_back(User("u"));
  decoded = DecodeEvent(Encoded(e));  // the encoder does not count; the decoder does
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(EventErrorKindName(decoded.error()), "decode");

  LoopCreated loop = ValidLoopCreated();
  loop.history.assign(kMaxHistoryMessages, UserMessage{});
  EXPECT_EQ(DecodeVerdict(Encoded(loop)), "ok");
  loop.history.push_back(UserMessage{});
  EXPECT_EQ(DecodeVerdict(Encoded(loop)), "decode");
}

TEST(DecodeEvent, ToolResultNestingInRetainedMessages) {
  const auto nested = [](int levels) {
    Block block = Text("deep");
    for (int i = 0; i < levels; ++i)
      block = ToolResultBlock{"x", {block}, false};
    return block;
  };
  CompactionCommitted e = ValidCommitted();
  e.retained = {UserMessage{{nested(128)}}};
  const std::string bytes = Encoded(e);
  EXPECT_EQ(DecodeVerdict(bytes), "ok");
  // One level deeper: the codec reports the block, not the JSON depth.
  const std::string deeper = Replace(
      bytes, R"({"type":"text","text":"deep"})",
      R"({"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"deep"}],"is_error":false})");
  auto decoded = DecodeEvent(deeper);
  ASSERT_FALSE(decoded.ok());
  const auto& error = std::get<EventDecodeError>(decoded.error());
  ASSERT_TRUE(std::holds_alternative<TranscriptError>(error.cause));
  EXPECT_EQ(std::get<TranscriptError>(error.cause).kind, TranscriptErrorKind::kBlock);
}

TEST(DecodeEvent, RawJsonNumbersAreNormalizedOnce) {
  MessageCommitted e{TurnHeader(),
                     AssistantMessage{{ToolUseBlock{"c", "n", R"({"n":1E+2})", {}, ""}}, {}},
                     Uuid()};
  const std::string bytes = Encoded(e);
  EXPECT_NE(bytes.find(R"("input":{"n":1E+2})"), std::string::npos);
  auto decoded = DecodeEvent(bytes);
  ASSERT_TRUE(decoded.ok());
  const auto& message = std::get<MessageCommitted>(*decoded).message;
  const auto* call = message.blocks()[0].as<ToolUseBlock>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->input, R"({"n":100.0})");
  // From then on the text is stable.
  const std::string again = Encoded(*decoded);
  EXPECT_EQ(Encoded(DecodeEvent(again).value()), again);
}

// A TurnFailed as the codec has always written it: the reason is its name.
const std::string kTurnFailedWire =
    R"({"type":"TurnFailed","v":1,"session_id":"00000000-0000-4000-8000-0000000000a1",)" +
    kTurnHeaderRest + R"("reason":"step_limit","detail":"the turn made too many model calls"})";

// Every reason a journal has held decodes to its enum and re-encodes to the same bytes, so a
// journal written when the reason was a string restores unchanged.
TEST(DecodeEvent, EveryTurnFailureReasonAJournalHoldsDecodesToItsEnum) {
  const std::vector<std::pair<std::string, TurnFailReason>> reasons = {
      {"context_limit", TurnFailReason::kContextLimit},
      {"context_limit_unknown", TurnFailReason::kContextLimitUnknown},
      {"context_count_failed", TurnFailReason::kContextCountFailed},
      {"model_error", TurnFailReason::kModelError},
      {"invalid_model_output", TurnFailReason::kInvalidModelOutput},
      {"step_limit", TurnFailReason::kStepLimit},
      {"compaction_finalization", TurnFailReason::kCompactionFinalization},
      {"coverage_insufficient", TurnFailReason::kCoverageInsufficient},
      {"pinned_too_large", TurnFailReason::kPinnedTooLarge},
      {"summary_too_large", TurnFailReason::kSummaryTooLarge},
  };
  for (const auto& [name, reason] : reasons) {
    const std::string wire =
        Replace(kTurnFailedWire, R"("reason":"step_limit")", R"("reason":")" + name + "\"");
    auto decoded = DecodeEvent(wire);
    ASSERT_TRUE(decoded.ok()) << name << ": " << DescribeEventError(decoded.error());
    const auto& failed = std::get<TurnFailed>(*decoded);
    EXPECT_EQ(failed.reason, reason) << name;
    EXPECT_EQ(failed.detail, "the turn made too many model calls");
    EXPECT_FALSE(failed.context) << name;
    EXPECT_FALSE(failed.steps) << name;
    EXPECT_EQ(Encoded(*decoded), wire) << name;
  }
}

// A reason this version does not know is a typed decode error that names the member, never an
// event with an unset reason.
TEST(DecodeEvent, AnUnknownTurnFailureReasonIsADecodeError) {
  for (const std::string reason : {"tool_error", "", "Step_limit", "step_limit ", "1"}) {
    const std::string wire =
        Replace(kTurnFailedWire, R"("reason":"step_limit")", R"("reason":")" + reason + "\"");
    EXPECT_EQ(DecodeVerdict(wire), "decode") << reason;
    EXPECT_THAT(DecodeDescription(wire), HasSubstr("not a turn failure reason")) << reason;
    EXPECT_THAT(DecodeDescription(wire), HasSubstr("reason")) << reason;
  }
  EXPECT_EQ(DecodeVerdict(Replace(kTurnFailedWire, R"("reason":"step_limit")", R"("reason":6)")),
            "decode");
}

// The measurement members are additive: written after the detail only when set, read back
// exactly, and checked (a partial object, an unknown member, a measurement a reason does not
// have, a figure that does not reach its limit).
TEST(EncodeEvent, ATurnFailuresMeasurementIsAdditive) {
  auto decoded = DecodeEvent(kTurnFailedWire);
  ASSERT_TRUE(decoded.ok()) << DescribeEventError(decoded.error());
  TurnFailed steps = std::get<TurnFailed>(*decoded);
  EXPECT_EQ(Encoded(steps), kTurnFailedWire);
  steps.steps = TurnFailedSteps{64, 64};
  const std::string steps_wire = Encoded(steps);
  EXPECT_EQ(steps_wire,
            Replace(kTurnFailedWire, R"(calls"})", R"(calls","steps":{"made":64,"limit":64}})"));
  ExpectRoundTripWith(steps, R"("steps":{"made":64,"limit":64})");

  TurnFailed context = steps;
  context.reason = TurnFailReason::kContextLimit;
  context.steps.reset();
  context.context = TurnFailedContext{1200, 1000};
  ExpectRoundTripWith(context, R"(calls","context":{"input_tokens":1200,"input_limit":1000}})");

  EXPECT_THAT(DecodeDescription(Replace(steps_wire, R"(,"limit":64)", "")), HasSubstr("limit"));
  EXPECT_THAT(DecodeDescription(Replace(steps_wire, R"("limit":64)", R"("limit":64,"x":1)")),
              HasSubstr("unknown member \"x\""));
  EXPECT_EQ(DecodeVerdict(Replace(steps_wire, R"("made":64)", R"("made":63)")),
            "invalid: Steps is invalid");
  EXPECT_EQ(DecodeVerdict(Replace(steps_wire, R"("step_limit")", R"("model_error")")),
            "invalid: Steps is invalid");
  EXPECT_EQ(DecodeVerdict(Replace(steps_wire, R"("made":64)", R"("made":-1)")), "decode");
}

}  // namespace
}  // namespace harness
