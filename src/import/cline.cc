// Cline's and Roo Code's api_conversation_history.json (the Anthropic Messages array the
// extension sends, one file per task): docs/import.md.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/internal/json_dom.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

// The tools that Cline and Roo Code prompt the model to write as XML in its text (before they
// used the provider's tool calls). A tag of another name is text.
constexpr std::array<std::string_view, 28> kXmlTools = {
    "access_mcp_resource",
    "apply_diff",
    "ask_followup_question",
    "attempt_completion",
    "browser_action",
    "codebase_search",
    "condense",
    "execute_command",
    "fetch_instructions",
    "insert_content",
    "list_code_definition_names",
    "list_files",
    "load_mcp_documentation",
    "new_rule",
    "new_task",
    "plan_mode_respond",
    "read_file",
    "replace_in_file",
    "report_bug",
    "search_and_replace",
    "search_files",
    "summarize_task",
    "switch_mode",
    "update_todo_list",
    "use_mcp_tool",
    "web_fetch",
    "write_to_file",
    "generate_image",
};

// The tool's index in kXmlTools, or kXmlTools.size() for a name that is not one.
std::size_t XmlToolIndex(std::string_view name) {
  return static_cast<std::size_t>(std::find(kXmlTools.begin(), kXmlTools.end(), name) -
                                  kXmlTools.begin());
}

std::string_view Trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// A tag `<name>` at `at` whose name is lower case letters and underscores: the name, else empty.
std::string_view TagAt(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '<')
    return {};
  std::size_t end = at + 1;
  while (end < text.size() && ((text[end] >= 'a' && text[end] <= 'z') || text[end] == '_'))
    ++end;
  if (end == at + 1 || end >= text.size() || text[end] != '>')
    return {};
  return text.substr(at + 1, end - at - 1);
}

// The parameters of an XML tool call, `<param>value</param>` one after another, as a JSON
// object of trimmed strings. A file's content or a diff may hold tags of its own, so its value
// ends at the last closing tag of its name.
std::string XmlParameters(std::string_view inner) {
  std::string object = "{";
  std::size_t at = 0;
  bool first = true;
  while ((at = inner.find('<', at)) != std::string_view::npos) {
    const std::string_view name = TagAt(inner, at);
    if (name.empty()) {
      ++at;
      continue;
    }
    const std::string close = "</" + std::string(name) + ">";
    const std::size_t start = at + name.size() + 2;
    const bool greedy = name == "content" || name == "diff";
    const std::size_t end = greedy ? inner.rfind(close) : inner.find(close, start);
    if (end == std::string_view::npos || end < start)
      break;  // no parameter structure past here (and no search again: linear time)
    if (!first)
      object.push_back(',');
    first = false;
    AppendJsonString(object, name);
    object.push_back(':');
    AppendJsonString(object, Trim(inner.substr(start, end - start)));
    at = end + close.size();
  }
  if (first && !Trim(inner).empty()) {  // no parameters: the body is kept as it is
    object.append("\"text\":");
    AppendJsonString(object, Trim(inner));
  }
  object.push_back('}');
  return object;
}

class ClineImport {
 public:
  explicit ClineImport(const ImportLimits& limits) : out_(limits) {}

  Status<ImportError> Take(const Json& message, const Where& where) {
    ++out_.report().records;
    HARNESS_TRY(const std::string role, RequireString(message, where, "role"));
    HARNESS_TRY(const Json* content, Find(message, where, "content"));
    if (content == nullptr)
      return RecordError(where.Member("content"), "missing member \"content\"");
    const Where at = where.Member("content");
    if (content->is_string()) {
      Json blocks = Json::array({Json{{"type", "text"}, {"text", *content}}});
      return Blocks(role, blocks, at, where, true);
    }
    if (!content->is_array())
      return RecordError(at, "expected a string or an array of blocks");
    return Blocks(role, *content, at, where, false);
  }

  Result<ImportedTranscript, ImportError> Finish() {
    return out_.Finish("no message (is this a Cline api_conversation_history.json?)");
  }

 private:
  Status<ImportError> Blocks(const std::string& role, const Json& content, const Where& at,
                             const Where& where, bool from_string) {
    if (role == "assistant")
      return Assistant(content, at, where, from_string);
    if (role != "user") {
      return RecordError(where.Member("role"),
                         fmt::format("unknown role {} (expected \"user\" or \"assistant\")",
                                     QuoteForDetail(role, 16)));
    }
    std::vector<Message> results;
    std::vector<Block> blocks;
    ToolResultMessage* xml_result = nullptr;  // the result whose blocks follow its header
    for (std::size_t i = 0; i < content.size(); ++i) {
      const Where block_at = from_string ? at : at.Element(i);
      const Json& block = content[i];
      HARNESS_TRY(const std::string type, RequireString(block, block_at, "type"));
      if (type == "tool_result") {
        HARNESS_TRY(Message result, AnthropicToolResult(block, block_at, out_));
        results.push_back(std::move(result));
        xml_result = nullptr;
        continue;
      }
      if (type == "text") {
        HARNESS_TRY(const std::string text, RequireString(block, block_at, "text"));
        std::string rest;
        if (std::optional<std::string> id = ResultHeader(text, rest)) {
          results.push_back(ToolResultMessage{{}, std::move(*id), false});
          xml_result = &std::get<ToolResultMessage>(results.back().value);
          if (!Trim(rest).empty())
            xml_result->blocks.push_back(TextBlock{std::move(rest)});
          continue;
        }
        if (text.starts_with("<environment_details>"))
          xml_result = nullptr;
      }
      HARNESS_TRY(std::optional<Block> converted, AnthropicBlock(block, block_at, out_));
      if (!converted)
        continue;
      if (xml_result != nullptr)
        xml_result->blocks.push_back(std::move(*converted));
      else
        blocks.push_back(std::move(*converted));
    }
    for (Message& result : results) {
      if (result.blocks().empty())
        std::get<ToolResultMessage>(result.value).blocks.push_back(TextBlock{""});
      HARNESS_CHECK(out_.Add(std::move(result), where));
    }
    if (!blocks.empty())
      return out_.Add(UserMessage{std::move(blocks)}, where);
    return {};
  }

