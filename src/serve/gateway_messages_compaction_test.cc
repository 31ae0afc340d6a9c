// The pure parts of the Messages gateway's compaction
// (serve/gateway_messages_compaction.h): the edit, resuming from a compaction block, the
// marker, the body sent upstream and the answers.
#include "serve/gateway_messages_compaction.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/http/sse.h"

namespace harness::serve {
namespace {

Json Parse(std::string_view text) {
  auto parsed = ParseStrictJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : Json();
}

const Uuid kSession = *Uuid::ParseCanonical("01890a5d-ac96-774b-bcce-b302099a8057");

TEST(MessagesCompaction, ReadsTheCompactEditAndItsDefaults) {
  auto read = ReadMessagesGatewayRequest(
      R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],)"
      R"("context_management":{"edits":[{"type":"compact_20260112","trigger":)"
      R"({"type":"input_tokens","value":1200},"instructions":"keep the paths",)"
      R"("pause_after_compaction":true}]}})");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->model, "m");
  EXPECT_TRUE(read->stream);
  ASSERT_TRUE(read->edit);
  EXPECT_EQ(read->edit->trigger, 1200u);
  EXPECT_EQ(read->edit->instructions, "keep the paths");
  EXPECT_TRUE(read->edit->pause_after_compaction);
  EXPECT_FALSE(read->messages);
  EXPECT_EQ(read->conversation.transcript.size(), 1u);

  auto defaults = ReadMessagesGatewayRequest(
      R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112",)"
      R"("trigger":null,"instructions":null}]}})");
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  ASSERT_TRUE(defaults->edit);
  EXPECT_EQ(defaults->edit->trigger, kDefaultCompactTrigger);
  EXPECT_EQ(defaults->edit->instructions, "");
  EXPECT_FALSE(defaults->edit->pause_after_compaction);
  EXPECT_FALSE(defaults->stream);

  auto none = ReadMessagesGatewayRequest(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->edit);
}

TEST(MessagesCompaction, MalformedRequestsAreInvalidRequestErrorsNamingTheField) {
  struct Case {
    const char* body;
    const char* names;
  };
  const Case cases[] = {
      {R"([])", "JSON object"},
      {R"({"messages":[],)", "strict JSON"},
      {R"({"model":1,"messages":[]})", "$.model"},
      {R"({"stream":"yes","messages":[]})", "$.stream"},
      {R"({"model":"m"})", "$.messages"},
      {R"({"messages":[],"context_management":[]})", "$.context_management"},
      {R"({"messages":[],"context_management":{"edits":{}}})", "$.context_management.edits"},
      {R"({"messages":[],"context_management":{"edits":[{"kind":1}]}})", "edits[0]"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
       R"({"type":"turns","value":3}}]}})",
       "trigger.type"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
       R"({"type":"input_tokens","value":0}}]}})",
       "trigger.value"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
       R"({"type":"input_tokens","value":-5}}]}})",
       "trigger.value"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
       R"({"type":"input_tokens","value":5,"unit":"k"}}]}})",
       "unit"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112","keep":2}]}})",
       "keep"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112",)"
       R"("instructions":7}]}})",
       "instructions"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112",)"
       R"("pause_after_compaction":"no"}]}})",
       "pause_after_compaction"},
      {R"({"messages":[],"context_management":{"edits":[{"type":"compact_20260112"},)"
       R"({"type":"compact_20260112"}]}})",
       "edits[1]"},
      {R"({"messages":[{"role":"robot","content":"x"}]})", "$.messages[0]"},
  };
  for (const Case& c : cases) {
    auto read = ReadMessagesGatewayRequest(c.body);
    ASSERT_FALSE(read.ok()) << c.body;
    EXPECT_EQ(read.error().status, 400u) << c.body;
    EXPECT_EQ(read.error().type, "invalid_request_error") << c.body;
    EXPECT_NE(read.error().message.find(c.names), std::string::npos)
        << c.body << " -> " << read.error().message;
  }
  DialectLimits small;
  small.max_bytes = 8;
  auto large = ReadMessagesGatewayRequest(R"({"messages":[]})", small);
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.error().status, 413u);
  EXPECT_EQ(large.error().type, "request_too_large");
}

