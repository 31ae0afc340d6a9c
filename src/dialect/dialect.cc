// The dialects' shared reading rules and the element bookkeeping (dialect_internal.h).
#include <fmt/format.h>

#include "content/internal/raw_json.h"
#include "core/internal/json_dom.h"
#include "dialect/dialect_internal.h"

namespace harness {

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kOpenAiChat:
      return "openai-chat";
    case Dialect::kOpenAiResponses:
      return "openai-responses";
    case Dialect::kAnthropicMessages:
      return "anthropic-messages";
  }
  return "";
}

std::string_view DialectErrorKindName(DialectErrorKind kind) {
  switch (kind) {
    case DialectErrorKind::kJson:
      return "json";
    case DialectErrorKind::kShape:
      return "shape";
    case DialectErrorKind::kUnsupported:
      return "unsupported";
    case DialectErrorKind::kLimit:
      return "limit";
  }
  return "";
}

std::string DialectError::Describe() const {
  if (element == kNoElement)
    return fmt::format("{}: {}", path, rule);
  return fmt::format("element {}: {}: {}", element, path, rule);
}

Result<DialectConversation, DialectError> ReadOpenAiChat(std::string_view json,
                                                         const DialectLimits& limits) {
  return dialect_internal::ReadConversation(Dialect::kOpenAiChat, json, limits, "messages",
                                            dialect_internal::ChatElement);
}

Result<DialectConversation, DialectError> ReadOpenAiResponses(std::string_view json,
                                                              const DialectLimits& limits) {
  return dialect_internal::ReadConversation(Dialect::kOpenAiResponses, json, limits, "input",
                                            dialect_internal::ResponsesElement);
}

Result<DialectConversation, DialectError> ReadAnthropicMessages(std::string_view json,
                                                                const DialectLimits& limits) {
  const auto system = [](const Json& value, std::string_view text,
                         DialectConversation& out) -> Status<DialectError> {
    HARNESS_TRY(out.system,
                dialect_internal::AnthropicSystem(value, dialect_internal::At{}.Member("system")));
    out.system_json = std::string(text);
    return {};
  };
  return dialect_internal::ReadConversation(Dialect::kAnthropicMessages, json, limits, "messages",
                                            dialect_internal::AnthropicElement, "system", system);
}

Result<DialectConversation, DialectError> ReadDialect(Dialect dialect, std::string_view json,
                                                      const DialectLimits& limits) {
  switch (dialect) {
    case Dialect::kOpenAiChat:
      return ReadOpenAiChat(json, limits);
    case Dialect::kOpenAiResponses:
      return ReadOpenAiResponses(json, limits);
    case Dialect::kAnthropicMessages:
      break;
  }
  return ReadAnthropicMessages(json, limits);
}

std::optional<std::size_t> ElementStartingAt(const DialectConversation& conversation,
                                             std::size_t message) {
  if (message > conversation.transcript.size())
    return std::nullopt;
  const auto& elements = conversation.elements;
  std::size_t index = 0;
  while (index < elements.size() && elements[index].first_message < message)
    ++index;
  // Elements start in order, so only the one before can reach past `message`.
  if (index > 0) {
    const DialectElement& before = elements[index - 1];
    if (before.first_message + before.message_count > message)
      return std::nullopt;
  }
  return index;
}

std::optional<std::size_t> ElementHolding(const DialectConversation& conversation,
                                          std::size_t message) {
  const auto& elements = conversation.elements;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].first_message <= message &&
        message < elements[i].first_message + elements[i].message_count)
      return i;
  }
  return std::nullopt;
}

std::string WriteAnthropicSystem(std::string_view system) {
  std::string out;
  AppendJsonString(out, system);
  return out;
}

