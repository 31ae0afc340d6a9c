#include "harness/import/import.h"

#include <fmt/format.h>

#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "content/internal/raw_json.h"
#include "core/internal/json_dom.h"
#include "harness/content/transcript.h"
#include "import/import_internal.h"

namespace harness {

std::string_view ImportFormatName(ImportFormat format) {
  switch (format) {
    case ImportFormat::kClaudeCode:
      return "claude-code";
    case ImportFormat::kCodex:
      return "codex";
    case ImportFormat::kOpenHands:
      return "openhands";
    case ImportFormat::kSweAgent:
      return "swe-agent";
    case ImportFormat::kGemini:
      return "gemini";
    case ImportFormat::kCline:
      return "cline";
  }
  return "unknown";
}

std::optional<ImportFormat> ImportFormatFromName(std::string_view name) {
  for (const ImportFormat format :
       {ImportFormat::kClaudeCode, ImportFormat::kCodex, ImportFormat::kOpenHands,
        ImportFormat::kSweAgent, ImportFormat::kGemini, ImportFormat::kCline}) {
    if (ImportFormatName(format) == name)
      return format;
  }
  return std::nullopt;
}

std::string_view ImportErrorKindName(ImportErrorKind kind) {
  switch (kind) {
    case ImportErrorKind::kJson:
      return "json";
    case ImportErrorKind::kRecord:
      return "record";
    case ImportErrorKind::kEmpty:
      return "empty";
    case ImportErrorKind::kLimit:
      return "limit";
  }
  return "unknown";
}

std::string ImportError::Describe() const {
  if (line == 0)
    return fmt::format("{}: {}", path, rule);
  return fmt::format("line {}: {}: {}", line, path, rule);
}

Result<ImportedTranscript, ImportError> ImportTranscript(ImportFormat format, std::string_view text,
                                                         const ImportLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Fail(ImportError{ImportErrorKind::kLimit, 0, "$",
                            fmt::format("the file is {} bytes, more than the limit of {}",
                                        text.size(), limits.max_bytes)});
  }
  switch (format) {
    case ImportFormat::kClaudeCode:
      return import_internal::ImportClaudeCode(text, limits);
    case ImportFormat::kCodex:
      return import_internal::ImportCodex(text, limits);
    case ImportFormat::kOpenHands:
      return import_internal::ImportOpenHands(text, limits);
    case ImportFormat::kSweAgent:
      return import_internal::ImportSweAgent(text, limits);
    case ImportFormat::kGemini:
      return import_internal::ImportGemini(text, limits);
    case ImportFormat::kCline:
      return import_internal::ImportCline(text, limits);
  }
  return Fail(ImportError{ImportErrorKind::kRecord, 0, "$", "unknown format"});
}