TEST(MessagesCompaction, TheCompactionIsDueWhenTheInputExceedsTheTrigger) {
  CompactEdit edit;
  edit.trigger = 100;
  EXPECT_FALSE(CompactionDue(0, edit));
  EXPECT_FALSE(CompactionDue(100, edit));
  EXPECT_TRUE(CompactionDue(101, edit));
}

TEST(MessagesCompaction, ARequestWithoutEditOrBlockGoesUpstreamByteForByte) {
  const std::string body = R"({ "model" : "m", "max_tokens": 10,)"
                           R"( "messages": [ {"role":"user","content":"caf\u00e9"} ] })";
  auto read = ReadMessagesGatewayRequest(body);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(UpstreamMessagesBody(body, *read), body);
}

TEST(MessagesCompaction, TheCompactEditIsRemovedAndOtherEditsAreKept) {
  const std::string body =
      R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],)"
      R"("context_management":{"edits":[{"type":"clear_thinking_20251015"},)"
      R"({"type":"compact_20260112"}]},"temperature":0.5})";
  auto read = ReadMessagesGatewayRequest(body);
  ASSERT_TRUE(read.ok());
  const Json sent = Parse(UpstreamMessagesBody(body, *read));
  EXPECT_EQ(sent,
            Parse(R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],)"
                  R"("context_management":{"edits":[{"type":"clear_thinking_20251015"}]},)"
                  R"("temperature":0.5})"));

  const std::string alone = R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                            R"("context_management":{"edits":[{"type":"compact_20260112"}]}})";
  auto only = ReadMessagesGatewayRequest(alone);
  ASSERT_TRUE(only.ok());
  const Json without = Parse(UpstreamMessagesBody(alone, *only));
  EXPECT_FALSE(without.contains("context_management"));
  EXPECT_EQ(without["messages"], Parse(R"([{"role":"user","content":"hi"}])"));

  const Json replaced =
      Parse(UpstreamMessagesBody(alone, *only, R"([{"role":"user","content":"x"}])"));
  EXPECT_EQ(replaced["messages"], Parse(R"([{"role":"user","content":"x"}])"));
  EXPECT_EQ(replaced["model"], "m");
}

TEST(MessagesCompaction, TheMarkerRoundTripsAndRefusesAnyChange) {
  const CompactionCarry carry{
      kSession,
      {R"({"role":"user","content":"the summary"})", R"({"role":"user","content":"keep me"})"}};
  const std::string marker = EncodeCompactionMarker("the summary", carry);
  auto decoded = DecodeCompactionMarker("the summary", marker);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, carry);

  const CompactionCarry unstored{std::nullopt, {R"({"role":"user","content":"s"})"}};
  auto bare = DecodeCompactionMarker("s", EncodeCompactionMarker("s", unstored));
  ASSERT_TRUE(bare.ok()) << bare.error();
  EXPECT_EQ(*bare, unstored);

  EXPECT_FALSE(DecodeCompactionMarker("the summary, edited", marker).ok());
  std::string changed = marker;
  changed.replace(changed.find("keep me"), 7, "kept us");
  auto tampered = DecodeCompactionMarker("the summary", changed);
  ASSERT_FALSE(tampered.ok());
  EXPECT_NE(tampered.error().find("changed"), std::string::npos);
  auto empty = DecodeCompactionMarker("s", EncodeCompactionMarker("s", {std::nullopt, {}}));
  EXPECT_FALSE(empty.ok());
  auto foreign = DecodeCompactionMarker("the summary", "EqQBCkYIBRgCKkB...opaque");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().find("not a marker this gateway wrote"), std::string::npos);
}

// A conversation that an earlier answer compacted: the client appended that answer (the
// compaction block, then the answer's text) and a new question, as Anthropic documents.
std::string Resumed(std::string_view block) {
  return std::string(R"({"model":"m","system":"be brief","messages":[)"
                     R"({"role":"user","content":"the old question"},)"
                     R"({"role":"assistant","content":"the old answer"},)"
                     R"({"role":"user","content":"the question that was retained"},)"
                     R"({"role":"assistant","content":[{"type":"text","text":"dropped too"},)") +
         std::string(block) +
         R"(,{"type":"text","text":"the answer after it"}]},)"
         R"({"role":"user","content":"the new question"}]})";
}

