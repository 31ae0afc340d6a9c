// Codex's rollout JSONL (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl): docs/import.md.
#include <fmt/format.h>

#include <unordered_map>

#include "core/internal/json_dom.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

// The parts of a message's content: input_text/output_text as text, input_image as an image,
// refusal as a refusal; other parts are counted.
Result<std::vector<Block>, ImportError> ContentParts(const Json& content, const Where& where,
                                                     TranscriptBuilder& out) {
  std::vector<Block> blocks;
  if (content.is_string()) {
    if (!content.get_ref<const std::string&>().empty())
      blocks.push_back(TextBlock{content.get<std::string>()});
    return blocks;
  }
  if (!content.is_array())
    return RecordError(where, "expected an array of content parts");
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Where at = where.Element(i);
    HARNESS_TRY(const std::string type, RequireString(content[i], at, "type"));
    if (type == "input_text" || type == "output_text" || type == "text") {
      HARNESS_TRY(const std::string text, RequireString(content[i], at, "text"));
      if (!text.empty())
        blocks.push_back(TextBlock{text});
    } else if (type == "input_image") {
      HARNESS_TRY(const std::string url, RequireString(content[i], at, "image_url"));
      blocks.push_back(ImageFromUrl(url));
    } else if (type == "refusal") {
      HARNESS_TRY(const auto refusal, OptionalString(content[i], at, "refusal"));
      blocks.push_back(RefusalBlock{refusal.value_or("")});
    } else {
      out.Drop(fmt::format("content part {}", QuoteForDetail(type, 24)));
    }
  }
  return blocks;
}

class CodexImport {
 public:
  // `search_items`: whether the rollout has web_search_call items (then the web search events
  // are the UI's copy of them; without them, the events are all there is).
  CodexImport(const ImportLimits& limits, bool search_items)
      : out_(limits), search_items_(search_items) {}

  Status<ImportError> Take(const Where& where, const Json& record) {
    ++out_.report().records;
    HARNESS_TRY(const auto type, OptionalString(record, where, "type"));
    HARNESS_TRY(const Json* payload, OptionalObject(record, where, "payload"));
    if (type && payload != nullptr) {
      if (*type == "response_item")
        return Item(*payload, where.Member("payload"));
      if (*type == "session_meta")
        return SessionMeta(*payload, where.Member("payload"));
      if (*type == "event_msg" && !search_items_)
        return WebSearchEvent(*payload, where.Member("payload"));
      out_.Drop(fmt::format("line type {}", QuoteForDetail(*type, 24)));
      return {};
    }
    // Rollouts written before the envelope: the first line is the session's metadata, the
    // others are the items themselves or {"record_type":"state"} markers.
    HARNESS_TRY(const auto record_type, OptionalString(record, where, "record_type"));
    if (record_type) {
      out_.Drop("state marker (record_type)");
      return {};
    }
    if (type)
      return Item(record, where);
    if (record.contains("id") && record.contains("timestamp"))
      return SessionMeta(record, where);
    return RecordError(where,
                       "neither a rollout line ({\"type\", \"payload\"}) nor a response "
                       "item: not a Codex rollout line");
  }

  Result<ImportedTranscript, ImportError> Finish() {
    return out_.Finish("no response_item line (is this a Codex rollout file?)");
  }

 private:
  // The instructions the session started with are its system prompt.
  Status<ImportError> SessionMeta(const Json& meta, const Where& where) {
    HARNESS_TRY(const Json* instructions, Find(meta, where, "instructions"));
    if (instructions != nullptr && instructions->is_string() &&
        !instructions->get_ref<const std::string&>().empty()) {
      ++step_;
      return out_.Add(SystemMessage{{TextBlock{instructions->get<std::string>()}}}, where);
    }
    out_.Drop("session metadata");
    return {};
  }

  Status<ImportError> Assistant(std::vector<Block> blocks, const Where& where) {
    return out_.AddAssistant(fmt::format("step-{}", step_), std::move(blocks), std::nullopt, where);
  }