namespace import_internal {

Where Where::Member(std::string_view name) const {
  Where out{line, path};
  out.path.append(".").append(name);
  return out;
}

Where Where::Element(std::size_t index) const {
  return Where{line, fmt::format("{}[{}]", path, index)};
}

Failure<ImportError> RecordError(const Where& where, std::string rule) {
  return Fail(ImportError{ImportErrorKind::kRecord, where.line, where.path, std::move(rule)});
}

Failure<ImportError> FromJsonError(std::size_t line, const JsonError& error) {
  const ImportErrorKind kind =
      error.kind == JsonErrorKind::kTooLarge ? ImportErrorKind::kLimit : ImportErrorKind::kJson;
  std::string rule = error.detail;
  if (error.offset != 0)
    rule.append(fmt::format(" (at byte {})", error.offset));
  return Fail(ImportError{kind, line, error.path, std::move(rule)});
}

Failure<ImportError> FromDocumentJsonError(std::string_view text, const JsonError& error) {
  Failure<ImportError> failure = FromJsonError(0, error);
  const std::size_t end = text.find('\n');
  if (error.kind == JsonErrorKind::kSyntax && end != std::string_view::npos) {
    const std::string_view first = text.substr(0, end);
    auto line = ParseStrictJson(first, JsonLimits{first.size(), kRecordJsonDepth});
    if (line.ok() && line->is_object()) {
      failure.error.rule.append(
          "; the file holds one JSON object a line, as Claude Code sessions (--from claude-code) "
          "and Codex rollouts (--from codex) do");
    }
  }
  return failure;
}

namespace {

std::string TypeRule(std::string_view expected, const Json& found) {
  return fmt::format("expected {}, found {}", expected, JsonTypeName(found));
}

}  // namespace

Result<const Json*, ImportError> Find(const Json& object, const Where& where,
                                      std::string_view name) {
  if (!object.is_object())
    return RecordError(where, TypeRule("an object", object));
  const auto found = object.find(name);
  if (found == object.end() || found->is_null())
    return static_cast<const Json*>(nullptr);
  return &*found;
}

Result<std::optional<std::string>, ImportError> OptionalString(const Json& object,
                                                               const Where& where,
                                                               std::string_view name) {
  HARNESS_TRY(const Json* value, Find(object, where, name));
  if (value == nullptr)
    return std::optional<std::string>();
  if (!value->is_string())
    return RecordError(where.Member(name), TypeRule("a string", *value));
  return std::optional<std::string>(value->get<std::string>());
}

Result<const Json*, ImportError> OptionalArray(const Json& object, const Where& where,
                                               std::string_view name) {
  HARNESS_TRY(const Json* value, Find(object, where, name));
  if (value != nullptr && !value->is_array())
    return RecordError(where.Member(name), TypeRule("an array", *value));
  return value;
}

Result<const Json*, ImportError> OptionalObject(const Json& object, const Where& where,
                                                std::string_view name) {
  HARNESS_TRY(const Json* value, Find(object, where, name));
  if (value != nullptr && !value->is_object())
    return RecordError(where.Member(name), TypeRule("an object", *value));
  return value;
}

Result<std::optional<bool>, ImportError> OptionalBool(const Json& object, const Where& where,
                                                      std::string_view name) {
  HARNESS_TRY(const Json* value, Find(object, where, name));
  if (value == nullptr)
    return std::optional<bool>();
  if (!value->is_boolean())
    return RecordError(where.Member(name), TypeRule("true or false", *value));
  return std::optional<bool>(value->get<bool>());
}

Result<std::string, ImportError> RequireString(const Json& object, const Where& where,
                                               std::string_view name) {
  HARNESS_TRY(std::optional<std::string> value, OptionalString(object, where, name));
  if (!value)
    return RecordError(where.Member(name), fmt::format("missing member \"{}\"", name));
  return std::move(*value);
}

Result<const Json*, ImportError> RequireObject(const Json& object, const Where& where,
                                               std::string_view name) {
  HARNESS_TRY(const Json* value, OptionalObject(object, where, name));
  if (value == nullptr)
    return RecordError(where.Member(name), fmt::format("missing member \"{}\"", name));
  return value;
}

Result<TextParts, ImportError> TextOfContent(const Json& content, const Where& where) {
  TextParts out;
  if (content.is_string()) {
    out.text = content.get<std::string>();
    return out;
  }
  if (!content.is_array())
    return RecordError(where, TypeRule("a string or an array of parts", content));
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Where part = where.Element(i);
    HARNESS_TRY(std::optional<std::string> type, OptionalString(content[i], part, "type"));
    HARNESS_TRY(std::optional<std::string> text, OptionalString(content[i], part, "text"));
    if (type.value_or("text") != "text" || !text) {
      ++out.dropped;
      continue;
    }
    if (!out.text.empty())
      out.text.push_back('\n');
    out.text.append(*text);
  }
  return out;
}

