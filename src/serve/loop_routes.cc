#include "serve/loop_routes.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"
#include "serve/client_tools.h"
#include "serve/context_breakdown.h"

namespace harness::serve {

namespace {

std::string_view StatusName(LoopStatus status) {
  switch (status) {
    case LoopStatus::kIdle:
      return "idle";
    case LoopStatus::kRunning:
      return "running";
    case LoopStatus::kExited:
      return "exited";
  }
  return "idle";
}

// GET /v1/sessions/{session}, from a snapshot of each of its loops (in served.loops order).
Reply SessionJson(const ServedSession& served, const std::vector<LoopSnapshot>& snapshots) {
  Session& session = *served.session;
  std::string out = "{\"session_id\":\"" + session.id().ToString() + "\",\"active_loop\":";
  const auto active = session.active_loop();
  out += active ? "\"" + active->ToString() + "\"" : "null";
  out += ",\"faulted\":";
  out += session.faulted() ? "true" : "false";
  out += ",\"loops\":[";
  for (std::size_t i = 0; i < served.loops.size(); ++i) {
    const LoopSnapshot* snapshot = &snapshots[i];
    out += i == 0 ? "" : ",";
    out += "{\"loop_id\":\"" + served.loops[i].ToString() + "\",\"status\":\"";
    out += StatusName(snapshot->status);
    out += "\",\"history_messages\":" + std::to_string(snapshot->history.size()) +
           ",\"queued_inputs\":" + std::to_string(snapshot->queued_inputs) +
           ",\"compacting\":" + (snapshot->attempt ? "true" : "false") + "}";
  }
  out += "]}";
  return Reply{200, out};
}

// GET …/history (`history`) or …/context, from the loop's snapshot.
Result<Reply, ApiError> LoopJson(const Route& route, const LoopSnapshot& s,
                                 const std::optional<LoopContext>& context, bool history) {
  std::string out = "{\"loop_id\":\"" + route.loop.ToString() +
                    "\",\"derived_prefix\":" + std::to_string(s.derived_prefix);
  if (history) {
    out += ",\"messages\":[";
    for (std::size_t i = 0; i < s.history.size(); ++i) {
      auto encoded = EncodeMessage(s.history[i]);
      if (!encoded.ok())
        return Fail(ApiError{ApiErrorKind::kInternal, encoded.error().Describe()});
      out += (i == 0 ? "" : ",") + *encoded;
    }
    // The ids pins and proposals name (docs/pins.md), parallel to the messages; what an undo can
    // still revert; the proposal waiting for approval, as its event (docs/preview.md).
    const auto ids = [](const std::vector<Uuid>& list) {
      std::string json = "[";
      for (std::size_t i = 0; i < list.size(); ++i)
        json += (i == 0 ? "\"" : ",\"") + list[i].ToString() + "\"";
      return json + "]";
    };
    out += "],\"message_ids\":" + ids(s.history_ids) + ",\"pinned\":" + ids(s.pinned) +
           ",\"masked\":" + ids(s.masked) + ",\"undoable\":" + std::to_string(s.undoable) +
           ",\"deferred_pins\":" + std::to_string(s.deferred_pins) +
           ",\"proposal\":" + (s.proposal ? EventJson(Event(*s.proposal)) : std::string("null"));
    return Reply{200, out + "}"};
  }
  // The categories a client can act on: the summary, and each role's messages with the
  // conservative estimate the retained-tail selection uses (compaction/tail.h).
  struct Category {
    std::uint64_t messages = 0;
    std::uint64_t estimated_tokens = 0;
  };
  std::map<std::string, Category> categories;
  for (std::size_t i = 0; i < s.history.size(); ++i) {
    const std::string name = i < s.derived_prefix ? "summary" : RoleName(s.history[i].role());
    categories[name].messages += 1;
    categories[name].estimated_tokens += EstimateMessageTokens(s.history[i]);
  }
  out += ",\"status\":\"" + std::string(StatusName(s.status)) +
         "\",\"history_messages\":" + std::to_string(s.history.size()) +
         ",\"queued_inputs\":" + std::to_string(s.queued_inputs) +
         ",\"compacting\":" + (s.attempt ? "true" : "false") + ",\"pressure\":\"" +
         std::string(PressureLevelName(s.pressure)) + "\",\"measurement\":";
  if (s.measurement) {
    out += "{\"input_tokens\":" + std::to_string(s.measurement->input_tokens) +
           ",\"input_limit\":" + std::to_string(s.measurement->input_limit) + "}";
  } else {
    out += "null";
  }
  out += ",\"categories\":{";
  bool first = true;
  for (const auto& [name, c] : categories) {
    out += (first ? "\"" : ",\"") + name + "\":{\"messages\":" + std::to_string(c.messages) +
           ",\"estimated_tokens\":" + std::to_string(c.estimated_tokens) + "}";
    first = false;
  }
  out += "}";
  if (context)
    out += ContextBreakdownJson(s, *context);
  return Reply{200, out + "}"};
}

// Undo, pin, unpin, approve, discard, mask, unmask: each answered once its event is durable.
void HistoryControl(const Route& route, Session& session,
                    const std::shared_ptr<SuspendedRequest>& later) {
  // An event's id, as the member `name`.
  const auto event_id = [&](std::string_view name) {
    return FinishWith<Uuid>(later, [name](const Uuid& id) {
      return Reply{200, "{\"" + std::string(name) + "\":\"" + id.ToString() + "\"}"};
    });
  };
  switch (route.kind) {
    case RouteKind::kPin:
    case RouteKind::kUnpin: {
      // While a compaction runs (a preview waiting for approval included) the pin waits for its
      // end in the loop, and its connection sleeps meanwhile.
      const bool pin = route.kind == RouteKind::kPin;
      session.PinMessage(route.loop, route.item, pin, FinishWith<bool>(later, [pin](bool changed) {
                           return Reply{200,
                                        std::string("{\"pinned\":") + (pin ? "true" : "false") +
                                            ",\"changed\":" + (changed ? "true" : "false") + "}"};
                         }));
      return;
    }
    case RouteKind::kUndo:
      return session.Undo(route.loop, event_id("event_id"));
    case RouteKind::kMask:
      return session.MaskToolOutputs(route.loop, event_id("event_id"));
    case RouteKind::kUnmaskAll:
    case RouteKind::kUnmask:
      return session.UnmaskToolOutputs(
          route.loop,
          route.kind == RouteKind::kUnmask ? std::vector<Uuid>{route.item} : std::vector<Uuid>{},
          event_id("event_id"));
    default:
      return session.DecideProposal(route.loop, route.item, route.kind == RouteKind::kApprove,
                                    event_id("terminal_event_id"));
  }
}

}  // namespace

Result<LoopRequestBody, ApiError> DecodeLoopRequest(const Route& route, std::string_view body) {
  LoopRequestBody decoded;
  switch (route.kind) {
    case RouteKind::kGetSession:
    case RouteKind::kHistory:
    case RouteKind::kContext:
    case RouteKind::kToolCalls:
    case RouteKind::kMaskedOriginal:
      return decoded;
    case RouteKind::kToolResults: {
      HARNESS_TRY(decoded.results, DecodeToolResults(body));
      return decoded;
    }
    default:
      if (auto empty = DecodeEmptyObject(body); !empty.ok())
        return Fail(empty.error());
      return decoded;
  }
}

void StartLoopRequest(const Route& route, LoopRequestBody request,
                      std::shared_ptr<ServedSession> served,
                      const std::shared_ptr<SuspendedRequest>& later) {
  Session& session = *served->session;
  const auto& results = request.results;
  switch (route.kind) {
    case RouteKind::kGetSession: {
      // Every loop's snapshot at once; the reply is made from them when the last one is in.
      struct Gathered {
        std::mutex mu;
        std::vector<LoopSnapshot> snapshots;
        std::optional<SessionError> refused;
        std::size_t left = 0;
      };
      auto gathered = std::make_shared<Gathered>();
      gathered->snapshots.resize(served->loops.size());
      gathered->left = served->loops.size();
      const auto render = [served, gathered] {
        return gathered->refused ? ErrorReply(FromSessionError(*gathered->refused))
                                 : SessionJson(*served, gathered->snapshots);
      };
      if (served->loops.empty())
        return later->Finish(render);
      for (std::size_t i = 0; i < served->loops.size(); ++i) {
        session.Snapshot(served->loops[i],
                         [gathered, i, later, render](Result<LoopSnapshot, SessionError> got) {
                           {
                             std::lock_guard lock(gathered->mu);
                             if (got.ok())
                               gathered->snapshots[i] = std::move(got).value();
                             else if (!gathered->refused)
                               gathered->refused = got.error();
                             if (--gathered->left != 0)
                               return;
                           }
                           later->Finish(render);
                         });
      }
      return;
    }
    case RouteKind::kHistory:
    case RouteKind::kContext: {
      std::optional<LoopContext> context;
      if (auto it = served->contexts.find(route.loop); it != served->contexts.end())
        context = it->second;
      const bool history = route.kind == RouteKind::kHistory;
      return session.Snapshot(
          route.loop,
          FinishWith<LoopSnapshot>(later, [route, context, history](const LoopSnapshot& s) {
            auto json = LoopJson(route, s, context, history);
            return json.ok() ? *json : ErrorReply(json.error());
          }));
    }
    case RouteKind::kMaskedOriginal:
      return session.MaskedOriginal(
          route.loop, route.item,
          FinishWith<Message>(later, [item = route.item](const Message& original) {
            auto encoded = EncodeMessage(original);
            if (!encoded.ok())
              return ErrorReply({ApiErrorKind::kInternal, encoded.error().Describe()});
            return Reply{
                200, "{\"message_id\":\"" + item.ToString() + "\",\"message\":" + *encoded + "}"};
          }));
    case RouteKind::kToolCalls:
    case RouteKind::kToolResults: {
      // The snapshot is taken on the loop's strand after everything the client saw was
      // published: a call the event stream showed is in its history.
      std::shared_ptr<ClientToolBox> box;
      if (auto it = served->tool_boxes.find(route.loop); it != served->tool_boxes.end())
        box = it->second;
      return session.Snapshot(
          route.loop, FinishWith<LoopSnapshot>(later, [box, results](const LoopSnapshot& s) {
            auto json = results ? AnswerToolCalls(s, box.get(), *results)
                                : Result<std::string, ApiError>(ToolCallsJson(s, box.get()));
            return json.ok() ? Reply{200, *json} : ErrorReply(json.error());
          }));
    }
    default:
      return HistoryControl(route, session, later);
  }
}

}  // namespace harness::serve