  Status<ImportError> Item(const Json& item, const Where& where) {
    HARNESS_TRY(const std::string type, RequireString(item, where, "type"));
    if (type == "message") {
      HARNESS_TRY(const std::string role, RequireString(item, where, "role"));
      HARNESS_TRY(const Json* content, Find(item, where, "content"));
      if (content == nullptr)
        return RecordError(where.Member("content"), "missing member \"content\"");
      HARNESS_TRY(std::vector<Block> blocks, ContentParts(*content, where.Member("content"), out_));
      if (role == "assistant")
        return Assistant(std::move(blocks), where);
      ++step_;
      if (role == "user")
        return out_.Add(UserMessage{std::move(blocks)}, where);
      if (role == "developer" || role == "system")
        return out_.Add(SystemMessage{std::move(blocks)}, where);
      return RecordError(where.Member("role"),
                         fmt::format("unknown role {}", QuoteForDetail(role, 16)));
    }
    if (type == "reasoning")
      return Reasoning(item, where);
    if (type == "function_call" || type == "custom_tool_call") {
      const bool custom = type == "custom_tool_call";
      HARNESS_TRY(const std::string name, RequireString(item, where, "name"));
      HARNESS_TRY(const std::string call_id, RequireString(item, where, "call_id"));
      HARNESS_TRY(const std::string arguments,
                  RequireString(item, where, custom ? "input" : "arguments"));
      std::string input;
      if (custom)
        AppendJsonString(input, arguments);  // free text (a patch, a program), not JSON
      else
        input = ToolInputFromText(arguments);
      std::vector<Block> blocks{ToolUseBlock{call_id, name, std::move(input), std::nullopt, ""}};
      if (custom && name == "exec")
        ProgramCalls(arguments, call_id, blocks);
      return Assistant(std::move(blocks), where);
    }
    if (type == "web_search_call")
      return WebSearch(item, where);
    if (type == "local_shell_call") {
      HARNESS_TRY(auto call_id, OptionalString(item, where, "call_id"));
      if (!call_id) {
        HARNESS_TRY(call_id, OptionalString(item, where, "id"));
      }
      HARNESS_TRY(const Json* action, RequireObject(item, where, "action"));
      HARNESS_TRY(std::string input, ToolInputFromValue(*action, where.Member("action")));
      return Assistant(
          {ToolUseBlock{call_id.value_or(""), "local_shell", std::move(input), std::nullopt, ""}},
          where);
    }
    if (type == "function_call_output" || type == "custom_tool_call_output" ||
        type == "local_shell_call_output") {
      return Output(item, where);
    }
    out_.Drop(fmt::format("response item {}", QuoteForDetail(type, 24)));
    return {};
  }

  // Readable reasoning (the summary, or the full text where the rollout has it) as thinking;
  // encrypted reasoning is opaque outside the provider and is dropped.
  Status<ImportError> Reasoning(const Json& item, const Where& where) {
    std::string text;
    for (const char* member : {"content", "summary"}) {
      HARNESS_TRY(const Json* parts, OptionalArray(item, where, member));
      for (std::size_t i = 0; parts != nullptr && i < parts->size(); ++i) {
        // reasoning_text / summary_text parts: only their text matters.
        HARNESS_TRY(const auto part,
                    OptionalString((*parts)[i], where.Member(member).Element(i), "text"));
        if (!part || part->empty())
          continue;
        if (!text.empty())
          text.append("\n\n");
        text.append(*part);
      }
      if (!text.empty())
        break;
    }
    HARNESS_TRY(const Json* encrypted, Find(item, where, "encrypted_content"));
    if (encrypted != nullptr)
      out_.Drop("encrypted reasoning");
    if (text.empty())
      return {};
    return Assistant({ThinkingBlock{std::move(text), "", "", std::nullopt, ""}}, where);
  }

  Status<ImportError> Output(const Json& item, const Where& where) {
    HARNESS_TRY(const std::string call_id, RequireString(item, where, "call_id"));
    HARNESS_TRY(const Json* output, Find(item, where, "output"));
    ToolResultMessage tool{{}, call_id, false};
    const Where at = where.Member("output");
    if (output == nullptr) {
      tool.blocks.push_back(TextBlock{""});
    } else if (output->is_string()) {
      tool.blocks.push_back(TextBlock{output->get<std::string>()});
    } else if (output->is_array()) {
      HARNESS_TRY(tool.blocks, ContentParts(*output, at, out_));
    } else if (output->is_object()) {
      // {"content": "...", "success": false}: how a failed call's output is written.
      HARNESS_TRY(const auto content, OptionalString(*output, at, "content"));
      HARNESS_TRY(const auto success, OptionalBool(*output, at, "success"));
      tool.blocks.push_back(TextBlock{content.value_or("")});
      tool.is_error = !success.value_or(true);
    } else {
      return RecordError(at, "expected a string, an array of content parts or an object");
    }
    if (tool.blocks.empty())
      tool.blocks.push_back(TextBlock{""});
    ++step_;
    HARNESS_CHECK(out_.Add(std::move(tool), where));
    const auto program = program_calls_.find(call_id);
    if (program == program_calls_.end())
      return {};
    for (const std::string& id : program->second) {
      std::string note = fmt::format(
          "harness import: called by the code-mode program of call {}; that call's result is the "
          "program's whole output",
          call_id);
      HARNESS_CHECK(out_.Add(ToolResultMessage{{TextBlock{std::move(note)}}, id, false}, where));
    }
    program_calls_.erase(program);
    return {};
  }