  // "[read_file for 'src/a.ts'] Result:" at the start of a user text block: the id of the
  // call of the last assistant message it answers, and the text after the header line in
  // `rest`. nullopt for any other text (kept as the user's).
  std::optional<std::string> ResultHeader(std::string_view text, std::string& rest) {
    constexpr std::string_view kEnd = "] Result:";
    if (!text.starts_with("["))
      return std::nullopt;
    // The header names the tool, then what it acted on (which may span lines: a question).
    const std::size_t name_end = std::min(text.find_first_of(" ]"), text.size());
    const std::string_view name = text.substr(1, name_end - 1);
    const std::size_t end = text.find(kEnd);
    const std::string_view between = end == std::string_view::npos || end < name_end
                                         ? ""
                                         : text.substr(name_end, end - name_end);
    if (end == std::string_view::npos || end < name_end ||
        (!between.empty() && !between.starts_with(" for ")))
      return std::nullopt;
    std::size_t after = end + kEnd.size();
    if (after < text.size() && text[after] == '\n')
      ++after;
    // By name; else the first unanswered call, since the results come in call order and a
    // header may name the tool otherwise ("[subagents]" answers use_subagents).
    std::optional<std::string> id = open_.AnswerByName(std::string(name));
    if (!id)
      id = open_.AnswerFirst();
    if (id)
      rest = std::string(text.substr(after));
    return id;
  }

  Status<ImportError> Assistant(const Json& content, const Where& at, const Where& where,
                                bool from_string) {
    open_.Clear();
    const bool has_tool_use = std::any_of(content.begin(), content.end(), [](const Json& block) {
      if (!block.is_object())
        return false;
      const auto type = block.find("type");
      return type != block.end() && type->is_string() && *type == "tool_use";
    });
    std::vector<Block> blocks;
    for (std::size_t i = 0; i < content.size(); ++i) {
      const Where block_at = from_string ? at : at.Element(i);
      HARNESS_TRY(std::optional<Block> converted, AnthropicBlock(content[i], block_at, out_));
      if (!converted)
        continue;
      const auto* text = converted->as<TextBlock>();
      if (text != nullptr && !has_tool_use) {
        SplitXmlCalls(text->text, blocks);
        continue;
      }
      // Cline writes the results of its provider tool calls as text too, headed like the XML
      // calls' ("[read_file for 'a.ts'] Result:").
      if (const auto* call = converted->as<ToolUseBlock>())
        open_.Add(call->id, call->name);
      blocks.push_back(std::move(*converted));
    }
    return out_.AddAssistant(fmt::format("message-{}", ++messages_), std::move(blocks),
                             std::nullopt, where);
  }

  // The model's text with its XML tool calls taken out as tool_use blocks (ids cline-call-N),
  // the text around them kept in order.
  void SplitXmlCalls(std::string_view text, std::vector<Block>& blocks) {
    std::size_t kept = 0;
    std::size_t at = 0;
    // A tool whose closing tag is missing past one point is missing past every later one: each
    // is searched for once at most, so the text is read in linear time.
    std::array<bool, kXmlTools.size()> unclosed{};
    while ((at = text.find('<', at)) != std::string_view::npos) {
      const std::string_view name = TagAt(text, at);
      const std::size_t tool = XmlToolIndex(name);
      const std::string close = "</" + std::string(name) + ">";
      const std::size_t end = tool < kXmlTools.size() && !unclosed[tool] ? text.find(close, at)
                                                                         : std::string_view::npos;
      if (end == std::string_view::npos) {
        if (tool < kXmlTools.size())
          unclosed[tool] = true;
        ++at;
        continue;
      }
      if (const std::string_view before = Trim(text.substr(kept, at - kept)); !before.empty())
        blocks.push_back(TextBlock{std::string(before)});
      const std::size_t inner = at + name.size() + 2;
      std::string id = fmt::format("cline-call-{}", ++generated_);
      open_.Add(id, std::string(name));
      blocks.push_back(ToolUseBlock{std::move(id), std::string(name),
                                    XmlParameters(text.substr(inner, end - inner)), std::nullopt,
                                    ""});
      at = kept = end + close.size();
    }
    if (const std::string_view after = Trim(text.substr(kept)); !after.empty())
      blocks.push_back(TextBlock{std::string(after)});
  }

  TranscriptBuilder out_;
  OpenCalls open_;  // the calls of the last assistant message
  std::size_t generated_ = 0;
  std::size_t messages_ = 0;
};

}  // namespace

Result<ImportedTranscript, ImportError> ImportCline(std::string_view text,
                                                    const ImportLimits& limits) {
  ClineImport import(limits);
  HARNESS_TRY(const ArrayDocument document,
              ReadArrayDocument(text, limits, [&](const Where& where, Json& message) {
                return import.Take(message, where);
              }));
  if (document.json_error)
    return FromDocumentJsonError(text, *document.json_error);
  if (document.root) {
    return RecordError(Where{0, "$"},
                       "expected an array of messages: not a Cline api_conversation_history.json");
  }
  return import.Finish();
}

}  // namespace harness::import_internal