TEST(MessagesCompaction, ResumingDropsEverythingBeforeTheLastCompactionBlock) {
  const std::string retained = R"({"role":"user","content":"the question that was retained"})";
  const std::string block = CompactionBlockJson(
      "SUMMARY TEXT", {kSession, {R"({"role":"user","content":"SUMMARY TEXT"})", retained}});
  const std::string body = Resumed(block);
  auto read = ReadMessagesGatewayRequest(body);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_TRUE(read->messages);
  ASSERT_TRUE(read->carried);
  EXPECT_EQ(read->carried->session, kSession);
  EXPECT_EQ(read->resumed_at, 3u);
  EXPECT_EQ(read->conversation.system, "be brief");

  const Json messages = Parse(*read->messages);
  ASSERT_EQ(messages.size(), 4u) << *read->messages;
  EXPECT_EQ(messages[0]["role"], "user");
  EXPECT_NE(messages[0].dump().find("SUMMARY TEXT"), std::string::npos);
  EXPECT_EQ(messages[1], Parse(retained));
  EXPECT_EQ(messages[2], Parse(R"({"role":"assistant","content":[{"type":"text",)"
                               R"("text":"the answer after it"}]})"));
  EXPECT_EQ(messages[3], Parse(R"({"role":"user","content":"the new question"})"));
  // The retained element and the later message travel as sent.
  EXPECT_NE(read->messages->find(retained), std::string::npos);
  EXPECT_NE(read->messages->find(R"({"role":"user","content":"the new question"})"),
            std::string::npos);
  for (const char* gone : {"the old question", "the old answer", "dropped too"})
    EXPECT_EQ(read->messages->find(gone), std::string::npos) << gone;
  EXPECT_EQ(read->conversation.transcript.size(), 4u);

  const Json sent = Parse(UpstreamMessagesBody(body, *read));
  EXPECT_EQ(sent["messages"], messages);
  EXPECT_EQ(sent["system"], "be brief");
  EXPECT_EQ(sent.dump().find("compaction"), std::string::npos);
}

TEST(MessagesCompaction, OnlyTheLastCompactionBlockCounts) {
  const std::string older =
      CompactionBlockJson("OLDER", {std::nullopt, {R"({"role":"user","content":"OLDER"})"}});
  const std::string newer =
      CompactionBlockJson("NEWER", {std::nullopt, {R"({"role":"user","content":"NEWER"})"}});
  const std::string body =
      R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[)" + older +
      R"(]},{"role":"user","content":"q2"},{"role":"assistant","content":[)" + newer +
      R"(]},{"role":"user","content":"q3"}]})";
  auto read = ReadMessagesGatewayRequest(body);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->resumed_at, 3u);
  EXPECT_EQ(read->messages->find("OLDER"), std::string::npos);
  EXPECT_NE(read->messages->find("NEWER"), std::string::npos);
  // A paused compaction (the block alone) leaves no assistant message behind.
  EXPECT_EQ(Parse(*read->messages).size(), 2u);
}

