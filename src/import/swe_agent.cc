// SWE-agent trajectories (.traj: {"history": [...], "trajectory": [...], "info": {...}}) and
// mini-SWE-agent's ({"messages": [...]}): docs/import.md.
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

class SweAgentImport {
 public:
  explicit SweAgentImport(const ImportLimits& limits) : out_(limits) {}

  // One chat message of the history (role, content, tool_calls, tool_call_ids, …).
  Status<ImportError> Item(const Json& item, const Where& where) {
    ++out_.report().records;
    HARNESS_TRY(const std::string role, RequireString(item, where, "role"));
    HARNESS_TRY(const auto demo, OptionalBool(item, where, "is_demo"));
    if (demo.value_or(false)) {
      out_.Drop("demonstration (is_demo)");
      return {};
    }
    HARNESS_TRY(const Json* content, Find(item, where, "content"));
    std::string text;
    if (content != nullptr) {
      HARNESS_TRY(TextParts parts, TextOfContent(*content, where.Member("content")));
      if (parts.dropped != 0)
        out_.Drop("content part that is not text", parts.dropped);
      text = std::move(parts.text);
    }
    std::vector<Block> blocks;
    if (role == "assistant") {
      HARNESS_CHECK(Thinking(item, where, blocks));
      if (!text.empty())
        blocks.push_back(TextBlock{text});
      HARNESS_CHECK(Calls(item, where, blocks));
      return out_.AddAssistant("", std::move(blocks), std::nullopt, where);
    }
    if (!text.empty())
      blocks.push_back(TextBlock{text});
    if (role == "tool") {
      HARNESS_TRY(const Json* ids, OptionalArray(item, where, "tool_call_ids"));
      HARNESS_TRY(auto id, OptionalString(item, where, "tool_call_id"));
      if (!id && ids != nullptr && !ids->empty()) {
        if (!(*ids)[0].is_string())
          return RecordError(where.Member("tool_call_ids").Element(0), "expected a string");
        id = (*ids)[0].get<std::string>();
      }
      if (blocks.empty())
        blocks.push_back(TextBlock{""});
      return out_.Add(ToolResultMessage{std::move(blocks), id.value_or(""), false}, where);
    }
    if (role == "user")
      return out_.Add(UserMessage{std::move(blocks)}, where);
    if (role == "system")
      return out_.Add(SystemMessage{std::move(blocks)}, where);
    return RecordError(where.Member("role"),
                       fmt::format("unknown role {}", QuoteForDetail(role, 16)));
  }

  // A step of "trajectory" in a file without a history: the thought and the action as a call,
  // the observation as its result.
  Status<ImportError> Step(const Json& step, const Where& where, std::size_t index) {
    ++out_.report().records;
    HARNESS_TRY(const auto thought, OptionalString(step, where, "thought"));
    HARNESS_TRY(const auto action, OptionalString(step, where, "action"));
    HARNESS_TRY(const auto observation, OptionalString(step, where, "observation"));
    std::vector<Block> blocks;
    if (thought && !thought->empty())
      blocks.push_back(TextBlock{*thought});
    if (!action || action->empty())
      return out_.AddAssistant("", std::move(blocks), std::nullopt, where);
    const std::string id = fmt::format("swe-agent-step-{}", index + 1);
    std::string input = "{\"command\":";
    AppendJsonString(input, *action);
    input.push_back('}');
    blocks.push_back(ToolUseBlock{id, "bash", std::move(input), std::nullopt, ""});
    HARNESS_CHECK(out_.AddAssistant("", std::move(blocks), std::nullopt, where));
    return out_.Add(ToolResultMessage{{TextBlock{observation.value_or("")}}, id, false}, where);
  }

  Result<ImportedTranscript, ImportError> Finish() {
    return out_.Finish("no history message or trajectory step (is this a SWE-agent .traj?)");
  }

  TranscriptBuilder& builder() { return out_; }

