// Private reading and writing rules shared by the provider wires (openai_wire.cc,
// anthropic_wire.cc, provider_error.cc).
//
// Provider answers are read leniently in one way only: members the harness does not use are
// ignored (providers add members all the time), but every member it does use must have the
// documented type, and the document itself must be strict JSON (core/internal/json_dom.h) within a
// byte and a depth limit. Every failure is an InferenceError whose detail is a fixed phrase naming
// the member by its wire name: nothing of the answer's own text is ever quoted. Thread safety: pure
// functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "harness/core/result.h"
#include "harness/inference/request.h"

namespace harness::provider_internal {

InferenceError InvalidResponse(std::string detail);
// "message <index>: a <type> block has no <wire> form <where>"
InferenceError NoWireForm(std::string_view wire, std::size_t message, const Block& block,
                          std::string_view where);
InferenceError InvalidRequest(std::string detail);

// Strict JSON within `max_bytes`; nesting is bounded so that a tool input kMaxRawJsonDepth deep
// fits under the few levels of the wire around it.
Result<Json, InferenceError> ParseAnswer(std::string_view text, std::size_t max_bytes,
                                         std::string_view what);

// `object`'s member `name`, or nullptr when `object` is not an object or has no such member.
const Json* Member(const Json& object, std::string_view name);
// nullopt when absent or null; an error when present with another type.
Result<std::optional<std::string>, InferenceError> OptionalString(const Json& object,
                                                                  std::string_view name);
Result<std::optional<std::uint64_t>, InferenceError> OptionalCount(const Json& object,
                                                                   std::string_view name);
// An object member: nullptr when absent or null; an error when present with another type.
Result<const Json*, InferenceError> OptionalObject(const Json& object, std::string_view name);
Result<const Json*, InferenceError> OptionalArray(const Json& object, std::string_view name);

// A tool call's arguments as the model wrote them (OpenAI sends JSON text in a string):
// white space only or empty means no arguments ("{}"); anything else must be one strict JSON
// object at most kMaxRawJsonDepth deep. Returned compact (content's raw JSON form).
Result<std::string, InferenceError> ToolInputFromText(std::string_view text);
// A tool input the provider sent as a JSON object (Anthropic): must be an object.
Result<std::string, InferenceError> ToolInputFromDom(const Json& value);
// Raw JSON text of the content model (tool input, provider_state, input schema) as a DOM for
// an encoder; absent input is `{}`. `what` names the value in the error.
Result<Json, InferenceError> RawJsonToDom(const std::optional<std::string>& raw,
                                          std::string_view what);

// A tool definition as both wires describe it: {"name", "description" (when not empty),
// <schema_member>: the input schema as a DOM}. `index` names the tool in an error.
Result<Json, InferenceError> ToolDefinitionToDom(const ToolDefinition& tool, std::size_t index,
                                                 std::string_view schema_member);

// The body text of a request. Strings that are not valid UTF-8 get U+FFFD, as AppendJsonString
// does, instead of throwing.
std::string DumpJson(const Json& value);

}  // namespace harness::provider_internal

namespace harness {

// The typed failure of an error object found inside a 200 answer or a stream event (`document`,
// the whole parsed answer or event): the rules of ClassifyProviderError in
// harness/provider/provider_error.h.
InferenceError ClassifyProviderError(const Json& document);

}  // namespace harness
