// What the importers share (module-private): reading members of untrusted records with typed
// errors that carry the line and JSONPath, turning tool arguments into raw JSON, and the
// transcript builder that merges assistant steps and pairs tool calls with their results.
// Thread safety: a TranscriptBuilder is used by one thread; the functions are pure.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/content/data_url.h"  // ImageFromUrl
#include "harness/content/transcript.h"
#include "harness/import/import.h"

namespace harness::import_internal {

// How deep a record may nest while it is parsed: what a transcript admits in a tool input, plus
// the few levels of a record around a message. Deeper input is refused while parsing.
inline constexpr std::size_t kRecordJsonDepth = kMaxRawJsonDepth + 16;

// Where a record is: its line in a JSONL file (0 in a JSON document) and its JSONPath.
struct Where {
  std::size_t line = 0;
  std::string path = "$";

  Where Member(std::string_view name) const;
  Where Element(std::size_t index) const;
};

Failure<ImportError> RecordError(const Where& where, std::string rule);
Failure<ImportError> FromJsonError(std::size_t line, const JsonError& error);
// The same for a format that is one JSON document: when the file's first line is a JSON object
// of its own (a JSONL file), the rule says which formats are JSONL.
Failure<ImportError> FromDocumentJsonError(std::string_view text, const JsonError& error);

// Member `name` of `object` (which must be an object: else kRecord at `where`), or nullptr when
// absent or null.
Result<const Json*, ImportError> Find(const Json& object, const Where& where,
                                      std::string_view name);
// Optional members of a given type: absent or null is nullopt / nullptr; another type is kRecord.
Result<std::optional<std::string>, ImportError> OptionalString(const Json& object,
                                                               const Where& where,
                                                               std::string_view name);
Result<const Json*, ImportError> OptionalArray(const Json& object, const Where& where,
                                               std::string_view name);
Result<const Json*, ImportError> OptionalObject(const Json& object, const Where& where,
                                                std::string_view name);
Result<std::optional<bool>, ImportError> OptionalBool(const Json& object, const Where& where,
                                                      std::string_view name);
// Required members: absent or null is kRecord "missing member".
Result<std::string, ImportError> RequireString(const Json& object, const Where& where,
                                               std::string_view name);
Result<const Json*, ImportError> RequireObject(const Json& object, const Where& where,
                                               std::string_view name);

// A value that is a string, or an array of {"type":"text","text":...} parts (the chat format's
// two forms of content): the texts joined by newlines. Other parts are counted as dropped.
struct TextParts {
  std::string text;
  std::size_t dropped = 0;
};
Result<TextParts, ImportError> TextOfContent(const Json& content, const Where& where);

// A tool input given as a parsed value: its compact JSON text; nesting deeper than a transcript
// allows (kMaxRawJsonDepth) is kLimit at `where`.
Result<std::string, ImportError> ToolInputFromValue(const Json& value, const Where& where);
// A tool input given as text (OpenAI's "arguments"): the text compacted when it is strict JSON
// no deeper than kMaxRawJsonDepth, else the text as a JSON string, so nothing is lost.
std::string ToolInputFromText(std::string_view text);

// The calls of one step that results may answer, for the formats whose results name their call
// by id, by tool name or only by order: each answer takes the first unanswered call that fits,
// in amortized constant time (a step may hold very many calls).
class OpenCalls {
 public:
  void Clear();
  void Add(std::string id, std::string name);
  // The id of the call answered, or nullopt when no unanswered call fits.
  std::optional<std::string> AnswerById(const std::string& id);
  std::optional<std::string> AnswerByName(const std::string& name);
  std::optional<std::string> AnswerFirst();

 private:
  std::optional<std::string> Answer(std::deque<std::size_t>* queue);

  struct Call {
    std::string id;
    bool answered = false;
  };
  std::vector<Call> calls_;
  std::unordered_map<std::string, std::deque<std::size_t>> by_id_;
  std::unordered_map<std::string, std::deque<std::size_t>> by_name_;
  std::deque<std::size_t> in_order_;
};

// Builds the transcript record by record, then pairs tool calls (Finish).
class TranscriptBuilder {
 public:
  explicit TranscriptBuilder(const ImportLimits& limits) : limits_(limits) {}

  ImportReport& report() { return report_; }
  // Counts one dropped thing under `what` (bounded: see ImportReport).
  void Drop(std::string_view what, std::size_t count = 1);

  // Appends a user, system or tool message; one without blocks is dropped. `where` is for
  // the message-count limit.
  Status<ImportError> Add(Message message, const Where& where);
  // Appends `blocks` to the assistant message last added under the same non-empty `step`
  // key when nothing but tool messages came after it (a response the source split across
  // records); else starts a new assistant message. `usage`, when given, replaces the message's.
  Status<ImportError> AddAssistant(std::string_view step, std::vector<Block> blocks,
                                   std::optional<Usage> usage, const Where& where);

  // The paired transcript, or kEmpty when there is no message.
  Result<ImportedTranscript, ImportError> Finish(std::string_view what_is_missing);

 private:
  Status<ImportError> Push(Message message, const Where& where);

