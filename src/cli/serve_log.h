// ServeLog: `harness serve --log-format text|json`, one line on standard error per request and
// per failed model call (docs/serve.md, "Logs").
//
// Contract:
// - Request(record): text "<RFC 3339 time> request <METHOD> <path> <status> <ms> ms[ session
//   <id>]", JSON {"time","event":"request","method","path","status","duration_ms","session"
//   (null when the path names none)}. Status 0: the connection closed before a response.
// - ModelFailure(model, error): text "<time> model_failure <provider>/<model> <kind>: <detail>",
//   JSON {"time","event":"model_failure","model","kind","detail"}. A call the caller stopped
//   (kCanceled) is no failure and is not logged.
// - Never a body, a header, a query string or the token: the server gives none
//   (serve/server.h RequestRecord), and an InferenceError's detail has the provider's
//   credentials redacted (provider/provider_error.h). A path or a detail comes from a client or
//   a server: the text form shows it through TerminalLine (terminal_text.h), cut at 256 bytes;
//   the JSON form escapes it (ill-formed UTF-8 as U+FFFD).
// - kNone logs nothing.
// LoggedModelClient: a ModelClient that logs its inner client's failures to a ServeLog.
// Proof: tests/e2e/serve_cli_test.cc (ServeLogsEachRequestAndModelFailure).
// Thread safety: every method may be called from any thread; a line is one write.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/env.h"
#include "harness/core/model_key.h"
#include "harness/inference/client.h"
#include "harness/serve/server.h"

namespace harness::cli {

enum class LogFormat : std::uint8_t { kNone, kText, kJson };

// "none", "text", "json"; nullopt for anything else.
std::optional<LogFormat> LogFormatFromName(std::string_view name);

class ServeLog {
 public:
  // `env`: the clock of each line's time; outlives this.
  ServeLog(LogFormat format, const Env& env) : format_(format), env_(env) {}

  bool enabled() const { return format_ != LogFormat::kNone; }
  void Request(const serve::RequestRecord& record) const;
  void ModelFailure(const ModelKey& model, const InferenceError& error) const;

 private:
  void Write(std::string line) const;

  const LogFormat format_;
  const Env& env_;
};

class LoggedModelClient final : public ModelClient {
 public:
  LoggedModelClient(std::shared_ptr<ModelClient> inner, ModelKey model,
                    std::shared_ptr<const ServeLog> log)
      : inner_(std::move(inner)), model_(std::move(model)), log_(std::move(log)) {}

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override;

 private:
  std::shared_ptr<ModelClient> inner_;
  const ModelKey model_;
  std::shared_ptr<const ServeLog> log_;
};

}  // namespace harness::cli