Result<std::string, ImportError> ToolInputFromValue(const Json& value, const Where& where) {
  if (raw_json::JsonDepth(value, kMaxRawJsonDepth) > kMaxRawJsonDepth) {
    return Fail(ImportError{ImportErrorKind::kLimit, where.line, where.path,
                            fmt::format("a tool input nested deeper than {} levels, the most a "
                                        "transcript holds",
                                        kMaxRawJsonDepth)});
  }
  std::optional<std::string> text = raw_json::CompactJsonFromDom(value);
  if (!text)
    return RecordError(where, "a tool input that cannot be written as JSON");
  return std::move(*text);
}

std::string ToolInputFromText(std::string_view text) {
  const JsonLimits limits{text.size(), kMaxRawJsonDepth};
  if (ParseStrictJson(text, limits).ok())
    return raw_json::CompactJson(text);
  std::string quoted;
  AppendJsonString(quoted, text);
  return quoted;
}

Status<ImportError> ParseJsonLine(std::string_view line_text, std::size_t line, Json& out) {
  const JsonLimits limits{line_text.size(), kRecordJsonDepth};
  auto parsed = ParseStrictJson(line_text, limits);
  if (!parsed.ok())
    return FromJsonError(line, parsed.error());
  if (!parsed->is_object()) {
    return RecordError(Where{line, "$"}, TypeRule("an object (one record a line)", *parsed));
  }
  out = std::move(*parsed);
  return {};
}

namespace {

// The end of the JSON value that starts at `at` (an object or array: where its brackets close,
// counted outside strings; else the end of the line), and how many line feeds it spans.
std::size_t EndOfValue(std::string_view text, std::size_t at, std::size_t& line_feeds) {
  if (text[at] != '{' && text[at] != '[') {
    const std::size_t end = text.find('\n', at);
    return end == std::string_view::npos ? text.size() : end;
  }
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '\n')
      ++line_feeds;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return at + 1;
    }
  }
  return text.size();
}

bool IsJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Whether the first non-blank line of `text` is one whole JSON value (a JSONL file).
bool FirstLineIsWholeJson(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos)
      end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    return ParseStrictJson(line, JsonLimits{line.size(), kRecordJsonDepth}).ok();
  }
  return true;
}

}  // namespace

Result<TokenCount, ImportError> TokenCountMember(const Json& object, const Where& where,
                                                 std::string_view name) {
  HARNESS_TRY(const Json* value, Find(object, where, name));
  if (value == nullptr)
    return TokenCount{0};
  if (!value->is_number_unsigned())
    return RecordError(where.Member(name), "expected a whole number of tokens");
  return value->get<TokenCount>();
}

Result<ArrayDocument, ImportError> ReadArrayDocument(std::string_view text,
                                                     const ImportLimits& limits,
                                                     const ElementSink& element) {
  std::optional<ImportError> failed;
  const JsonLimits json_limits{limits.max_bytes, kRecordJsonDepth};
  auto read = ParseStrictJsonArray(text, json_limits,
                                   [&](std::size_t index, Json& value, std::string_view) {
                                     auto taken = element(Where{0, "$"}.Element(index), value);
                                     if (!taken.ok())
                                       failed = std::move(taken).error();
                                     return taken.ok();
                                   });
  if (failed)
    return Fail(std::move(*failed));
  ArrayDocument document;
  if (!read.ok())
    document.json_error = std::move(read).error();
  else
    document.root = std::move(read->root);
  return document;
}

