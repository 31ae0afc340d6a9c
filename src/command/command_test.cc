// Commands: validation orders (docs/spec/contracts.md §6 and ours), the durable intent codec
// under docs/spec/decisions.md D2, and its properties.
#include "harness/command/command.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "harness/command/codec.h"
#include "harness/compaction/reasons.h"
#include "harness/event/compaction.h"

namespace harness {
namespace {

Uuid Id(unsigned n) {
  return Uuid::Parse(fmt::format("00000000-0000-4000-8000-{:012x}", n)).value();
}

EventTime T0() {
  using namespace std::chrono;
  return EventTime(sys_days(year(2024) / 5 / 6).time_since_epoch() + hours(7) + minutes(8) +
                   seconds(9) + nanoseconds(123456789));
}

CommandHeader Header(Agency agency = Agency::kUser) {
  return CommandHeader{Id(0xc1), Id(0xa1), Id(0xa2), agency, T0()};
}

UserMessage Hello() {
  return UserMessage{{TextBlock{"hello"}}};
}

std::string Verdict(const Status<CommandValidationError>& status) {
  if (status.ok())
    return "valid";
  std::string out(status.error().field);
  out.push_back(' ');
  out.append(FieldRuleText(status.error().rule));
  return out;
}

std::string Verdict(const CommandError& error) {
  std::string out(CommandErrorKindName(error));
  if (const auto* invalid = std::get_if<CommandValidationError>(&error)) {
    out += ": ";
    out.append(invalid->field);
    out.push_back(' ');
    out.append(FieldRuleText(invalid->rule));
  }
  return out;
}

std::string DecodeVerdict(std::string_view bytes) {
  auto decoded = DecodeCommand(bytes);
  return decoded.ok() ? "ok" : Verdict(decoded.error());
}

std::string Encoded(const Command& command) {
  auto encoded = EncodeCommand(command);
  EXPECT_TRUE(encoded.ok()) << (encoded.ok() ? "" : DescribeCommandError(encoded.error()));
  return encoded.ok() ? *encoded : std::string();
}

std::string Replace(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Validation

struct ValidationCase {
  const char* name;
  Command command;
  const char* expected;
};

template <class C>
Command With(void (*mutate)(CommandHeader&), C command) {
  mutate(command.header);
  return command;
}

std::vector<ValidationCase> ValidationCases() {
  const Compact compact{Header(), ""};
  const SubmitInput input{Header(), Hello()};
  const Interrupt interrupt{Header()};
  const Shutdown shutdown{Header()};
  return {
      // §6 upstream cases.
      {"compact_manual", compact, "valid"},
      {"compact_automatic", Compact{Header(Agency::kMachine), ""}, "valid"},
      {"compact_command_missing", With([](CommandHeader& h) { h.command_id = Uuid(); }, compact),
       "CommandID must be set"},
      {"compact_session_missing", With([](CommandHeader& h) { h.session_id = Uuid(); }, compact),
       "SessionID must be set"},
      {"compact_loop_missing", With([](CommandHeader& h) { h.loop_id = Uuid(); }, compact),
       "LoopID must be set"},
      {"compact_agency_2",
       With([](CommandHeader& h) { h.agency = static_cast<Agency>(2); }, compact),
       "Agency is invalid"},
      // Order.
      {"compact_command_before_session",
       With(
           [](CommandHeader& h) {
             h.command_id = Uuid();
             h.session_id = Uuid();
           },
           compact),
       "CommandID must be set"},
      {"compact_session_before_loop",
       With(
           [](CommandHeader& h) {
             h.session_id = Uuid();
             h.loop_id = Uuid();
           },
           compact),
       "SessionID must be set"},
      {"compact_loop_before_agency",
       With(
           [](CommandHeader& h) {
             h.loop_id = Uuid();
             h.agency = static_cast<Agency>(7);
           },
           compact),
       "LoopID must be set"},
      {"compact_agency_before_created_at",
       With(
           [](CommandHeader& h) {
             h.agency = static_cast<Agency>(7);
             h.created_at = EventTime();
           },
           compact),
       "Agency is invalid"},
      // Ours: created_at.
      {"compact_created_at_missing",
       With([](CommandHeader& h) { h.created_at = EventTime(); }, compact),
       "CreatedAt must be set"},
      // SubmitInput.
      {"input_valid", input, "valid"},
      {"input_loop_missing", With([](CommandHeader& h) { h.loop_id = Uuid(); }, input),
       "LoopID must be set"},
      {"input_empty_message", SubmitInput{Header(), UserMessage{}}, "valid"},
      {"input_tool_result_block",
       SubmitInput{Header(), UserMessage{{ToolResultBlock{"x", {}, false}}}}, "valid"},
      {"input_bad_raw_json",
       SubmitInput{Header(), UserMessage{{ToolResultBlock{
                                 "x", {ToolUseBlock{"c", "n", "", {}, ""}}, false}}}},
       "Message is invalid"},
      {"input_header_before_message",
       With([](CommandHeader& h) { h.created_at = EventTime(); },
            SubmitInput{Header(), UserMessage{{ToolUseBlock{"c", "n", "{", {}, ""}}}}),
       "CreatedAt must be set"},
      // Interrupt.
      {"interrupt_valid", interrupt, "valid"},
      {"interrupt_loop_missing", With([](CommandHeader& h) { h.loop_id = Uuid(); }, interrupt),
       "LoopID must be set"},
      {"interrupt_agency_2",
       With([](CommandHeader& h) { h.agency = static_cast<Agency>(2); }, interrupt),
       "Agency is invalid"},
      // Shutdown: the loop is optional.
      {"shutdown_valid", shutdown, "valid"},
      {"shutdown_whole_session", With([](CommandHeader& h) { h.loop_id = Uuid(); }, shutdown),
       "valid"},
      {"shutdown_command_missing", With([](CommandHeader& h) { h.command_id = Uuid(); }, shutdown),
       "CommandID must be set"},
      {"shutdown_session_missing", With([](CommandHeader& h) { h.session_id = Uuid(); }, shutdown),
       "SessionID must be set"},
      {"shutdown_agency_before_created_at",
       With(
           [](CommandHeader& h) {
             h.loop_id = Uuid();
             h.agency = static_cast<Agency>(2);
             h.created_at = EventTime();
           },
           shutdown),
       "Agency is invalid"},
  };
}

TEST(ValidateCommand, Orders) {
  for (const auto& c : ValidationCases()) {
    const auto status = ValidateCommand(c.command);
    EXPECT_EQ(Verdict(status), c.expected) << c.name;
    if (!status.ok()) {
      EXPECT_EQ(status.error().command, CommandTypeName(c.command)) << c.name;
    }
  }
}

TEST(ValidateCommand, MessageNamesCommandFieldAndRule) {
  const auto status = ValidateCommand(Compact{CommandHeader{}, ""});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().Message(), "command: invalid Compact: CommandID must be set");
  const auto agency = ValidateCommand(
      Compact{CommandHeader{Id(1), Id(2), Id(3), static_cast<Agency>(2), T0()}, ""});
  EXPECT_EQ(agency.error().Message(), "command: invalid Compact: Agency is invalid");
}

TEST(Command, AgencyDecidesTheAttemptReason) {
  EXPECT_EQ(CompactionReasonFor(Compact{Header(Agency::kUser), ""}.header.agency),
            CompactionReason::kManual);
  // §8 point 21: Machine is the zero value, and it means Automatic.
  EXPECT_EQ(CompactionReasonFor(Compact{}.header.agency), CompactionReason::kAutomatic);
}

TEST(Command, TypeNamesAndHeaders) {
  Command command = SubmitInput{Header(), Hello()};
  EXPECT_EQ(CommandTypeName(command), "SubmitInput");
  EXPECT_EQ(CommandTypeName(Command(Compact{})), "Compact");
  EXPECT_EQ(CommandTypeName(Command(Interrupt{})), "Interrupt");
  EXPECT_EQ(CommandTypeName(Command(Shutdown{})), "Shutdown");
  HeaderOf(command).loop_id = Id(9);
  EXPECT_EQ(std::get<SubmitInput>(command).header.loop_id, Id(9));
}

// ---------------------------------------------------------------------------------------------
// Codec

const std::string kCompactWire =
    R"({"type":"Compact","v":1,"command_id":"00000000-0000-4000-8000-0000000000c1",)"
    R"("session_id":"00000000-0000-4000-8000-0000000000a1",)"
    R"("loop_id":"00000000-0000-4000-8000-0000000000a2","agency":1,)"
    R"("created_at":"2024-05-06T07:08:09.123456789Z"})";

// Instructions for the summarizer (docs/compact-focus.md): an additive member, written only when
// set, so an intent without them is byte for byte what the codec wrote before.
TEST(EncodeCommand, CompactInstructionsAreAnAdditiveLastMember) {
  const Compact focused{Header(), "focus on the \"API\" design\nand its tests"};
  const std::string bytes = Encoded(focused);
  EXPECT_EQ(bytes, kCompactWire.substr(0, kCompactWire.size() - 1) +
                       R"(,"instructions":"focus on the \"API\" design\nand its tests"})");
  auto decoded = DecodeCommand(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeCommandError(decoded.error());
  EXPECT_EQ(*decoded, Command(focused));
  // An empty member has no encoding: "none" is its absence.
  const std::string empty =
      kCompactWire.substr(0, kCompactWire.size() - 1) + R"(,"instructions":""})";
  auto refused = DecodeCommand(empty);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(DescribeCommandError(refused.error())
                .find("empty instructions are written by "
                      "omitting them"),
            std::string::npos);
}

// A preview (docs/preview.md): an additive member, written only when asked, after the
// instructions; "false" has no encoding.
TEST(EncodeCommand, CompactPreviewIsAnAdditiveLastMember) {
  const Compact preview{Header(), "keep the API", true};
  const std::string bytes = Encoded(preview);
  EXPECT_EQ(bytes, kCompactWire.substr(0, kCompactWire.size() - 1) +
                       R"(,"instructions":"keep the API","preview":true})");
  auto decoded = DecodeCommand(bytes);
  ASSERT_TRUE(decoded.ok()) << DescribeCommandError(decoded.error());
  EXPECT_EQ(*decoded, Command(preview));
  EXPECT_EQ(Encoded(Compact{Header(), "", false}), kCompactWire);
  auto refused =
      DecodeCommand(kCompactWire.substr(0, kCompactWire.size() - 1) + R"(,"preview":false})");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(DescribeCommandError(refused.error()).find("no preview is written by omitting it"),
            std::string::npos);
  EXPECT_FALSE(
      DecodeCommand(kCompactWire.substr(0, kCompactWire.size() - 1) + R"(,"preview":1})").ok());
}

TEST(ValidateCommand, CompactInstructionsRules) {
  const std::pair<std::string, bool> cases[] = {
      {"", true},
      {"focus on the API", true},
      {"line one\n\tline two", true},
      {std::string(kMaxCompactInstructionsBytes, 'a'), true},
      {std::string(kMaxCompactInstructionsBytes + 1, 'a'), false},
      {"bell\a", false},
      {"del\x7f", false},
      {"\xff\xfe", false},  // not UTF-8
      {"  \n ", false},     // blank
  };
  for (const auto& [text, valid] : cases) {
    SCOPED_TRACE(text.substr(0, 20));
    EXPECT_EQ(!CompactInstructionsProblem(text).has_value(), valid);
    const auto status = ValidateCommand(Compact{Header(), text});
    EXPECT_EQ(status.ok(), valid);
    if (!status.ok()) {
      EXPECT_EQ(status.error().field, "Instructions");
    }
  }
}

TEST(EncodeCommand, Golden) {
  EXPECT_EQ(Encoded(Compact{Header(), ""}), kCompactWire);
  EXPECT_EQ(Encoded(SubmitInput{Header(), Hello()}),
            R"({"type":"SubmitInput","v":1,"command_id":"00000000-0000-4000-8000-0000000000c1",)"
            R"("session_id":"00000000-0000-4000-8000-0000000000a1",)"
            R"("loop_id":"00000000-0000-4000-8000-0000000000a2","agency":1,)"
            R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
            R"("message":{"role":"user","blocks":[{"type":"text","text":"hello"}]}})");
  CommandHeader session_wide = Header(Agency::kMachine);
  session_wide.loop_id = Uuid();
  EXPECT_EQ(Encoded(Shutdown{session_wide}),
            R"({"type":"Shutdown","v":1,"command_id":"00000000-0000-4000-8000-0000000000c1",)"
            R"("session_id":"00000000-0000-4000-8000-0000000000a1","agency":0,)"
            R"("created_at":"2024-05-06T07:08:09.123456789Z"})");
}

TEST(EncodeCommand, AnOriginIsWrittenOnlyWhenTheInputIsNotDirect) {
  // Every SubmitInput intent journaled before inputs had an origin is direct, and reads so.
  EXPECT_EQ(Encoded(SubmitInput{Header(), Hello(), InputOrigin::kDirect}),
            Encoded(SubmitInput{Header(), Hello()}));
  EXPECT_EQ(Encoded(SubmitInput{Header(), Hello(), InputOrigin::kDelegateRequest}),
            R"({"type":"SubmitInput","v":1,"command_id":"00000000-0000-4000-8000-0000000000c1",)"
            R"("session_id":"00000000-0000-4000-8000-0000000000a1",)"
            R"("loop_id":"00000000-0000-4000-8000-0000000000a2","agency":1,)"
            R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
            R"("message":{"role":"user","blocks":[{"type":"text","text":"hello"}]},"origin":2})");
  EXPECT_EQ(Encoded(CancelQueuedInput{Header(), Header().session_id}),
            R"({"type":"CancelQueuedInput","v":1,)"
            R"("command_id":"00000000-0000-4000-8000-0000000000c1",)"
            R"("session_id":"00000000-0000-4000-8000-0000000000a1",)"
            R"("loop_id":"00000000-0000-4000-8000-0000000000a2","agency":1,)"
            R"("created_at":"2024-05-06T07:08:09.123456789Z",)"
            R"("input_command_id":"00000000-0000-4000-8000-0000000000a1"})");
}

TEST(EncodeCommand, ACancelWithoutTheInputItCancelsIsRefused) {
  auto encoded = EncodeCommand(CancelQueuedInput{Header(), Uuid()});
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: InputCommandID must be set");
  encoded = EncodeCommand(CancelDelegateRequest{Header(), Uuid()});
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: RequestCommandID must be set");
  encoded = EncodeCommand(SubmitInput{Header(), Hello(), InputOrigin::kUnspecified});
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: Origin is invalid");
}

TEST(EncodeCommand, ValidatesFirst) {
  // The reference's MarshalCommand does not validate; ours refuses what it could not read back.
  auto encoded = EncodeCommand(Compact{CommandHeader{}, ""});
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "invalid: CommandID must be set");
  encoded = EncodeCommand(
      SubmitInput{Header(), UserMessage{{TextBlock{std::string(kMaxRecordBytes, 'x')}}}});
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(Verdict(encoded.error()), "too_large");
}

TEST(DecodeCommand, EveryCommandRoundTrips) {
  CommandHeader session_wide = Header(Agency::kMachine);
  session_wide.loop_id = Uuid();
  const std::vector<Command> commands = {
      Compact{Header(), ""},
      Compact{Header(Agency::kMachine), ""},
      SubmitInput{Header(), Hello()},
      SubmitInput{Header(), UserMessage{}},
      Interrupt{Header()},
      Shutdown{Header()},
      Shutdown{session_wide},
      SubmitInput{Header(), Hello(), InputOrigin::kSubagentResult},
      CancelQueuedInput{Header(), Header().loop_id},
      CancelDelegateRequest{Header(), Header().loop_id}};
  for (const Command& command : commands) {
    const std::string bytes = Encoded(command);
    auto decoded = DecodeCommand(bytes);
    ASSERT_TRUE(decoded.ok()) << bytes << ": " << DescribeCommandError(decoded.error());
    EXPECT_EQ(*decoded, command) << bytes;
    EXPECT_EQ(Encoded(*decoded), bytes);
  }
}

struct DecodeCase {
  const char* name;
  std::string bytes;
  const char* expected;
};

std::vector<DecodeCase> DecodeCases() {
  const std::string c = kCompactWire;
  const std::string input = Encoded(SubmitInput{Header(), Hello()});
  return {
      {"valid", c, "ok"},
      // §6 cases on the wire.
      {"command_id_missing",
       Replace(c, R"("command_id":"00000000-0000-4000-8000-0000000000c1",)", ""),
       "invalid: CommandID must be set"},
      {"session_id_missing",
       Replace(c, R"("session_id":"00000000-0000-4000-8000-0000000000a1",)", ""),
       "invalid: SessionID must be set"},
      {"loop_id_missing", Replace(c, R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)", ""),
       "invalid: LoopID must be set"},
      {"agency_2", Replace(c, R"("agency":1)", R"("agency":2)"), "invalid: Agency is invalid"},
      {"agency_machine", Replace(c, R"("agency":1)", R"("agency":0)"), "ok"},
      {"agency_missing_is_a_decode_error_under_d2", Replace(c, R"("agency":1,)", ""), "decode"},
      {"agency_256", Replace(c, R"("agency":1)", R"("agency":256)"), "decode"},
      {"created_at_missing", Replace(c, R"(,"created_at":"2024-05-06T07:08:09.123456789Z")", ""),
       "decode"},
      {"created_at_epoch",
       Replace(c, "2024-05-06T07:08:09.123456789Z", "1970-01-01T00:00:00.000000000Z"),
       "invalid: CreatedAt must be set"},
      {"zero_command_id",
       Replace(c, "00000000-0000-4000-8000-0000000000c1", "00000000-0000-0000-0000-000000000000"),
       "invalid: CommandID must be set"},
      // D2 strictness where the reference is lenient.
      {"unknown_member_is_a_decode_error_under_d2",
       Replace(c, R"("agency":1,)", R"("agency":1,"x":1,)"), "decode"},
      {"case_variant_member_is_a_decode_error_under_d2",
       Replace(c, R"("agency":1,)", R"("agency":1,"Agency":1,)"), "decode"},
      {"turn_id_is_not_a_command_member_under_d2",
       Replace(c, R"("agency":1,)",
               R"("agency":1,"turn_id":"00000000-0000-4000-8000-000000000001",)"),
       "decode"},
      {"cause_is_not_a_command_member_under_d2",
       Replace(c, R"("agency":1,)", R"("agency":1,"cause":{},)"), "decode"},
      {"duplicate_member", Replace(c, R"("agency":1,)", R"("agency":1,"agency":1,)"), "decode"},
      {"uppercase_uuid_is_a_decode_error_under_d2", Replace(c, "0000000000c1", "0000000000C1"),
       "decode"},
      {"message_on_compact", Replace(c, "}", R"(,"message":{"role":"user","blocks":[]}})"),
       "decode"},
      {"v_missing_is_unsupported_under_d2", Replace(c, R"("v":1,)", ""), "unsupported_version"},
      {"v_0", Replace(c, R"("v":1)", R"("v":0)"), "unsupported_version"},
      {"v_2", Replace(c, R"("v":1)", R"("v":2)"), "unsupported_version"},
      {"v_string", Replace(c, R"("v":1)", R"("v":"1")"), "decode"},
      {"v_before_type", R"({"type":"Nope","v":3})", "unsupported_version"},
      {"type_missing", Replace(c, R"("type":"Compact",)", ""), "unknown_type"},
      {"type_wrong_case", Replace(c, R"("type":"Compact")", R"("type":"compact")"), "unknown_type"},
      {"type_event_name", Replace(c, R"("type":"Compact")", R"("type":"CompactionCommitted")"),
       "unknown_type"},
      {"type_not_string", Replace(c, R"("type":"Compact")", R"("type":["Compact"])"), "decode"},
      {"not_an_object", "[]", "decode"},
      {"syntax", "{", "decode"},
      {"trailing", c + "x", "decode"},
      // SubmitInput.
      {"input_valid", input, "ok"},
      {"input_message_missing",
       Replace(input, R"(,"message":{"role":"user","blocks":[{"type":"text","text":"hello"}]})",
               ""),
       "decode"},
      {"input_message_null",
       Replace(input, R"({"role":"user","blocks":[{"type":"text","text":"hello"}]})", "null"),
       "decode"},
      {"input_message_assistant",
       Replace(input, R"({"role":"user","blocks":[{"type":"text","text":"hello"}]})",
               R"({"role":"assistant","blocks":[],"usage":null})"),
       "decode"},
      {"input_message_unknown_member",
       Replace(input, R"("text":"hello"})", R"("text":"hello","x":1})"), "decode"},
      {"input_header_before_message",
       Replace(Replace(input, R"("text":"hello")", R"("text":"hello","x":1)"),
               R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)", ""),
       "decode"},  // member decoding comes before validation
      {"input_loop_missing",
       Replace(input, R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)", ""),
       "invalid: LoopID must be set"},
      {"shutdown_without_loop",
       Replace(Replace(c, R"("type":"Compact")", R"("type":"Shutdown")"),
               R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)", ""),
       "ok"},
      {"interrupt_without_loop",
       Replace(Replace(c, R"("type":"Compact")", R"("type":"Interrupt")"),
               R"("loop_id":"00000000-0000-4000-8000-0000000000a2",)", ""),
       "invalid: LoopID must be set"},
  };
}

TEST(DecodeCommand, OrderAndVerdicts) {
  for (const auto& c : DecodeCases()) {
    EXPECT_EQ(DecodeVerdict(c.bytes), c.expected) << c.name;
  }
}

TEST(DecodeCommand, SizeLimitAndErrorDetails) {
  std::string exact = kCompactWire;
  exact.resize(kMaxRecordBytes, ' ');
  EXPECT_EQ(DecodeVerdict(exact), "ok");
  exact.push_back(' ');
  EXPECT_EQ(DecodeVerdict(exact), "too_large");
  auto decoded = DecodeCommand(exact);
  EXPECT_EQ(DescribeCommandError(decoded.error()),
            "command of 16777217 bytes exceeds the limit of 16777216");

  decoded = DecodeCommand(Replace(kCompactWire, R"("v":1)", R"("v":2)"));
  EXPECT_EQ(DescribeCommandError(decoded.error()), "unsupported command schema version 2");
  decoded = DecodeCommand(Replace(kCompactWire, R"("v":1,)", ""));
  EXPECT_EQ(DescribeCommandError(decoded.error()), "command without a schema version");
  decoded = DecodeCommand(Replace(kCompactWire, R"("type":"Compact")", R"("type":"Kompact")"));
  EXPECT_EQ(DescribeCommandError(decoded.error()), R"(unknown command type "Kompact")");
  decoded = DecodeCommand(Replace(kCompactWire, R"("agency":1,)", R"("agency":1,"x":1,)"));
  const auto& error = std::get<CommandDecodeError>(decoded.error());
  EXPECT_EQ(error.type, "Compact");
  EXPECT_EQ(DescribeCommandError(decoded.error()),
            R"(cannot decode command Compact: unknown_member at $: unknown member "x")");
  decoded = DecodeCommand(
      Replace(kCompactWire, R"("session_id":"00000000-0000-4000-8000-0000000000a1",)", ""));
  EXPECT_EQ(DescribeCommandError(decoded.error()),
            "command: invalid Compact: SessionID must be set");
}

// ---------------------------------------------------------------------------------------------
// Properties

rc::Gen<Uuid> NonZeroId() {
  return rc::gen::exec([] {
    Uuid::Bytes bytes{};
    for (auto& b : bytes)
      b = *rc::gen::arbitrary<std::uint8_t>();
    bytes[0] |= 0x10;
    return Uuid(bytes);
  });
}

rc::Gen<Command> ValidCommand() {
  return rc::gen::exec([]() -> Command {
    CommandHeader h{
        *NonZeroId(), *NonZeroId(), *NonZeroId(),
        *rc::gen::element(Agency::kMachine, Agency::kUser),
        EventTime(std::chrono::nanoseconds(*rc::gen::inRange<std::int64_t>(1, INT64_MAX)))};
    switch (*rc::gen::inRange(0, 6)) {
      case 0:
        return Compact{h, ""};
      case 4:
        return CancelQueuedInput{h, *NonZeroId()};
      case 5:
        return CancelDelegateRequest{h, *NonZeroId()};
      case 1: {
        UserMessage message;
        const int n = *rc::gen::inRange(0, 3);
        for (int i = 0; i < n; ++i)
          message.blocks.push_back(
              TextBlock{*rc::gen::container<std::string>(rc::gen::inRange('a', 'z'))});
        return SubmitInput{h, std::move(message),
                           *rc::gen::element(InputOrigin::kDirect, InputOrigin::kDelegateRequest,
                                             InputOrigin::kSubagentResult)};
      }
      case 2:
        return Interrupt{h};
      default:
        if (*rc::gen::arbitrary<bool>())
          h.loop_id = Uuid();
        return Shutdown{h};
    }
  });
}

RC_GTEST_PROP(CommandProperties, ValidCommandsRoundTripExactly, ()) {
  const Command command = *ValidCommand();
  const auto encoded = EncodeCommand(command);
  RC_ASSERT(encoded.ok());
  const auto decoded = DecodeCommand(*encoded);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == command);
  const auto again = EncodeCommand(*decoded);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *encoded);
}

