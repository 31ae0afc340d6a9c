#include "model_factory.h"

#include <filesystem>

#include "harness/scripted/model_client.h"
#include "input.h"

namespace harness::cli {
namespace {

constexpr std::size_t kMaxScriptBytes = 16u * 1024 * 1024;
constexpr std::string_view kScripted = "scripted:";

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
      out.append("the model provider \"")
          .append(subject)
          .append(
              "\" is not available in this build (model providers arrive with the HTTP "
              "clients); use ")
          .append(flag)
          .append(" ")
          .append(offline);
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

Result<ModelChoice, ModelSpecError> MakeModelClient(std::string_view spec) {
  if (spec.rfind(kScripted, 0) == 0) {
    const std::string path(spec.substr(kScripted.size()));
    if (path.empty())
      return Fail(ModelSpecError{ModelSpecErrorKind::kMissingScriptPath, "", ""});
    auto text = ReadInput(path, kMaxScriptBytes);
    if (!text.ok())
      return Fail(
          ModelSpecError{ModelSpecErrorKind::kUnreadableScript, path, text.error().message});
    auto client = ScriptedModelClient::FromJson(*text);
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
  // The HTTP model clients (issue 6) plug in here: one branch per provider.
  const auto colon = spec.find(':');
  if (colon != std::string_view::npos && colon > 0 && colon + 1 < spec.size()) {
    return Fail(ModelSpecError{ModelSpecErrorKind::kProviderUnavailable,
                               std::string(spec.substr(0, colon)), ""});
  }
  return Fail(ModelSpecError{ModelSpecErrorKind::kMalformed, "", ""});
}

}  // namespace harness::cli