Status<ImportError> ForEachJsonRecord(std::string_view text, const ImportLimits& limits,
                                      const RecordSink& sink) {
  std::size_t first = 0;
  while (first < text.size() && IsJsonSpace(text[first]))
    ++first;
  if (first < text.size() && text[first] == '[') {
    HARNESS_TRY(const ArrayDocument document,
                ReadArrayDocument(text, limits, [&](const Where& where, Json& record) {
                  if (!record.is_object()) {
                    return Status<ImportError>(
                        RecordError(where, fmt::format("expected an object (a record), found {}",
                                                       JsonTypeName(record))));
                  }
                  return sink(where, record);
                }));
    if (document.json_error)
      return FromJsonError(0, *document.json_error);
    return {};
  }
  if (FirstLineIsWholeJson(text)) {
    return ForEachJsonLine(text, [&](std::size_t line, const Json& record) {
      return sink(Where{line, "$"}, record);
    });
  }
  // Pretty-printed objects one after another.
  std::size_t line = 1;
  std::size_t at = 0;
  while (true) {
    while (at < text.size() && IsJsonSpace(text[at])) {
      if (text[at] == '\n')
        ++line;
      ++at;
    }
    if (at == text.size())
      return {};
    std::size_t line_feeds = 0;
    const std::size_t end = EndOfValue(text, at, line_feeds);
    Json record;
    HARNESS_CHECK(ParseJsonLine(text.substr(at, end - at), line, record));
    HARNESS_CHECK(sink(Where{line, "$"}, record));
    line += line_feeds;
    at = end;
  }
}

void OpenCalls::Clear() {
  calls_.clear();
  by_id_.clear();
  by_name_.clear();
  in_order_.clear();
}

void OpenCalls::Add(std::string id, std::string name) {
  const std::size_t index = calls_.size();
  by_id_[id].push_back(index);
  by_name_[std::move(name)].push_back(index);
  in_order_.push_back(index);
  calls_.push_back(Call{std::move(id), false});
}

std::optional<std::string> OpenCalls::Answer(std::deque<std::size_t>* queue) {
  // Calls answered through another queue are skipped here once, so each is popped at most once
  // from each queue.
  while (queue != nullptr && !queue->empty()) {
    Call& call = calls_[queue->front()];
    queue->pop_front();
    if (!call.answered) {
      call.answered = true;
      return call.id;
    }
  }
  return std::nullopt;
}

std::optional<std::string> OpenCalls::AnswerById(const std::string& id) {
  const auto found = by_id_.find(id);
  return Answer(found == by_id_.end() ? nullptr : &found->second);
}

std::optional<std::string> OpenCalls::AnswerByName(const std::string& name) {
  const auto found = by_name_.find(name);
  return Answer(found == by_name_.end() ? nullptr : &found->second);
}

std::optional<std::string> OpenCalls::AnswerFirst() {
  return Answer(&in_order_);
}

void TranscriptBuilder::Drop(std::string_view what, std::size_t count) {
  auto found = report_.dropped.find(std::string(what));
  if (found == report_.dropped.end() && report_.dropped.size() >= kMaxDroppedKinds)
    found = report_.dropped.try_emplace("other").first;
  else if (found == report_.dropped.end())
    found = report_.dropped.try_emplace(std::string(what)).first;
  found->second += count;
}

Status<ImportError> TranscriptBuilder::Push(Message message, const Where& where) {
  if (messages_.size() >= limits_.max_messages) {
    return Fail(ImportError{ImportErrorKind::kLimit, where.line, where.path,
                            fmt::format("more than {} messages, the limit", limits_.max_messages)});
  }
  if (auto valid = ValidateMessage(message); !valid.ok()) {
    return Fail(ImportError{
        ImportErrorKind::kLimit, where.line, where.path,
        fmt::format("the message cannot be a transcript message: {}", valid.error().rule)});
  }
  messages_.push_back(std::move(message));
  return {};
}

Status<ImportError> TranscriptBuilder::Add(Message message, const Where& where) {
  if (message.blocks().empty()) {
    Drop("message without content");
    return {};
  }
  return Push(std::move(message), where);
}

