// OpenHands trajectories (a JSON array of events, as "save trajectory" and the evaluation
// harness write them): docs/import.md.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/internal/json_dom.h"
#include "import/import_internal.h"

namespace harness::import_internal {
namespace {

// Events the conversation does not contain: the agent's state machine, memory retrieval and
// condensation bookkeeping.
bool IsBookkeeping(std::string_view action) {
  return action == "recall" || action == "change_agent_state" || action == "condensation" ||
         action == "condensation_request" || action == "null" || action == "agent_state_changed";
}

// The arguments the model wrote for call `id`, from the model response the event keeps; absent
// when the response does not have them in the chat completions shape.
std::optional<std::string> ArgumentsFromResponse(const Json& metadata, std::string_view id) {
  const auto response = metadata.find("model_response");
  if (response == metadata.end() || !response->is_object())
    return std::nullopt;
  const auto choices = response->find("choices");
  if (choices == response->end() || !choices->is_array())
    return std::nullopt;
  for (const Json& choice : *choices) {
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
      continue;
    const Json& message = choice["message"];
    const auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array())
      continue;
    for (const Json& call : *calls) {
      if (!call.is_object() || !call.contains("id") || !call["id"].is_string() ||
          call["id"].get_ref<const std::string&>() != id) {
        continue;
      }
      const auto function = call.find("function");
      if (function == call.end() || !function->is_object())
        return std::nullopt;
      const auto arguments = function->find("arguments");
      if (arguments == function->end() || !arguments->is_string())
        return std::nullopt;
      return arguments->get<std::string>();
    }
  }
  return std::nullopt;
}

// Whether an observation of kind `observation` can be the result of action `action` when no
// id links them: the observation names its action's kind (a browser action's is "browse"); an
// error or a rejection can answer any action.
bool Answers(std::string_view observation, std::string_view action) {
  if (observation == "error" || observation == "user_rejected")
    return true;
  if (observation == "browse")
    return action == "browse" || action == "browse_interactive";
  return observation == action;
}

// The members of an event that are not the action's arguments: the event's own envelope.
bool IsEnvelope(std::string_view name) {
  return name == "action" || name == "id" || name == "source" || name == "cause" ||
         name == "timestamp" || name == "message" || name == "tool_call_metadata" ||
         name == "llm_metrics" || name == "observation";
}

class OpenHandsImport {
 public:
  explicit OpenHandsImport(const ImportLimits& limits) : out_(limits) {}

  Status<ImportError> Take(const Json& event, const Where& where) {
    ++out_.report().records;
    if (!event.is_object())
      return RecordError(where, "expected an event object");
    HARNESS_TRY(const auto action, OptionalString(event, where, "action"));
    HARNESS_TRY(const auto observation, OptionalString(event, where, "observation"));
    HARNESS_TRY(const auto source, OptionalString(event, where, "source"));
    const Json* id = event.contains("id") ? &event["id"] : nullptr;
    const std::string event_id = id != nullptr && id->is_number_integer() ? id->dump() : "";
    if (action)
      return Action(event, where, *action, source.value_or(""), event_id);
    if (observation)
      return Observation(event, where, *observation);
    return RecordError(where,
                       "neither an \"action\" nor an \"observation\" member: not an "
                       "OpenHands event");
  }

  Result<ImportedTranscript, ImportError> Finish() {
    return out_.Finish("no message or tool event (is this an OpenHands trajectory?)");
  }

