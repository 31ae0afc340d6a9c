// Gemini CLI's saved chat (`/chat save`: checkpoint-<tag>.json) and session recording
// (~/.gemini/tmp/<project hash>/chats/session-*.json, or its JSONL form): docs/import.md.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "core/internal/json_dom.h"
#include "harness/core/base64.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

// inlineData (base64 bytes: an image or a document by its MIME type) or fileData (a URI: an
// image's URL); nullopt, counted, for a file that is not an image.
Result<std::optional<Block>, ImportError> DataPart(const Json& part, const Where& where,
                                                   TranscriptBuilder& out) {
  HARNESS_TRY(const Json* inline_data, OptionalObject(part, where, "inlineData"));
  if (inline_data != nullptr) {
    const Where at = where.Member("inlineData");
    HARNESS_TRY(const auto mime, OptionalString(*inline_data, at, "mimeType"));
    HARNESS_TRY(const std::string data, RequireString(*inline_data, at, "data"));
    const std::string type = mime.value_or("");
    std::optional<std::string> bytes = Base64Decode(data);
    if (type.starts_with("image/")) {
      if (!bytes)  // kept whole, as the Claude Code importer does with base64 it cannot hold
        return std::optional<Block>(ImageBlock{type, "data:" + type + ";base64," + data, {}});
      return std::optional<Block>(ImageBlock{type, "", std::move(bytes)});
    }
    if (!bytes)
      return RecordError(at.Member("data"), "not canonical standard base64");
    return std::optional<Block>(DocumentBlock{type, "", std::move(bytes), ""});
  }
  HARNESS_TRY(const Json* file_data, OptionalObject(part, where, "fileData"));
  if (file_data != nullptr) {
    const Where at = where.Member("fileData");
    HARNESS_TRY(const auto mime, OptionalString(*file_data, at, "mimeType"));
    HARNESS_TRY(const std::string uri, RequireString(*file_data, at, "fileUri"));
    if (mime.value_or("").starts_with("image/"))
      return std::optional<Block>(ImageBlock{*mime, uri, std::nullopt});
    out.Drop("file reference that is not an image (fileData)");
    return std::optional<Block>();
  }
  // executableCode, codeExecutionResult, videoMetadata, …: named by their first member.
  const std::string kind = part.is_object() && !part.empty() ? part.begin().key() : "empty";
  out.Drop(fmt::format("part {}", QuoteForDetail(kind, 24)));
  return std::optional<Block>();
}

// A functionResponse's `response` as the result's blocks: {"output": text} is the text,
// {"error": text} the text of an error; any other value its compact JSON, so nothing is lost.
Status<ImportError> AppendResponse(const Json& response, const Where& where,
                                   ToolResultMessage& tool) {
  if (response.is_object() && response.size() == 1) {
    const auto member = response.begin();
    if ((member.key() == "output" || member.key() == "error") && member->is_string()) {
      tool.blocks.push_back(TextBlock{member->get<std::string>()});
      tool.is_error = tool.is_error || member.key() == "error";
      return {};
    }
  }
  HARNESS_TRY(std::string raw, ToolInputFromValue(response, where));
  tool.blocks.push_back(TextBlock{std::move(raw)});
  return {};
}

class GeminiImport {
 public:
  explicit GeminiImport(const ImportLimits& limits) : out_(limits) {}

  TranscriptBuilder& out() { return out_; }

  // One Content of a saved chat: {"role": "user"|"model", "parts": [...]}.
  Status<ImportError> Content(const Json& content, const Where& where) {
    ++out_.report().records;
    HARNESS_TRY(const std::string role, RequireString(content, where, "role"));
    HARNESS_TRY(const Json* parts, OptionalArray(content, where, "parts"));
    const Where parts_at = where.Member("parts");
    if (role == "model")
      return ModelParts(parts, parts_at, fmt::format("turn-{}", turn_), std::nullopt, where);
    if (role != "user" && role != "function") {
      return RecordError(where.Member("role"),
                         fmt::format("unknown role {} (expected \"user\" or \"model\")",
                                     QuoteForDetail(role, 16)));
    }
    ++turn_;
    std::vector<Block> blocks;
    std::vector<Message> results;
    for (std::size_t i = 0; parts != nullptr && i < parts->size(); ++i) {
      const Json& part = (*parts)[i];
      const Where at = parts_at.Element(i);
      HARNESS_TRY(const Json* response, OptionalObject(part, at, "functionResponse"));
      if (response != nullptr) {
        HARNESS_TRY(Message result, FunctionResponse(*response, at.Member("functionResponse")));
        results.push_back(std::move(result));
        continue;
      }
      HARNESS_TRY(std::optional<Block> block, UserPart(part, at));
      if (block)
        blocks.push_back(std::move(*block));
    }
    for (Message& result : results)
      HARNESS_CHECK(out_.Add(std::move(result), where));
    if (!blocks.empty())
      return out_.Add(UserMessage{std::move(blocks)}, where);
    return {};
  }

