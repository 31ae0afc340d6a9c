// The gateway's wires on the server's side (serve/gateway.h, docs/spec/gateway.md): each call
// runs on a thread of its own (GatewayCalls) while its connection sleeps, and its answer reaches
// the client through a bounded relay as the call makes it.
#include <memory>

#include "serve/server_impl.h"

namespace harness::serve {

namespace {

// Bytes a gateway answer hands MHD at most per call.
constexpr std::size_t kRelayBlock = 16u * 1024;

ssize_t ReadRelay(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  GatewayRelay& relay = **static_cast<std::shared_ptr<GatewayRelay>*>(cls);
  std::size_t count = 0;
  switch (relay.Read(buf, max, count)) {
    case GatewayRelay::ReadResult::kData:
      return static_cast<ssize_t>(count);
    case GatewayRelay::ReadResult::kWait:
      return 0;  // the connection sleeps until the producer writes (GatewayRelay)
    case GatewayRelay::ReadResult::kEnd:
      return MHD_CONTENT_READER_END_OF_STREAM;
    case GatewayRelay::ReadResult::kAborted:
      break;
  }
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

void FreeRelay(void* cls) {
  auto* holder = static_cast<std::shared_ptr<GatewayRelay>*>(cls);
  (*holder)->Gone();
  delete holder;
}

}  // namespace

MHD_Result Server::Impl::ServeGateway(MHD_Connection* connection, GatewayWire wire,
                                      Exchange& exchange) {
  auto relay = std::make_shared<GatewayRelay>([connection] { MHD_suspend_connection(connection); },
                                              [connection] { MHD_resume_connection(connection); });
  GatewayServices services;
  services.upstream = upstream.get();
  services.compaction = HeldContext();
  services.journal = options.gateway_journal;
  services.chat = chat_gateway;
  exchange.relay = relay;
  if (!gateway_calls.Start(
          relay, GatewayCall{wire, std::move(exchange.body), std::move(exchange.passed), {}},
          std::move(services))) {
    exchange.relay.reset();
    return Queue(connection, Refusal(exchange, ShuttingDown()));
  }
  if (!relay->AwaitHead())
    return MHD_YES;  // asleep until the call starts its answer
  return SendRelay(connection, exchange);
}

MHD_Result Server::Impl::SendRelay(MHD_Connection* connection, Exchange& exchange) {
  const auto head = exchange.relay->head();
  if (!head) {  // aborted by the shutdown before the call answered
    return Queue(connection, Refusal(exchange, ShuttingDown()));
  }
  auto* holder = new std::shared_ptr<GatewayRelay>(exchange.relay);
  MHD_Response* response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kRelayBlock,
                                                             ReadRelay, holder, FreeRelay);
  if (response == nullptr) {
    FreeRelay(holder);
    return MHD_NO;
  }
  MHD_add_response_header(response, "Content-Type", head->content_type.c_str());
  if (head->content_type.starts_with("text/event-stream"))
    MHD_add_response_header(response, "Cache-Control", "no-cache");
  return Send(connection, response, head->status);
}

}  // namespace harness::serve
