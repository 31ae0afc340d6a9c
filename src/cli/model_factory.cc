#include "model_factory.h"

#include <cstdlib>
#include <filesystem>

#include "harness/http/curl_client.h"
#include "harness/scripted/model_client.h"
#include "input.h"
#include "settings.h"

namespace harness::cli {
namespace {

constexpr std::size_t kMaxScriptBytes = 16u * 1024 * 1024;
constexpr std::string_view kScripted = "scripted:";

// Sends every request to one model (see the header: a compactor's requests name the
// conversation's model).
class PinnedModelClient final : public ModelClient {
 public:
  PinnedModelClient(std::shared_ptr<ModelClient> inner, ModelKey model)
      : inner_(std::move(inner)), model_(std::move(model)) {}

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override {
    if (request.model == model_)
      return inner_->Complete(request, stop);
    InferenceRequest pinned = request;
    pinned.model = model_;
    return inner_->Complete(pinned, stop);
  }

 private:
  std::shared_ptr<ModelClient> inner_;
  ModelKey model_;
};

Result<ModelChoice, ModelSpecError> MakeProviderClient(std::string_view provider,
                                                       std::string_view model,
                                                       const ModelClientSettings& settings) {
  const std::string subject(provider);
  auto http = CurlHttpClient::Create();
  if (!http.ok()) {
    std::string detail("cannot start the HTTP client: ");
    detail.append(http.error().Describe());
    return Fail(ModelSpecError{ModelSpecErrorKind::kProviderSetup, subject, std::move(detail)});
  }
  ProviderClientSettings client_settings;
  client_settings.on_text = settings.on_text;
  auto made = MakeProviderModel(
      provider, model, settings.environment ? settings.environment : ProcessEnvironment,
      std::shared_ptr<HttpClient>(std::move(http).value()), client_settings);
  if (!made.ok())
    return Fail(
        ModelSpecError{ModelSpecErrorKind::kProviderSetup, subject, made.error().Message()});
  return ModelChoice{std::make_shared<PinnedModelClient>(std::move(made->client), made->model),
                     made->model, false};
}

}  // namespace

std::string ModelSpecError::Message(std::string_view flag, std::string_view offline) const {
  std::string out;
  switch (kind) {
    case ModelSpecErrorKind::kMissingScriptPath:
      out.append(flag).append(" scripted:PATH needs a script path");
      break;
    case ModelSpecErrorKind::kUnreadableScript:
      out = detail;
      break;
    case ModelSpecErrorKind::kInvalidScript:
      out.append("invalid script ").append(subject).append(": ").append(detail);
      break;
    case ModelSpecErrorKind::kProviderUnavailable:
      out.append("unknown model provider \"")
          .append(subject)
          .append("\"; use ")
          .append(flag)
          .append(" openai:MODEL, anthropic:MODEL or ")
          .append(offline);
      break;
    case ModelSpecErrorKind::kProviderSetup:
      out.append(flag).append(": ").append(detail);
      break;
    case ModelSpecErrorKind::kMalformed:
      out.append("unknown ")
          .append(flag)
          .append("; expected ")
          .append(offline)
          .append(" or PROVIDER:MODEL");
      break;
  }
  return out;
}

Result<ModelChoice, ModelSpecError> MakeModelClient(std::string_view spec,
                                                    const ModelClientSettings& settings) {
  if (spec.rfind(kScripted, 0) == 0) {
    const std::string path(spec.substr(kScripted.size()));
    if (path.empty())
      return Fail(ModelSpecError{ModelSpecErrorKind::kMissingScriptPath, "", ""});
    auto text = ReadInput(path, kMaxScriptBytes);
    if (!text.ok())
      return Fail(
          ModelSpecError{ModelSpecErrorKind::kUnreadableScript, path, text.error().message});
    auto client = ScriptedModelClient::FromJson(*text, settings.on_text);
    if (!client.ok()) {
      return Fail(
          ModelSpecError{ModelSpecErrorKind::kInvalidScript, path, client.error().Message()});
    }
    std::string name = std::filesystem::path(path).filename().string();
    if (name.empty())
      name = "script";
    return ModelChoice{std::shared_ptr<ModelClient>(std::move(*client)),
                       ModelKey{"scripted", std::move(name)}, true};
  }
  const auto colon = spec.find(':');
  if (colon != std::string_view::npos && colon > 0 && colon + 1 < spec.size()) {
    const std::string_view provider = spec.substr(0, colon);
    if (ProviderKeyVariable(provider).empty())
      return Fail(
          ModelSpecError{ModelSpecErrorKind::kProviderUnavailable, std::string(provider), ""});
    return MakeProviderClient(provider, spec.substr(colon + 1), settings);
  }
  return Fail(ModelSpecError{ModelSpecErrorKind::kMalformed, "", ""});
}

}  // namespace harness::cli
