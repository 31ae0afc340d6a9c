// The route table (serve/server_impl.h): MatchRoute finds a route's kind from its method and
// path, and the table gives each kind its one handler; the gateway's wires, which Handle serves
// in their own shapes, have none.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "serve/gateway.h"
#include "serve/server_impl.h"

namespace harness::serve {
namespace {

std::size_t HandlersOf(RouteKind kind) {
  const auto handlers = RouteHandlers();
  return static_cast<std::size_t>(std::count_if(
      handlers.begin(), handlers.end(), [kind](const RouteHandler& h) { return h.kind == kind; }));
}

TEST(RouteTable, EveryRouteOfTheApiHasOneHandlerAndTheGatewaysWiresNone) {
  for (const RouteSpec& spec : Routes()) {
    SCOPED_TRACE(std::string(spec.method) + " " + std::string(spec.path));
    EXPECT_EQ(HandlersOf(spec.kind), GatewayWireOf(spec.kind) ? 0u : 1u);
  }
  EXPECT_EQ(HandlersOf(RouteKind::kPreflight), 1u);
  EXPECT_EQ(HandlersOf(RouteKind::kAsset), 0u);  // served before the token is looked at
  for (const RouteHandler& handler : RouteHandlers())
    EXPECT_NE(handler.handle, nullptr);
}

TEST(RouteTable, OnlyTheCommandsAndTheEventsReadAQuery) {
  std::set<RouteKind> reading;
  for (const RouteHandler& handler : RouteHandlers()) {
    if (handler.reads_query)
      reading.insert(handler.kind);
  }
  EXPECT_EQ(reading, (std::set<RouteKind>{RouteKind::kEvents, RouteKind::kGetCommand,
                                          RouteKind::kGetSessionCommand}));
}

}  // namespace
}  // namespace harness::serve