  // One message of a session recording: {"type": "user"|"gemini"|"info"|…, "content", …}.
  Status<ImportError> RecordedMessage(const Json& message, const Where& where) {
    ++out_.report().records;
    HARNESS_TRY(const std::string type, RequireString(message, where, "type"));
    HARNESS_TRY(const Json* content, Find(message, where, "content"));
    const Where content_at = where.Member("content");
    if (type == "user") {
      ++turn_;
      std::vector<Block> blocks;
      HARNESS_CHECK(RecordedContent(content, content_at, blocks));
      return out_.Add(UserMessage{std::move(blocks)}, where);
    }
    if (type != "gemini") {  // info, error, warning: the CLI's notices to the user
      out_.Drop(fmt::format("message type {}", QuoteForDetail(type, 24)));
      return {};
    }
    ++turn_;
    std::vector<Block> blocks;
    HARNESS_TRY(const Json* thoughts, OptionalArray(message, where, "thoughts"));
    for (std::size_t i = 0; thoughts != nullptr && i < thoughts->size(); ++i) {
      const Where at = where.Member("thoughts").Element(i);
      HARNESS_TRY(const auto subject, OptionalString((*thoughts)[i], at, "subject"));
      HARNESS_TRY(const auto description, OptionalString((*thoughts)[i], at, "description"));
      std::string text = subject.value_or("");
      if (!text.empty() && description && !description->empty())
        text.append("\n");
      text.append(description.value_or(""));
      if (!text.empty())
        blocks.push_back(ThinkingBlock{std::move(text), "", "", std::nullopt, ""});
    }
    HARNESS_CHECK(RecordedContent(content, content_at, blocks));
    HARNESS_TRY(const Json* calls, OptionalArray(message, where, "toolCalls"));
    std::vector<Message> results;
    for (std::size_t i = 0; calls != nullptr && i < calls->size(); ++i) {
      const Where at = where.Member("toolCalls").Element(i);
      HARNESS_TRY(const auto id, OptionalString((*calls)[i], at, "id"));
      HARNESS_TRY(const std::string name, RequireString((*calls)[i], at, "name"));
      HARNESS_TRY(const Json* args, Find((*calls)[i], at, "args"));
      std::string raw = "{}";
      if (args != nullptr) {
        HARNESS_TRY(raw, ToolInputFromValue(*args, at.Member("args")));
      }
      const std::string call_id = CallId(id);
      blocks.push_back(ToolUseBlock{call_id, name, std::move(raw), std::nullopt, ""});
      HARNESS_TRY(std::optional<Message> result, RecordedResult((*calls)[i], at, call_id));
      if (result)
        results.push_back(std::move(*result));
    }
    HARNESS_TRY(const std::optional<Usage> usage, Tokens(message, where));
    HARNESS_CHECK(
        out_.AddAssistant(fmt::format("turn-{}", turn_), std::move(blocks), usage, where));
    for (Message& result : results)
      HARNESS_CHECK(out_.Add(std::move(result), where));
    return {};
  }

  Result<ImportedTranscript, ImportError> Finish() {
    return out_.Finish("no user or model message (is this a Gemini CLI chat or session file?)");
  }

 private:
  std::string CallId(const std::optional<std::string>& id) {
    if (id && !id->empty())
      return *id;
    return fmt::format("gemini-call-{}", ++generated_);
  }