TEST(MessagesCompaction, AnUndoneCompactionIsNotResumedFromAndItsBlockIsDropped) {
  const Uuid older_session = *Uuid::ParseCanonical("01890a5d-ac96-774b-bcce-b302099a8059");
  const std::string older =
      CompactionBlockJson("OLDER", {older_session, {R"({"role":"user","content":"OLDER"})"}});
  const std::string newer =
      CompactionBlockJson("NEWER", {kSession, {R"({"role":"user","content":"NEWER"})"}});
  const std::string body =
      R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[)" + older +
      R"(]},{"role":"user","content":"q2"},{"role":"assistant","content":[)" + newer +
      R"(,{"type":"text","text":"a2"}]},{"role":"user","content":"q3"}]})";
  // The newer compaction was undone: resume from the older one, drop the newer block.
  auto newer_undone = ReadMessagesGatewayRequest(
      body, {}, [&](const Uuid& session) { return session == kSession; });
  ASSERT_TRUE(newer_undone.ok()) << newer_undone.error().message;
  EXPECT_EQ(newer_undone->resumed_at, 1u);
  EXPECT_EQ(newer_undone->undone, std::vector<Uuid>{kSession});
  EXPECT_EQ(Parse(*newer_undone->messages),
            Parse(R"([{"role":"user","content":"OLDER"},{"role":"user","content":"q2"},)"
                  R"({"role":"assistant","content":[{"type":"text","text":"a2"}]},)"
                  R"({"role":"user","content":"q3"}])"));
  // Both undone: the messages as sent without the blocks; the paused answer's message goes.
  auto both = ReadMessagesGatewayRequest(body, {}, [](const Uuid&) { return true; });
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_FALSE(both->resumed_at);
  EXPECT_FALSE(both->carried);
  EXPECT_EQ(both->undone.size(), 2u);
  EXPECT_EQ(Parse(*both->messages),
            Parse(R"([{"role":"user","content":"q"},{"role":"user","content":"q2"},)"
                  R"({"role":"assistant","content":[{"type":"text","text":"a2"}]},)"
                  R"({"role":"user","content":"q3"}])"));
  EXPECT_EQ(Parse(UpstreamMessagesBody(body, *both))["messages"], Parse(*both->messages));
  // An undone block must still be the gateway's own.
  std::string edited = body;
  edited.replace(edited.find("\"NEWER\""), 7, "\"EDITED\"");
  EXPECT_FALSE(ReadMessagesGatewayRequest(edited, {}, [](const Uuid&) { return true; }).ok());
}

TEST(MessagesCompaction, ACompactionBlockTheGatewayDidNotWriteIsRefused) {
  const std::string good =
      CompactionBlockJson("S", {std::nullopt, {R"({"role":"user","content":"S"})"}});
  std::string edited = good;
  edited.replace(edited.find("\"S\""), 3, "\"T\"");
  const std::string cases[] = {
      R"({"type":"compaction","content":"Anthropic's summary","encrypted_content":"EqQBCkYIBRgC"})",
      R"({"type":"compaction","content":null,"encrypted_content":null})",
      R"({"type":"compaction","content":"no marker"})",
      edited,
  };
  for (const std::string& block : cases) {
    auto read = ReadMessagesGatewayRequest(Resumed(block));
    ASSERT_FALSE(read.ok()) << block;
    EXPECT_EQ(read.error().type, "invalid_request_error");
    EXPECT_NE(read.error().message.find("$.messages[3].content[1]"), std::string::npos)
        << read.error().message;
    EXPECT_EQ(read.error().code, "invalid_compaction_block");
    // A foreign block is named as one; an edited one as changed.
    const bool ours = block == edited;
    EXPECT_NE(read.error().message.find(ours ? "changed after the gateway wrote it"
                                             : "this gateway did not write"),
              std::string::npos)
        << read.error().message;
  }
  auto in_user =
      ReadMessagesGatewayRequest(R"({"messages":[{"role":"user","content":[)" + good + R"(]}]})");
  ASSERT_FALSE(in_user.ok());
  EXPECT_EQ(in_user.error().code, "invalid_compaction_block");
  EXPECT_NE(in_user.error().message.find("not the assistant's"), std::string::npos);
  // A member Anthropic does not define on the block.
  std::string extra = good;
  extra.insert(1, R"("note":1,)");
  EXPECT_FALSE(ReadMessagesGatewayRequest(Resumed(extra)).ok());
}

TEST(MessagesCompaction, TheReplacementBecomesTheCarryElementByElementAsWritten) {
  auto carry = CarryOfReplacement(
      R"([{"role":"user","content":"SUMMARY"}, {"role":"user","content":  "kept as sent"}])",
      kSession);
  ASSERT_TRUE(carry.ok()) << carry.error().message;
  EXPECT_EQ(carry->session, kSession);
  EXPECT_EQ(carry->replacement,
            (std::vector<std::string>{R"({"role":"user","content":"SUMMARY"})",
                                      R"({"role":"user","content":  "kept as sent"})"}));
  for (const char* bad : {"[]", "{}", "[1]"}) {
    auto refused = CarryOfReplacement(bad, std::nullopt);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().type, "api_error");
  }
}