 private:
  // thinking_blocks: Anthropic-style thinking kept by litellm.
  Status<ImportError> Thinking(const Json& item, const Where& where, std::vector<Block>& blocks) {
    HARNESS_TRY(const Json* thinking, OptionalArray(item, where, "thinking_blocks"));
    for (std::size_t i = 0; thinking != nullptr && i < thinking->size(); ++i) {
      const Where at = where.Member("thinking_blocks").Element(i);
      HARNESS_TRY(const auto text, OptionalString((*thinking)[i], at, "thinking"));
      HARNESS_TRY(const auto signature, OptionalString((*thinking)[i], at, "signature"));
      if (text && !text->empty())
        blocks.push_back(ThinkingBlock{*text, signature.value_or(""), "", std::nullopt, ""});
    }
    return {};
  }

  // tool_calls in the chat completions shape: {"id", "function": {"name", "arguments"}}.
  Status<ImportError> Calls(const Json& item, const Where& where, std::vector<Block>& blocks) {
    HARNESS_TRY(const Json* calls, OptionalArray(item, where, "tool_calls"));
    for (std::size_t i = 0; calls != nullptr && i < calls->size(); ++i) {
      const Where at = where.Member("tool_calls").Element(i);
      HARNESS_TRY(const auto id, OptionalString((*calls)[i], at, "id"));
      HARNESS_TRY(const Json* function, RequireObject((*calls)[i], at, "function"));
      const Where function_at = at.Member("function");
      HARNESS_TRY(const std::string name, RequireString(*function, function_at, "name"));
      HARNESS_TRY(const Json* arguments, Find(*function, function_at, "arguments"));
      std::string input = "{}";
      if (arguments != nullptr && arguments->is_string()) {
        input = ToolInputFromText(arguments->get_ref<const std::string&>());
      } else if (arguments != nullptr) {
        HARNESS_TRY(input, ToolInputFromValue(*arguments, function_at.Member("arguments")));
      }
      blocks.push_back(ToolUseBlock{id.value_or(""), name, std::move(input), std::nullopt, ""});
    }
    return {};
  }

  TranscriptBuilder out_;
};

}  // namespace

Result<ImportedTranscript, ImportError> ImportSweAgent(std::string_view text,
                                                       const ImportLimits& limits) {
  const JsonLimits json_limits{limits.max_bytes, kRecordJsonDepth};
  auto parsed = ParseStrictJson(text, json_limits);
  if (!parsed.ok())
    return FromDocumentJsonError(text, parsed.error());
  const Json& root = *parsed;
  const Where where{0, "$"};
  if (!root.is_object())
    return RecordError(where,
                       "expected an object with a \"history\" or \"trajectory\" array: "
                       "not a SWE-agent trajectory");
  SweAgentImport import(limits);
  // The history is what the model saw; "messages" is mini-SWE-agent's name for it.
  for (const char* name : {"history", "messages"}) {
    HARNESS_TRY(const Json* items, OptionalArray(root, where, name));
    if (items == nullptr)
      continue;
    for (std::size_t i = 0; i < items->size(); ++i)
      HARNESS_CHECK(import.Item((*items)[i], where.Member(name).Element(i)));
    return import.Finish();
  }
  HARNESS_TRY(const Json* steps, OptionalArray(root, where, "trajectory"));
  if (steps == nullptr)
    return RecordError(where,
                       "no \"history\", \"messages\" or \"trajectory\" array: not a "
                       "SWE-agent trajectory");
  // Without a history, the first step's query holds the messages before the first action.
  if (!steps->empty() && (*steps)[0].is_object() && (*steps)[0].contains("query") &&
      (*steps)[0]["query"].is_array()) {
    const Json& query = (*steps)[0]["query"];
    const Where at = where.Member("trajectory").Element(0).Member("query");
    for (std::size_t i = 0; i < query.size(); ++i) {
      HARNESS_TRY(const auto role, OptionalString(query[i], at.Element(i), "role"));
      if (role == "assistant" || role == "tool")
        break;
      HARNESS_CHECK(import.Item(query[i], at.Element(i)));
    }
  }
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const Where at = where.Member("trajectory").Element(i);
    if (!(*steps)[i].is_object())
      return RecordError(at, "expected a step object");
    HARNESS_CHECK(import.Step((*steps)[i], at, i));
  }
  return import.Finish();
}

}  // namespace harness::import_internal