RC_GTEST_PROP(CommandProperties, MutatedEncodingsDecodeToACommandOrATypedError, ()) {
  const auto encoded = EncodeCommand(*ValidCommand());
  RC_ASSERT(encoded.ok());
  for (int round = 0; round < 8; ++round) {
    std::string bytes = *encoded;
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        bytes[at] = static_cast<char>(*rc::gen::arbitrary<std::uint8_t>());
        break;
      case 1:
        bytes.erase(at, 1);
        break;
      case 2:
        bytes.resize(at);
        break;
      default: {
        const auto pos = bytes.find_first_of("0123456789abcdef", at);
        if (pos != std::string::npos && bytes[pos] >= '0' && bytes[pos] <= '9')
          bytes[pos] = static_cast<char>('0' + *rc::gen::inRange(0, 10));
      }
    }
    const auto decoded = DecodeCommand(bytes);
    if (!decoded.ok()) {
      RC_ASSERT(!DescribeCommandError(decoded.error()).empty());
      continue;
    }
    RC_ASSERT(ValidateCommand(*decoded).ok());
    const auto again = EncodeCommand(*decoded);
    RC_ASSERT(again.ok());
    const auto twice = DecodeCommand(*again);
    RC_ASSERT(twice.ok());
    RC_ASSERT(*twice == *decoded);
  }
}

}  // namespace
}  // namespace harness
