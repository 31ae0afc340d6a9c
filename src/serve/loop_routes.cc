#include "serve/loop_routes.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"
#include "harness/event/wire.h"
#include "serve/client_tools.h"
#include "serve/context_breakdown.h"
#include "serve/wire_members.h"

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
  std::string out;
  WireWriter w(out);
  w.Id("session_id", session.id());
  IdOrNull(w, "active_loop", session.active_loop()).Bool("faulted", session.faulted());
  w.Key("loops").out() += '[';
  for (std::size_t i = 0; i < served.loops.size(); ++i) {
    const LoopSnapshot& snapshot = snapshots[i];
    if (i > 0)
      out += ',';
    WireWriter(out)
        .Id("loop_id", served.loops[i])
        .String("status", StatusName(snapshot.status))
        .Uint("history_messages", snapshot.history.size())
        .Uint("queued_inputs", snapshot.queued_inputs)
        .Bool("compacting", static_cast<bool>(snapshot.attempt))
        .Close();
  }
  out += ']';
  w.Close();
  return Reply{200, std::move(out)};
}

// GET …/history: the loop's messages, with the ids pins and proposals name (docs/pins.md),
// parallel to the messages; what an undo can still revert; the proposal waiting for approval,
// as its event (docs/preview.md).
Status<ApiError> WriteHistory(WireWriter& w, const LoopSnapshot& s) {
  std::string& out = w.Key("messages").out();
  out += '[';
  for (std::size_t i = 0; i < s.history.size(); ++i) {
    auto encoded = EncodeMessage(s.history[i]);
    if (!encoded.ok())
      return Fail(ApiError{ApiErrorKind::kInternal, encoded.error().Describe()});
    out += (i == 0 ? "" : ",") + *encoded;
  }
  out += ']';
  w.Ids("message_ids", s.history_ids)
      .Ids("pinned", s.pinned)
      .Ids("masked", s.masked)
      .Uint("undoable", s.undoable)
      .Uint("deferred_pins", s.deferred_pins);
  RawMember(w, "proposal", s.proposal ? EventJson(Event(*s.proposal)) : std::string("null"));
  return {};
}

// GET …/context: the loop's state and the categories a client can act on: the summary, and
// each role's messages with the conservative estimate the retained-tail selection uses
// (compaction/tail.h).
void WriteContext(WireWriter& w, const LoopSnapshot& s) {
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
  w.String("status", StatusName(s.status))
      .Uint("history_messages", s.history.size())
      .Uint("queued_inputs", s.queued_inputs)
      .Bool("compacting", static_cast<bool>(s.attempt))
      .String("pressure", PressureLevelName(s.pressure));
  if (s.measurement) {
    w.Key("measurement");
    WireWriter(w.out())
        .Uint("input_tokens", s.measurement->input_tokens)
        .Uint("input_limit", s.measurement->input_limit)
        .Close();
  } else {
    RawMember(w, "measurement", "null");
  }
  w.Key("categories");
  WireWriter by_name(w.out());
  for (const auto& [name, c] : categories) {
    by_name.Key(name);
    WireWriter(w.out())
        .Uint("messages", c.messages)
        .Uint("estimated_tokens", c.estimated_tokens)
        .Close();
  }
  by_name.Close();
}

// GET …/history (`history`) or …/context, from the loop's snapshot.
Result<Reply, ApiError> LoopJson(const Route& route, const LoopSnapshot& s,
                                 const std::optional<LoopContext>& context, bool history) {
  std::string out;
  WireWriter w(out);
  w.Id("loop_id", route.loop).Uint("derived_prefix", s.derived_prefix);
  if (history) {
    HARNESS_CHECK(WriteHistory(w, s));
  } else {
    WriteContext(w, s);
    if (context)
      WriteContextBreakdown(w, s, *context);
  }
  w.Close();
  return Reply{200, std::move(out)};
}

// Undo, pin, unpin, approve, discard, mask, unmask and the cancels of an input: each answered
// once its event is durable.
void HistoryControl(const Route& route, Session& session,
                    const std::shared_ptr<SuspendedRequest>& later) {
  // An event's id, as the member `name`.
  const auto event_id = [&](std::string_view name) {
    return FinishWith<Uuid>(later, [name](const Uuid& id) {
      std::string out;
      WireWriter(out).Id(name, id).Close();
      return Reply{200, std::move(out)};
    });
  };
  switch (route.kind) {
    case RouteKind::kPin:
    case RouteKind::kUnpin: {
      // While a compaction runs (a preview waiting for approval included) the pin waits for its
      // end in the loop, and its connection sleeps meanwhile.
      const bool pin = route.kind == RouteKind::kPin;
      session.PinMessage(route.loop, route.item, pin, FinishWith<bool>(later, [pin](bool changed) {
                           std::string out;
                           WireWriter(out).Bool("pinned", pin).Bool("changed", changed).Close();
                           return Reply{200, std::move(out)};
                         }));
      return;
    }
    case RouteKind::kUndo:
      return session.Undo(route.loop, event_id("event_id"));
    case RouteKind::kCancelInput:
      return session.CancelQueuedInput(route.loop, route.item, event_id("event_id"));
    case RouteKind::kCancelDelegate:
      return session.CancelDelegateRequest(
          route.loop, route.item, FinishWith<DelegateCancel>(later, [](DelegateCancel how) {
            std::string out;
            WireWriter(out)
                .String("cancelled", how == DelegateCancel::kActive ? "active" : "queued")
                .Close();
            return Reply{200, std::move(out)};
          }));
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
            std::string out;
            WireWriter w(out);
            RawMember(w.Id("message_id", item), "message", *encoded).Close();
            return Reply{200, std::move(out)};
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