namespace dialect_internal {
namespace {

std::string TypeRule(std::string_view name, std::string_view expected, const Json& value) {
  return fmt::format("\"{}\" must be {}, not {}", name, expected, JsonTypeName(value));
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The exact texts of the values directly inside a container (array elements or object member
// values, in document order) of text ParseStrictJson accepted. Iterative: no recursion.
std::vector<std::string_view> ChildTexts(std::string_view container) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < container.size() && IsSpace(container[at]))
    ++at;
  if (at >= container.size() || (container[at] != '[' && container[at] != '{'))
    return out;
  const bool object = container[at] == '{';
  ++at;
  while (at < container.size()) {
    while (at < container.size() && IsSpace(container[at]))
      ++at;
    if (at >= container.size() || container[at] == ']' || container[at] == '}')
      break;
    if (object) {
      // Skip the member name and its colon.
      ++at;
      while (at < container.size() && container[at] != '"')
        at += container[at] == '\\' ? 2 : 1;
      ++at;
      while (at < container.size() && (IsSpace(container[at]) || container[at] == ':'))
        ++at;
    }
    const std::size_t start = at;
    std::size_t depth = 0;
    bool in_string = false;
    for (; at < container.size(); ++at) {
      const char c = container[at];
      if (in_string) {
        if (c == '\\')
          ++at;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        if (depth == 0)
          break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    std::size_t end = at;
    while (end > start && IsSpace(container[end - 1]))
      --end;
    out.push_back(container.substr(start, end - start));
    if (at < container.size() && container[at] == ',')
      ++at;
  }
  return out;
}

// The text of member `name` of an object document, by the member's position (a DOM keeps the
// document's order and has no duplicate names).
std::string_view MemberText(const Json& object, std::string_view text, std::string_view name) {
  std::size_t position = 0;
  for (auto it = object.begin(); it != object.end(); ++it, ++position) {
    if (it.key() == name) {
      const std::vector<std::string_view> values = ChildTexts(text);
      return position < values.size() ? values[position] : std::string_view();
    }
  }
  return {};
}

}  // namespace

At At::Member(std::string_view name) const {
  return At{element, fmt::format("{}.{}", path, name)};
}

At At::Element(std::size_t index) const {
  return At{element, fmt::format("{}[{}]", path, index)};
}

Failure<DialectError> Error(DialectErrorKind kind, const At& at, std::string rule) {
  return Fail(DialectError{kind, at.element, at.path, std::move(rule)});
}

Failure<DialectError> ShapeError(const At& at, std::string rule) {
  return Error(DialectErrorKind::kShape, at, std::move(rule));
}

Failure<DialectError> Unsupported(const At& at, std::string_view what, std::string_view type,
                                  std::string_view why) {
  return Error(
      DialectErrorKind::kUnsupported, at,
      fmt::format("{} of type {} is not supported: {}", what, QuoteForDetail(type, 32), why));
}

Failure<DialectError> UnknownRole(const At& at, std::string_view role, std::string_view roles) {
  return ShapeError(at.Member("role"),
                    fmt::format("unknown role {}: {}", QuoteForDetail(role, 16), roles));
}

const Json* Find(const Json& object, std::string_view name) {
  if (!object.is_object())
    return nullptr;
  const auto it = object.find(name);
  if (it == object.end() || it->is_null())
    return nullptr;
  return &*it;
}

Result<const Json*, DialectError> RequireMember(const Json& object, const At& at,
                                                std::string_view name) {
  const Json* value = Find(object, name);
  if (value == nullptr)
    return ShapeError(at.Member(name), fmt::format("missing member \"{}\"", name));
  return value;
}

Result<std::string, DialectError> RequireString(const Json& object, const At& at,
                                                std::string_view name) {
  HARNESS_TRY(const Json* value, RequireMember(object, at, name));
  if (!value->is_string())
    return ShapeError(at.Member(name), TypeRule(name, "a string", *value));
  return value->get<std::string>();
}

Result<std::optional<std::string>, DialectError> OptionalString(const Json& object, const At& at,
                                                                std::string_view name) {
  const Json* value = Find(object, name);
  if (value == nullptr)
    return std::optional<std::string>();
  if (!value->is_string())
    return ShapeError(at.Member(name), TypeRule(name, "a string", *value));
  return std::optional<std::string>(value->get<std::string>());
}

Result<const Json*, DialectError> OptionalArray(const Json& object, const At& at,
                                                std::string_view name) {
  const Json* value = Find(object, name);
  if (value != nullptr && !value->is_array())
    return ShapeError(at.Member(name), TypeRule(name, "an array", *value));
  return value;
}

Result<bool, DialectError> OptionalBool(const Json& object, const At& at, std::string_view name) {
  const Json* value = Find(object, name);
  if (value == nullptr)
    return false;
  if (!value->is_boolean())
    return ShapeError(at.Member(name), TypeRule(name, "true or false", *value));
  return value->get<bool>();
}

Status<DialectError> RequireObject(const Json& value, const At& at, std::string_view what) {
  if (!value.is_object())
    return ShapeError(at, fmt::format("{} must be an object, not {}", what, JsonTypeName(value)));
  return {};
}

Result<std::vector<Block>, DialectError> ReadParts(const Json& content, const At& at,
                                                   const PartReader& read) {
  std::vector<Block> blocks;
  if (content.is_string()) {
    blocks.push_back(TextBlock{content.get<std::string>()});
    return blocks;
  }
  if (!content.is_array()) {
    return ShapeError(at, fmt::format("must be a string or an array of content parts, not {}",
                                      JsonTypeName(content)));
  }
  for (std::size_t i = 0; i < content.size(); ++i) {
    const At part_at = at.Element(i);
    HARNESS_CHECK(RequireObject(content[i], part_at, "a content part"));
    HARNESS_TRY(const std::string type, RequireString(content[i], part_at, "type"));
    HARNESS_TRY(Block block, read(content[i], part_at, type));
    blocks.push_back(std::move(block));
  }
  return blocks;
}

Result<std::string, DialectError> ToolInputFromValue(const Json& value, const At& at) {
  if (raw_json::JsonDepth(value, kMaxRawJsonDepth) > kMaxRawJsonDepth) {
    return Error(DialectErrorKind::kLimit, at,
                 fmt::format("a tool input may nest at most {} levels", kMaxRawJsonDepth));
  }
  std::optional<std::string> text = raw_json::CompactJsonFromDom(value);
  if (!text)
    return ShapeError(at, "the tool input cannot be written as JSON");
  return std::move(*text);
}

std::string ToolInputFromText(std::string_view text) {
  if (ParseStrictJson(text, JsonLimits{text.size(), kMaxRawJsonDepth}).ok())
    return raw_json::CompactJson(text);
  std::string quoted;
  AppendJsonString(quoted, text);
  return quoted;
}

Result<Request, DialectError> ReadRequest(std::string_view text, const DialectLimits& limits,
                                          std::string_view member, std::string_view system_member) {
  const At root;
  if (text.size() > limits.max_bytes) {
    return Error(
        DialectErrorKind::kLimit, root,
        fmt::format("the input is {} bytes, over the limit of {}", text.size(), limits.max_bytes));
  }
  auto parsed = ParseStrictJson(text, JsonLimits{limits.max_bytes, limits.max_depth});
  if (!parsed.ok()) {
    const JsonError& error = parsed.error();
    return Error(DialectErrorKind::kJson, At{DialectError::kNoElement, error.path},
                 fmt::format("not strict JSON ({} at byte {}): {}", JsonErrorKindName(error.kind),
                             error.offset, error.detail));
  }
  Request out;
  out.document = std::move(parsed).value();
  std::string_view array_text = text;
  if (out.document.is_object()) {
    const At at = root.Member(member);
    const Json* array = Find(out.document, member);
    if (array == nullptr) {
      return ShapeError(at, fmt::format("missing member \"{}\" (the request body's array of the "
                                        "conversation)",
                                        member));
    }
    out.member = array;
    out.array_path = at.path;
    array_text = MemberText(out.document, text, member);
    if (!system_member.empty()) {
      out.system = Find(out.document, system_member);
      if (out.system != nullptr)
        out.system_text = MemberText(out.document, text, system_member);
    }
  }
  if (!out.array().is_array()) {
    return ShapeError(At{DialectError::kNoElement, out.array_path},
                      fmt::format("expected an array of the conversation (or a request body "
                                  "holding it as \"{}\"), not {}",
                                  member, JsonTypeName(out.array())));
  }
  if (out.array().size() > limits.max_elements) {
    return Error(
        DialectErrorKind::kLimit, At{DialectError::kNoElement, out.array_path},
        fmt::format("{} elements, over the limit of {}", out.array().size(), limits.max_elements));
  }
  out.elements = ChildTexts(array_text);
  return out;
}

void ConversationBuilder::Begin(std::string_view json) {
  out_.elements.push_back(DialectElement{std::string(json), "", out_.transcript.size(), 0, 0});
}

void ConversationBuilder::Add(Message message) {
  step_open_ = false;
  DialectElement& element = out_.elements.back();
  if (element.message_count == 0)
    element.first_message = out_.transcript.size();
  out_.transcript.push_back(std::move(message));
  ++element.message_count;
}

void ConversationBuilder::AddToStep(std::vector<Block> blocks) {
  DialectElement& element = out_.elements.back();
  if (!step_open_) {
    out_.transcript.push_back(AssistantMessage{{}, std::nullopt});
    step_open_ = true;
  }
  auto& step = std::get<AssistantMessage>(out_.transcript.back().value);
  for (Block& block : blocks)
    step.blocks.push_back(std::move(block));
  element.first_message = out_.transcript.size() - 1;
  element.message_count = 1;
}

void ConversationBuilder::JoinStep() {
  if (step_open_)
    out_.elements.back().first_message = out_.transcript.size() - 1;
}

Result<DialectConversation, DialectError> ConversationBuilder::Finish() {
  for (const DialectElement& element : out_.elements) {
    for (std::size_t i = 0; i < element.message_count; ++i) {
      const std::size_t index = element.first_message + i;
      auto valid = ValidateMessage(out_.transcript[index]);
      if (!valid.ok()) {
        const auto at = static_cast<std::size_t>(&element - out_.elements.data());
        return ShapeError(
            At{at, fmt::format("{}[{}]", array_path_, at)},
            fmt::format("cannot be read as a harness message: {}", valid.error().Describe()));
      }
    }
  }
  return std::move(out_);
}

Result<DialectConversation, DialectError> ReadConversation(
    Dialect dialect, std::string_view text, const DialectLimits& limits, std::string_view member,
    const ElementReader& element, std::string_view system_member, const SystemReader& system) {
  HARNESS_TRY(const Request request, ReadRequest(text, limits, member, system_member));
  ConversationBuilder out(dialect, request.array_path);
  if (request.system != nullptr && system)
    HARNESS_CHECK(system(*request.system, request.system_text, out.conversation()));
  const Json& array = request.array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const At at{i, fmt::format("{}[{}]", request.array_path, i)};
    HARNESS_CHECK(RequireObject(array[i], at, "an element of the conversation"));
    out.Begin(request.elements[i]);
    HARNESS_CHECK(element(array[i], at, out));
  }
  return out.Finish();
}

std::string ArrayOfBody(std::string_view body, std::string_view member) {
  auto parsed = ParseStrictJson(body);
  if (!parsed.ok() || !parsed->is_object())
    return "[]";
  const std::string_view text = MemberText(*parsed, body, member);
  return text.empty() ? std::string("[]") : std::string(text);
}

std::string JoinArray(std::string_view head_array, std::span<const DialectElement> retained) {
  std::string out(head_array.substr(0, head_array.size() - 1));  // without its ']'
  bool first = head_array.size() <= 2;
  for (const DialectElement& element : retained) {
    if (!first)
      out.push_back(',');
    first = false;
    out.append(element.json);
  }
  out.push_back(']');
  return out;
}

}  // namespace dialect_internal
}  // namespace harness