Status<ImportError> TranscriptBuilder::AddAssistant(std::string_view step,
                                                    std::vector<Block> blocks,
                                                    std::optional<Usage> usage,
                                                    const Where& where) {
  bool continues = !step.empty() && last_assistant_ != 0 && step == last_step_;
  for (std::size_t i = last_assistant_; continues && i < messages_.size(); ++i)
    continues = messages_[i].role() == Role::kTool;
  if (continues) {
    // Only the new blocks need checking: the message's earlier ones passed.
    if (auto valid = ValidateMessage(AssistantMessage{blocks, std::nullopt}); !valid.ok()) {
      return Fail(ImportError{
          ImportErrorKind::kLimit, where.line, where.path,
          fmt::format("the message cannot be a transcript message: {}", valid.error().rule)});
    }
    auto& assistant = std::get<AssistantMessage>(messages_[last_assistant_ - 1].value);
    for (Block& block : blocks)
      assistant.blocks.push_back(std::move(block));
    if (usage)
      assistant.usage = usage;
    return {};
  }
  if (blocks.empty()) {
    Drop("message without content");
    return {};
  }
  HARNESS_CHECK(Push(AssistantMessage{std::move(blocks), usage}, where));
  last_assistant_ = messages_.size();
  last_step_ = std::string(step);
  return {};
}

namespace {

// Pairs tool calls with results over the whole transcript (see import.h): one pass, memory
// proportional to the calls of one step.
class CallPairing {
 public:
  CallPairing(Transcript& out, ImportReport& report) : out_(out), report_(report) {}

  void Take(Message message) {
    if (auto* tool = std::get_if<ToolResultMessage>(&message.value)) {
      auto found = outstanding_.find(tool->tool_use_id);
      if (found == outstanding_.end() || found->second.empty()) {
        ++report_.dropped["tool result that answers no call"];
        return;
      }
      tool->tool_use_id = std::move(found->second.front());
      found->second.pop_front();
      open_.erase(tool->tool_use_id);
      out_.push_back(std::move(message));
      return;
    }
    CloseStep();
    if (auto* assistant = std::get_if<AssistantMessage>(&message.value)) {
      for (Block& block : assistant->blocks) {
        if (auto* call = block.as<ToolUseBlock>())
          Open(*call);
      }
    }
    out_.push_back(std::move(message));
  }

 private:
  void Open(ToolUseBlock& call) {
    const std::string source_id = call.id;
    if (call.id.empty())
      call.id = fmt::format("import-call-{}", ++generated_);
    // Two calls of a step with one id could not be told apart by their results: the later one
    // gets a suffix, and the results with that id answer the calls in order.
    while (!in_step_.insert(call.id).second)
      call.id = fmt::format("{}#{}", source_id, ++generated_);
    outstanding_[source_id].push_back(call.id);
    open_.insert(call.id);
    order_.push_back(call.id);
  }

  // A step ends where a message other than a tool result comes: each of its calls still open
  // gets an error result, in call order.
  void CloseStep() {
    for (const std::string& id : order_) {
      if (open_.count(id) == 0)
        continue;
      ToolResultMessage result;
      result.tool_use_id = id;
      result.is_error = true;
      result.blocks.push_back(TextBlock{std::string(kNoResultRecordedText)});
      out_.push_back(std::move(result));
      ++report_.results_added;
    }
    outstanding_.clear();
    open_.clear();
    in_step_.clear();
    order_.clear();
  }

  Transcript& out_;
  ImportReport& report_;
  std::unordered_map<std::string, std::deque<std::string>> outstanding_;  // source id -> ids
  std::unordered_set<std::string> open_;     // ids of the step's calls still unanswered
  std::unordered_set<std::string> in_step_;  // ids of the step's calls
  std::vector<std::string> order_;           // the same, in call order
  std::size_t generated_ = 0;
};

}  // namespace

Result<ImportedTranscript, ImportError> TranscriptBuilder::Finish(
    std::string_view what_is_missing) {
  ImportedTranscript out;
  out.report = std::move(report_);
  CallPairing pairing(out.transcript, out.report);
  for (Message& message : messages_)
    pairing.Take(std::move(message));
  messages_.clear();
  if (out.transcript.empty()) {
    return Fail(ImportError{ImportErrorKind::kEmpty, 0, "$",
                            fmt::format("no message to import: {}", what_is_missing)});
  }
  return out;
}

}  // namespace import_internal
}  // namespace harness