  ImportLimits limits_;
  Transcript messages_;
  ImportReport report_;
  std::size_t last_assistant_ = 0;  // index + 1 of the last assistant message; 0 for none
  std::string last_step_;
};

// Anthropic Messages content, as Claude Code and Cline write it (anthropic_blocks.cc).
// The message's usage (input, output, cache read and creation tokens), or nullopt without one.
Result<std::optional<Usage>, ImportError> AnthropicUsage(const Json& message, const Where& where);
// A content block: text, thinking, redacted_thinking, tool_use, image, document; nullopt (and
// counted in `out`) for the types the transcript has no place for and for empty text.
// tool_result blocks are the caller's (AnthropicToolResult).
Result<std::optional<Block>, ImportError> AnthropicBlock(const Json& block, const Where& where,
                                                         TranscriptBuilder& out);
// A tool_result block as a tool message: its content (a string or blocks) directly.
Result<Message, ImportError> AnthropicToolResult(const Json& block, const Where& where,
                                                 TranscriptBuilder& out);

// One tool call a Codex code-mode program makes, `tools.NAME(ARGUMENT)` in code (not in a
// string or a comment): the name, and the argument as compact JSON when it is a literal
// (objects with bare or quoted keys, arrays, strings, numbers, true, false, null), else the
// argument's source text as a JSON string. A call inside another call's argument is part of
// that argument's text. At most `max_calls` calls, in program order (codex_code_mode.cc).
struct CodeModeCall {
  std::string name;
  std::string input;
};
std::vector<CodeModeCall> CodeModeCalls(std::string_view program, std::size_t max_calls);

// Splits `text` into lines (LF, an optional CR before it dropped) and parses each non-blank
// one; `line` receives the 1-based number and the object. A line that is not strict JSON or not
// an object is an error.
template <class Sink>
Status<ImportError> ForEachJsonLine(std::string_view text, Sink&& sink);

Status<ImportError> ParseJsonLine(std::string_view line_text, std::size_t line, Json& out);

template <class Sink>
Status<ImportError> ForEachJsonLine(std::string_view text, Sink&& sink) {
  std::size_t line = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    ++line;
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line_text = text.substr(at, end - at);
    at = end + 1;
    if (!line_text.empty() && line_text.back() == '\r')
      line_text.remove_suffix(1);
    if (line_text.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    Json value;
    if (auto parsed = ParseJsonLine(line_text, line, value); !parsed.ok())
      return parsed;
    if (auto handled = sink(line, value); !handled.ok())
      return handled;
  }
  return {};
}

// A member that is a count of tokens: absent or null is 0, anything but a whole number kRecord.
Result<TokenCount, ImportError> TokenCountMember(const Json& object, const Where& where,
                                                 std::string_view name);

// Receives an element of a document's root array and where it is ($[i]); it may move from it.
using ElementSink = std::function<Status<ImportError>(const Where& where, Json& element)>;

// A document whose root is expected to be an array, read one element at a time
// (ParseStrictJsonArray); a sink's error stops the read and is returned.
struct ArrayDocument {
  std::optional<Json> root;             // the whole document when its root is not an array
  std::optional<JsonError> json_error;  // the document is not strict JSON (the caller words it)
};
Result<ArrayDocument, ImportError> ReadArrayDocument(std::string_view text,
                                                     const ImportLimits& limits,
                                                     const ElementSink& element);

// Receives one record of a file of records and where it is.
using RecordSink = std::function<Status<ImportError>(const Where& where, const Json& record)>;

// The records of a file that holds JSON objects one a line (JSONL), as one JSON array of them,
// or as a stream of pretty-printed objects (`jq .` of a JSONL file): by the first byte that is
// not white space ('[': an array, read one element at a time) and whether the first non-blank
// line is a whole JSON value (JSONL). A JSONL record is at Where{line, "$"}; an array element at
// Where{0, "$[i]"}; a pretty-printed object at Where{its first line, "$"}. Every record must be
// an object. Splitting the stream counts brackets outside strings (no recursion); each value is
// then parsed strictly, so a malformed one is a kJson error at its first line.
Status<ImportError> ForEachJsonRecord(std::string_view text, const ImportLimits& limits,
                                      const RecordSink& sink);

// A records import: `Import` takes each record (Take(where, object)) and then finishes
// (Finish()).
template <class Import>
Result<ImportedTranscript, ImportError> ImportJsonRecords(std::string_view text,
                                                          const ImportLimits& limits) {
  Import import(limits);
  HARNESS_CHECK(ForEachJsonRecord(text, limits, [&](const Where& where, const Json& record) {
    return import.Take(where, record);
  }));
  return import.Finish();
}

Result<ImportedTranscript, ImportError> ImportClaudeCode(std::string_view text,
                                                         const ImportLimits& limits);
Result<ImportedTranscript, ImportError> ImportCodex(std::string_view text,
                                                    const ImportLimits& limits);
Result<ImportedTranscript, ImportError> ImportOpenHands(std::string_view text,
                                                        const ImportLimits& limits);
Result<ImportedTranscript, ImportError> ImportGemini(std::string_view text,
                                                     const ImportLimits& limits);
Result<ImportedTranscript, ImportError> ImportCline(std::string_view text,
                                                    const ImportLimits& limits);
Result<ImportedTranscript, ImportError> ImportSweAgent(std::string_view text,
                                                       const ImportLimits& limits);

}  // namespace harness::import_internal