TEST(MessagesCompaction, TheBlockGoesFirstInTheAnswer) {
  const std::string block = CompactionBlockJson("S", {std::nullopt, {}});
  auto answer = PrependCompactionBlock(
      R"({"id":"msg_1","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"})", block);
  ASSERT_TRUE(answer.ok());
  const Json json = Parse(*answer);
  ASSERT_EQ(json["content"].size(), 2u);
  EXPECT_EQ(json["content"][0], Parse(block));
  EXPECT_EQ(json["content"][1]["text"], "hi");
  EXPECT_EQ(json["stop_reason"], "end_turn");
  auto bad = PrependCompactionBlock(R"({"error":{}})", block);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().type, "api_error");
}

TEST(MessagesCompaction, APausedCompactionAnswersWithTheBlockAlone) {
  const std::string block = CompactionBlockJson("S", {std::nullopt, {}});
  const Json answer = Parse(PausedAnswer("msg_x", "m", block, 321));
  EXPECT_EQ(answer["type"], "message");
  EXPECT_EQ(answer["role"], "assistant");
  EXPECT_EQ(answer["model"], "m");
  EXPECT_EQ(answer["stop_reason"], "compaction");
  ASSERT_EQ(answer["content"].size(), 1u);
  EXPECT_EQ(answer["content"][0], Parse(block));
  EXPECT_EQ(answer["usage"]["input_tokens"], 321);

  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed(PausedStream("msg_x", "m", block, 321), events).ok());
  ASSERT_TRUE(decoder.Finish().ok());
  std::vector<std::string> names;
  for (const SseEvent& event : events)
    names.push_back(event.event);
  EXPECT_EQ(names,
            (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  const Json delta = Parse(events[2].data)["delta"];
  EXPECT_EQ(delta["type"], "compaction_delta");
  EXPECT_EQ(delta["content"], "S");
  EXPECT_EQ(delta["encrypted_content"], Parse(block)["encrypted_content"]);
  EXPECT_EQ(Parse(events[4].data)["delta"]["stop_reason"], "compaction");
}

TEST(MessagesCompaction, TheStreamSpliceAddsTheBlockFirstAndShiftsTheOthers) {
  const std::string upstream =
      "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\","
      "\"content\":[]}}\r\n\r\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"end_turn\"}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  const std::string block = CompactionBlockJson("SUM", {std::nullopt, {}});
  CompactionStreamSplice splice(block);
  std::string relayed;
  for (char byte : upstream)  // one byte at a time: events cut anywhere
    relayed += splice(std::string_view(&byte, 1));

  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed(relayed, events).ok());
  ASSERT_TRUE(decoder.Finish().ok());
  std::vector<std::string> names;
  std::vector<int> indexes;
  for (const SseEvent& event : events) {
    names.push_back(event.event);
    const Json data = Parse(event.data);
    indexes.push_back(data.contains("index") ? data["index"].get<int>() : -1);
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "message_start", "content_block_start", "content_block_delta",
                       "content_block_stop", "ping", "content_block_start", "content_block_delta",
                       "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(indexes, (std::vector<int>{-1, 0, 0, 0, -1, 1, 1, 1, -1, -1}));
  EXPECT_EQ(Parse(events[2].data)["delta"]["content"], "SUM");
  EXPECT_EQ(Parse(events[6].data)["delta"]["text"], "Hi");

  // A stream over the decoder's bounds ends with an error event; nothing after it is relayed.
  SseLimits small;
  small.max_line_bytes = 64;
  CompactionStreamSplice bounded(block, small);
  const std::string head = bounded("event: message_start\ndata: {\"type\":\"message_start\"}\n\n");
  EXPECT_NE(head.find("compaction_delta"), std::string::npos);
  const std::string broke = bounded("data: " + std::string(100, 'x') + "\n\n");
  std::vector<SseEvent> error;
  SseDecoder reader;
  ASSERT_TRUE(reader.Feed(broke, error).ok());
  ASSERT_EQ(error.size(), 1u) << broke;
  EXPECT_EQ(error[0].event, "error");
  EXPECT_EQ(Parse(error[0].data)["error"]["type"], "api_error");
  EXPECT_EQ(bounded("event: ping\ndata: {}\n\n"), "");
}

}  // namespace
}  // namespace harness::serve
