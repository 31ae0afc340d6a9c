#include "serve_log.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/internal/json_dom.h"
#include "event_lines.h"
#include "terminal_text.h"

namespace harness::cli {
namespace {

constexpr std::size_t kMaxFieldBytes = 256;

std::string Shown(std::string_view text) {
  return Truncated(TerminalLine(text), kMaxFieldBytes);
}

std::string JsonLine(const Json& line) {
  // A client's path or a server's words may not be UTF-8: replaced, never a throw.
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::optional<LogFormat> LogFormatFromName(std::string_view name) {
  if (name == "none")
    return LogFormat::kNone;
  if (name == "text")
    return LogFormat::kText;
  if (name == "json")
    return LogFormat::kJson;
  return std::nullopt;
}

void ServeLog::Write(std::string line) const {
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void ServeLog::Request(const serve::RequestRecord& r) const {
  if (format_ == LogFormat::kNone)
    return;
  const double ms = std::chrono::duration<double, std::milli>(r.duration).count();
  const std::string time = Rfc3339(env_.WallNow());
  if (format_ == LogFormat::kText) {
    Write(fmt::format("{} request {} {} {} {:.1f} ms{}", time, Shown(r.method), Shown(r.path),
                      r.status, ms,
                      r.session ? " session " + r.session->ToString() : std::string()));
    return;
  }
  Json line = Json::object();
  line["time"] = time;
  line["event"] = "request";
  line["method"] = std::string(r.method);
  line["path"] = std::string(r.path);
  line["status"] = r.status;
  line["duration_ms"] = ms;
  line["session"] = r.session ? Json(r.session->ToString()) : Json();
  Write(JsonLine(line));
}

void ServeLog::ModelFailure(const ModelKey& model, const InferenceError& error) const {
  if (format_ == LogFormat::kNone || error.kind == InferenceErrorKind::kCanceled)
    return;
  const std::string time = Rfc3339(env_.WallNow());
  const std::string name = model.provider + "/" + model.model;
  if (format_ == LogFormat::kText) {
    Write(fmt::format("{} model_failure {} {}", time, Shown(name), Shown(error.Message())));
    return;
  }
  Json line = Json::object();
  line["time"] = time;
  line["event"] = "model_failure";
  line["model"] = name;
  line["kind"] = std::string(InferenceErrorKindName(error.kind));
  line["detail"] = error.detail;
  Write(JsonLine(line));
}

Result<InferenceResponse, InferenceError> LoggedModelClient::Complete(
    const InferenceRequest& request, std::stop_token stop) {
  auto answer = inner_->Complete(request, std::move(stop));
  if (!answer.ok())
    log_->ModelFailure(model_, answer.error());
  return answer;
}

}  // namespace harness::cli