  Status<ImportError> ModelParts(const Json* parts, const Where& where, const std::string& step,
                                 std::optional<Usage> usage, const Where& message_at) {
    if (step != open_step_) {
      open_.Clear();
      open_step_ = step;
    }
    std::vector<Block> blocks;
    for (std::size_t i = 0; parts != nullptr && i < parts->size(); ++i) {
      const Json& part = (*parts)[i];
      const Where at = where.Element(i);
      HARNESS_TRY(const auto text, OptionalString(part, at, "text"));
      HARNESS_TRY(const auto thought, OptionalBool(part, at, "thought"));
      HARNESS_TRY(const Json* call, OptionalObject(part, at, "functionCall"));
      if (call != nullptr) {
        const Where call_at = at.Member("functionCall");
        HARNESS_TRY(const auto id, OptionalString(*call, call_at, "id"));
        HARNESS_TRY(const std::string name, RequireString(*call, call_at, "name"));
        HARNESS_TRY(const Json* args, Find(*call, call_at, "args"));
        std::string raw = "{}";
        if (args != nullptr) {
          HARNESS_TRY(raw, ToolInputFromValue(*args, call_at.Member("args")));
        }
        const std::string call_id = CallId(id);
        open_.Add(call_id, name);
        blocks.push_back(ToolUseBlock{call_id, name, std::move(raw), std::nullopt, ""});
      } else if (text && thought.value_or(false)) {
        if (!text->empty())
          blocks.push_back(ThinkingBlock{*text, "", "", std::nullopt, ""});
      } else if (text) {
        if (!text->empty())
          blocks.push_back(TextBlock{*text});
      } else {
        HARNESS_TRY(std::optional<Block> block, DataPart(part, at, out_));
        if (block)
          blocks.push_back(std::move(*block));
      }
    }
    return out_.AddAssistant(step, std::move(blocks), usage, message_at);
  }

  // The id of the call a functionResponse answers: its own id, else the first unanswered call
  // of the turn with its name. One that answers nothing keeps an id no call has, so the
  // pairing drops and counts it.
  std::string Answered(const std::optional<std::string>& id, const std::string& name) {
    const bool has_id = id && !id->empty();
    std::optional<std::string> answered = has_id ? open_.AnswerById(*id) : open_.AnswerByName(name);
    if (answered)
      return std::move(*answered);
    return has_id ? *id : "gemini-unanswered:" + name;
  }

  Result<Message, ImportError> FunctionResponse(const Json& response, const Where& where) {
    HARNESS_TRY(const auto id, OptionalString(response, where, "id"));
    HARNESS_TRY(const std::string name, RequireString(response, where, "name"));
    HARNESS_TRY(const Json* body, Find(response, where, "response"));
    ToolResultMessage tool{{}, Answered(id, name), false};
    if (body != nullptr) {
      HARNESS_CHECK(AppendResponse(*body, where.Member("response"), tool));
    }
    if (tool.blocks.empty())
      tool.blocks.push_back(TextBlock{""});
    return Message(std::move(tool));
  }

  Result<std::optional<Block>, ImportError> UserPart(const Json& part, const Where& where) {
    HARNESS_TRY(const auto text, OptionalString(part, where, "text"));
    if (text) {
      if (text->empty())
        return std::optional<Block>();
      return std::optional<Block>(TextBlock{*text});
    }
    return DataPart(part, where, out_);
  }

  // A recorded message's content: a string, or parts (text and data).
  Status<ImportError> RecordedContent(const Json* content, const Where& where,
                                      std::vector<Block>& blocks) {
    if (content == nullptr)
      return {};
    if (content->is_string()) {
      if (!content->get_ref<const std::string&>().empty())
        blocks.push_back(TextBlock{content->get<std::string>()});
      return {};
    }
    if (!content->is_array())
      return RecordError(where, "expected a string or an array of parts");
    for (std::size_t i = 0; i < content->size(); ++i) {
      HARNESS_TRY(std::optional<Block> block, UserPart((*content)[i], where.Element(i)));
      if (block)
        blocks.push_back(std::move(*block));
    }
    return {};
  }

  // A recorded tool call's result: its functionResponse parts (and any other parts) or a
  // string; an error when the call's status is "error" or "cancelled". nullopt when the
  // recording has none (the pairing then says so).
  Result<std::optional<Message>, ImportError> RecordedResult(const Json& call, const Where& where,
                                                             const std::string& id) {
    HARNESS_TRY(const Json* result, Find(call, where, "result"));
    HARNESS_TRY(const auto status, OptionalString(call, where, "status"));
    if (result == nullptr)
      return std::optional<Message>();
    ToolResultMessage tool{{}, id, status == "error" || status == "cancelled"};
    const Where at = where.Member("result");
    if (result->is_string()) {
      tool.blocks.push_back(TextBlock{result->get<std::string>()});
    } else if (result->is_array()) {
      for (std::size_t i = 0; i < result->size(); ++i) {
        const Json& part = (*result)[i];
        const Where part_at = at.Element(i);
        HARNESS_TRY(const Json* response, OptionalObject(part, part_at, "functionResponse"));
        if (response != nullptr) {
          const Where response_at = part_at.Member("functionResponse");
          HARNESS_TRY(const Json* body, Find(*response, response_at, "response"));
          if (body != nullptr) {
            HARNESS_CHECK(AppendResponse(*body, response_at.Member("response"), tool));
          }
          continue;
        }
        HARNESS_TRY(std::optional<Block> block, UserPart(part, part_at));
        if (block)
          tool.blocks.push_back(std::move(*block));
      }
    } else {
      return RecordError(at, "expected an array of parts or a string");
    }
    if (tool.blocks.empty())
      tool.blocks.push_back(TextBlock{""});
    return std::optional<Message>(Message(std::move(tool)));
  }

