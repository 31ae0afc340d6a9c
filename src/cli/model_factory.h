// The one place the CLI turns a model spec into a ModelClient: `--model` of `harness chat` and
// the model-backed `--compactor` of `harness compact`.
//
// Contract of MakeModelClient(spec):
// - "scripted:PATH": a ScriptedModelClient (docs/scripted.md) read from PATH (at most 16 MiB),
//   model key {"scripted", PATH's file name}; the steps that stream (docs/scripted.md) give
//   their text to settings.on_text.
// - "openai:MODEL" and "anthropic:MODEL": the provider's HTTP client (provider_environment.h)
//   over a CurlHttpClient, configured from settings.environment (the process environment when
//   empty): OPENAI_API_KEY / OPENAI_BASE_URL, ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL. Every
//   request it sends names MODEL, whatever model key the request carries: a compactor's input
//   names the conversation's model, which the summary must echo, while the wire must name the
//   model that answers. Model key {PROVIDER, MODEL}. A missing key (for the default base URL), a
//   base URL that is not http(s), or an HTTP client that cannot start: kProviderSetup, whose
//   message names the variable and never a value.
// - Another "PROVIDER:MODEL" (both parts non-empty): kProviderUnavailable naming the provider.
// - Anything else: kMalformed. "scripted:" without a path: kMissingScriptPath; an unreadable
//   file: kUnreadableScript; a file that is not a valid script: kInvalidScript.
// Error messages name the flag, the provider or the path and never quote the script's contents.
// Thread safety: pure (reads the script file).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/inference/client.h"
#include "harness/provider/provider_environment.h"

namespace harness::cli {

enum class ModelSpecErrorKind : std::uint8_t {
  kMalformed = 1,
  kMissingScriptPath = 2,
  kUnreadableScript = 3,
  kInvalidScript = 4,
  kProviderUnavailable = 5,
  kProviderSetup = 6,
};

struct ModelSpecError {
  ModelSpecErrorKind kind = ModelSpecErrorKind::kMalformed;
  std::string subject;  // the provider (kProviderUnavailable, kProviderSetup) or the script path
  std::string detail;   // why a script or a provider could not be used
  // One line for the user. `flag` is the option that carried the spec ("--model"), `offline`
  // the specs this build accepts instead ("scripted:PATH").
  std::string Message(std::string_view flag, std::string_view offline) const;
};

struct ModelChoice {
  std::shared_ptr<ModelClient> client;
  ModelKey model;
  bool scripted = false;  // a test double: no catalog entry, the CLI's offline limits
};

struct ModelClientSettings {
  EnvironmentLookup environment;  // empty: the process environment
  TextDeltaSink on_text;          // streamed answer text (provider models, streaming script steps)
};

Result<ModelChoice, ModelSpecError> MakeModelClient(std::string_view spec,
                                                    const ModelClientSettings& settings = {});

}  // namespace harness::cli