  // Code mode: the model's `exec` program calls the tools (tools.exec_command({...}),
  // tools.apply_patch(`...`)); each call becomes a tool_use after the program's own, with the id
  // "<call_id>/<n>", so that a reader sees the commands and the patches. Their results are the
  // program's output, which the rollout records only as a whole (Output).
  void ProgramCalls(std::string_view program, const std::string& call_id,
                    std::vector<Block>& blocks) {
    std::vector<CodeModeCall> calls = CodeModeCalls(program, kMaxProgramCalls);
    if (calls.size() == kMaxProgramCalls)
      out_.Drop("code-mode calls past the first 256 of a program (kept in its text)");
    std::vector<std::string>& ids = program_calls_[call_id];
    for (std::size_t i = 0; i < calls.size(); ++i) {
      ids.push_back(fmt::format("{}/{}", call_id, i + 1));
      blocks.push_back(
          ToolUseBlock{ids.back(), std::move(calls[i].name), std::move(calls[i].input), {}, ""});
    }
  }

  // A web search the model ran on the provider's side: a web_search call with the item's
  // action (the query) as input, answered by the status the rollout records (it keeps no
  // results).
  Status<ImportError> WebSearch(const Json& item, const Where& where) {
    HARNESS_TRY(const auto id, OptionalString(item, where, "id"));
    HARNESS_TRY(const auto status, OptionalString(item, where, "status"));
    HARNESS_TRY(const Json* action, OptionalObject(item, where, "action"));
    std::string input = "{}";
    if (action != nullptr) {
      HARNESS_TRY(input, ToolInputFromValue(*action, where.Member("action")));
    }
    return SearchStep(id.value_or(""), std::move(input), status, where);
  }

  // A rollout without web_search_call items: the web_search_end event (its call_id and query).
  Status<ImportError> WebSearchEvent(const Json& event, const Where& where) {
    HARNESS_TRY(const auto type, OptionalString(event, where, "type"));
    if (type != "web_search_end") {
      out_.Drop(fmt::format("line type {}", QuoteForDetail("event_msg", 24)));
      return {};
    }
    HARNESS_TRY(const auto call_id, OptionalString(event, where, "call_id"));
    HARNESS_TRY(const auto query, OptionalString(event, where, "query"));
    std::string input = "{\"query\":";
    AppendJsonString(input, query.value_or(""));
    input.push_back('}');
    return SearchStep(call_id.value_or(""), std::move(input), "completed", where);
  }

  Status<ImportError> SearchStep(std::string id, std::string input,
                                 const std::optional<std::string>& status, const Where& where) {
    if (id.empty())
      id = fmt::format("web-search-{}", ++searches_);
    HARNESS_CHECK(Assistant({ToolUseBlock{id, "web_search", std::move(input), {}, ""}}, where));
    std::string note = fmt::format(
        "harness import: the rollout records this web search's status, {}, not its results",
        status ? QuoteForDetail(*status, 24) : "none");
    ++step_;
    return out_.Add(
        ToolResultMessage{{TextBlock{std::move(note)}}, std::move(id), status == "failed"}, where);
  }

  static constexpr std::size_t kMaxProgramCalls = 256;

  TranscriptBuilder out_;
  bool search_items_;
  std::size_t searches_ = 0;
  // The ids of the calls each code-mode program made, until its output answers them.
  std::unordered_map<std::string, std::vector<std::string>> program_calls_;
  // Consecutive assistant items (reasoning, message, calls) are one assistant message; any
  // other item starts the next step.
  std::size_t step_ = 0;
};

}  // namespace

Result<ImportedTranscript, ImportError> ImportCodex(std::string_view text,
                                                    const ImportLimits& limits) {
  CodexImport import(limits, text.find("\"web_search_call\"") != std::string_view::npos);
  HARNESS_CHECK(ForEachJsonRecord(text, limits, [&](const Where& where, const Json& record) {
    return import.Take(where, record);
  }));
  return import.Finish();
}

}  // namespace harness::import_internal