  // {"input", "output", "cached", "thoughts", …}: input less the cached part (the transcript's
  // input_tokens), output including the thoughts (as the transcript counts reasoning).
  Result<std::optional<Usage>, ImportError> Tokens(const Json& message, const Where& where) {
    HARNESS_TRY(const Json* tokens, OptionalObject(message, where, "tokens"));
    if (tokens == nullptr)
      return std::optional<Usage>();
    const Where at = where.Member("tokens");
    const auto count = [&](std::string_view name) { return TokenCountMember(*tokens, at, name); };
    HARNESS_TRY(const TokenCount input, count("input"));
    HARNESS_TRY(const TokenCount output, count("output"));
    HARNESS_TRY(const TokenCount cached, count("cached"));
    HARNESS_TRY(const TokenCount thoughts, count("thoughts"));
    Usage usage;
    usage.cache_read_tokens = cached;
    usage.input_tokens = input - std::min(input, cached);
    usage.reasoning_tokens = thoughts;
    usage.output_tokens = output + std::min(thoughts, UINT64_MAX - output);
    return std::optional<Usage>(usage);
  }

  TranscriptBuilder out_;
  OpenCalls open_;  // the calls of the model turn `open_step_`
  std::string open_step_;
  std::size_t generated_ = 0;
  std::size_t turn_ = 0;
};

// The session recording's JSONL form: a metadata line, message lines (a message written again
// under its id replaces the earlier copy, in the earlier copy's place) and {"$set": …} updates.
class RecordedLines {
 public:
  Status<ImportError> Take(const Where& where, const Json& record, GeminiImport& import) {
    HARNESS_TRY(const auto type, OptionalString(record, where, "type"));
    if (!type) {
      import.out().Drop(record.contains("$set") ? "update line ($set)" : "session metadata");
      return {};
    }
    HARNESS_TRY(const auto id, OptionalString(record, where, "id"));
    if (id) {
      const auto [found, added] = index_.try_emplace(*id, messages_.size());
      if (!added) {
        import.out().Drop("message written again under its id (the last copy is kept)");
        messages_[found->second] = {where, record};
        return {};
      }
    }
    messages_.push_back({where, record});
    return {};
  }

  Status<ImportError> Replay(GeminiImport& import) {
    for (const auto& [where, message] : messages_)
      HARNESS_CHECK(import.RecordedMessage(message, where));
    return {};
  }

 private:
  std::vector<std::pair<Where, Json>> messages_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

Result<ImportedTranscript, ImportError> ImportGemini(std::string_view text,
                                                     const ImportLimits& limits) {
  GeminiImport import(limits);
  HARNESS_TRY(const ArrayDocument document,
              ReadArrayDocument(text, limits, [&](const Where& where, Json& content) {
                return import.Content(content, where);
              }));
  if (document.json_error) {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (document.json_error->kind != JsonErrorKind::kSyntax || first == std::string_view::npos ||
        text[first] != '{') {
      return FromJsonError(0, *document.json_error);
    }
    RecordedLines lines;
    HARNESS_CHECK(ForEachJsonRecord(text, limits, [&](const Where& where, const Json& record) {
      return lines.Take(where, record, import);
    }));
    HARNESS_CHECK(lines.Replay(import));
    return import.Finish();
  }
  if (document.root) {
    const Json& root = *document.root;
    const Where where{0, "$"};
    const auto array_member = [&](const char* name) -> const Json* {
      if (!root.is_object())
        return nullptr;
      const auto found = root.find(name);
      return found != root.end() && found->is_array() ? &*found : nullptr;
    };
    if (const Json* messages = array_member("messages")) {
      for (std::size_t i = 0; i < messages->size(); ++i)
        HARNESS_CHECK(import.RecordedMessage((*messages)[i], where.Member("messages").Element(i)));
    } else if (const Json* history = array_member("history")) {
      for (std::size_t i = 0; i < history->size(); ++i)
        HARNESS_CHECK(import.Content((*history)[i], where.Member("history").Element(i)));
    } else {
      return RecordError(where,
                         "expected a saved chat (an array of contents, or an object with a "
                         "\"history\" array) or a session recording (an object with a "
                         "\"messages\" array): not a Gemini CLI file");
    }
  }
  return import.Finish();
}

}  // namespace harness::import_internal