 private:
  Status<ImportError> Action(const Json& event, const Where& where, const std::string& action,
                             const std::string& source, const std::string& event_id) {
    HARNESS_TRY(const Json* args, OptionalObject(event, where, "args"));
    // The older serialization (the resolver's `history`) has no "args": the action's fields
    // are the event's own members.
    Json flattened = Json::object();
    if (args == nullptr) {
      for (const auto& [name, value] : event.items()) {
        if (!IsEnvelope(name))
          flattened[name] = value;
      }
    }
    const Json& arguments = args != nullptr ? *args : flattened;
    const Where args_at = args != nullptr ? where.Member("args") : where;
    if (IsBookkeeping(action)) {
      out_.Drop(fmt::format("action {}", QuoteForDetail(action, 24)));
      return {};
    }
    // Whatever this action adds ends the step: an earlier call no observation answered stays
    // unanswered.
    const std::optional<OpenCall> previous = std::move(open_);
    open_.reset();
    if (action == "system") {
      HARNESS_TRY(const std::string content, RequireString(arguments, args_at, "content"));
      return out_.Add(SystemMessage{{TextBlock{content}}}, where);
    }
    if (action == "message") {
      HARNESS_TRY(const auto content, OptionalString(arguments, args_at, "content"));
      std::vector<Block> blocks;
      if (content && !content->empty())
        blocks.push_back(TextBlock{*content});
      // "images_urls" is the older spelling.
      const char* images_name = arguments.contains("image_urls") ? "image_urls" : "images_urls";
      HARNESS_TRY(const Json* images, OptionalArray(arguments, args_at, images_name));
      for (std::size_t i = 0; images != nullptr && i < images->size(); ++i) {
        if (!(*images)[i].is_string())
          return RecordError(args_at.Member(images_name).Element(i), "expected a string");
        blocks.push_back(ImageFromUrl((*images)[i].get<std::string>()));
      }
      // Without a source (the older serialization drops it), the agent's messages are the
      // ones that wait for the user's answer; the others are the user's.
      bool from_user = source == "user";
      if (source.empty()) {
        HARNESS_TRY(const auto waits, OptionalBool(arguments, args_at, "wait_for_response"));
        from_user = !waits.value_or(false);
      }
      if (from_user)
        return out_.Add(UserMessage{std::move(blocks)}, where);
      return out_.AddAssistant("", std::move(blocks), std::nullopt, where);
    }
    if (source == "user" || source == "environment") {
      open_ = previous;
      out_.Drop(fmt::format("action {} of the {}", QuoteForDetail(action, 24),
                            source == "user" ? "user" : "environment"));
      return {};
    }
    std::vector<Block> blocks;
    HARNESS_TRY(const auto thought, OptionalString(arguments, args_at, "thought"));
    if (thought && !thought->empty())
      blocks.push_back(TextBlock{*thought});
    // The end of the run: no observation ever answers it, so it is what the agent said.
    if (action == "finish") {
      HARNESS_TRY(const auto final_thought, OptionalString(arguments, args_at, "final_thought"));
      if (final_thought && !final_thought->empty())
        blocks.push_back(TextBlock{*final_thought});
      return out_.AddAssistant("", std::move(blocks), std::nullopt, where);
    }
    HARNESS_TRY(const Json* metadata, OptionalObject(event, where, "tool_call_metadata"));
    ToolUseBlock call;
    std::string step;
    if (metadata != nullptr) {
      const Where at = where.Member("tool_call_metadata");
      HARNESS_TRY(call.id, RequireString(*metadata, at, "tool_call_id"));
      HARNESS_TRY(call.name, RequireString(*metadata, at, "function_name"));
      // One model response may hold several calls, run one after the other.
      const auto response = metadata->find("model_response");
      if (response != metadata->end() && response->is_object() && response->contains("id") &&
          (*response)["id"].is_string()) {
        step = (*response)["id"].get<std::string>();
      }
      if (std::optional<std::string> text = ArgumentsFromResponse(*metadata, call.id))
        call.input = ToolInputFromText(*text);
    } else {
      // Without function calling the action is the call; its observation names it as cause,
      // or, without ids, is the next observation of its kind. A call without an event id gets
      // an empty id here, which the pairing turns into "import-call-N" (the step holds only
      // this call, so the empty-id result below answers it).
      call.id = event_id.empty() ? "" : "openhands-" + event_id;
      call.name = action;
      if (!event_id.empty())
        generated_[event_id] = call.id;
      open_ = OpenCall{action, call.id};
    }
    if (!call.input) {
      HARNESS_TRY(call.input, ToolInputFromValue(arguments, args_at));
    }
    blocks.push_back(std::move(call));
    return out_.AddAssistant(step, std::move(blocks), std::nullopt, where);
  }

  Status<ImportError> Observation(const Json& event, const Where& where,
                                  const std::string& observation) {
    HARNESS_TRY(const auto content, OptionalString(event, where, "content"));
    HARNESS_TRY(const Json* metadata, OptionalObject(event, where, "tool_call_metadata"));
    std::optional<std::string> call_id;
    if (metadata != nullptr) {
      HARNESS_TRY(call_id,
                  RequireString(*metadata, where.Member("tool_call_metadata"), "tool_call_id"));
    } else if (event.contains("cause") && event["cause"].is_number_integer()) {
      const auto found = generated_.find(event["cause"].dump());
      if (found != generated_.end())
        call_id = found->second;
    } else if (open_ && Answers(observation, open_->action)) {
      call_id = open_->id;
    }
    if (call_id) {
      if (open_ && open_->id == *call_id)
        open_.reset();
      return out_.Add(
          ToolResultMessage{{TextBlock{content.value_or("")}}, *call_id, observation == "error"},
          where);
    }
    // An error that answers no call is what the agent was told: OpenHands shows it to the
    // model as a user message.
    if (observation == "error" && content && !content->empty()) {
      open_.reset();
      return out_.Add(UserMessage{{TextBlock{*content}}}, where);
    }
    out_.Drop(fmt::format("observation {}", QuoteForDetail(observation, 24)));
    return {};
  }

  // A call made without function calling that no observation has answered yet, in the step
  // the last message began.
  struct OpenCall {
    std::string action;
    std::string id;  // empty when the action had no event id
  };

  TranscriptBuilder out_;
  std::unordered_map<std::string, std::string> generated_;  // event id -> call id
  std::optional<OpenCall> open_;
};

}  // namespace

Result<ImportedTranscript, ImportError> ImportOpenHands(std::string_view text,
                                                        const ImportLimits& limits) {
  OpenHandsImport import(limits);
  HARNESS_TRY(const ArrayDocument document,
              ReadArrayDocument(text, limits, [&](const Where& where, Json& event) {
                return import.Take(event, where);
              }));
  if (document.json_error)
    return FromDocumentJsonError(text, *document.json_error);
  if (document.root) {
    // The evaluation harness's output record: {"instance_id": …, "history": [events], …}.
    const Json& root = *document.root;
    const Where where{0, "$"};
    if (!root.is_object() || !root.contains("history") || !root["history"].is_array()) {
      return RecordError(where,
                         "expected an array of events (or an object with a \"history\" "
                         "array of them): not an OpenHands trajectory");
    }
    const Json& history = root["history"];
    for (std::size_t i = 0; i < history.size(); ++i)
      HARNESS_CHECK(import.Take(history[i], where.Member("history").Element(i)));
  }
  return import.Finish();
}

}  // namespace harness::import_internal
