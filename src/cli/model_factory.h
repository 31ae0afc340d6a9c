// The one place the CLI turns a model spec into a ModelClient: `--model` of `harness chat` and
// the model-backed `--compactor` of `harness compact`.
//
// Contract of MakeModelClient(spec):
// - "scripted:PATH": a ScriptedModelClient (docs/scripted.md) read from PATH (at most 16 MiB),
//   model key {"scripted", PATH's file name}.
// - "PROVIDER:MODEL" (both parts non-empty): ModelSpecError{kProviderUnavailable} naming the
//   provider until the HTTP model clients are plugged in here; nothing reads the environment.
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

namespace harness::cli {

enum class ModelSpecErrorKind : std::uint8_t {
  kMalformed = 1,
  kMissingScriptPath = 2,
  kUnreadableScript = 3,
  kInvalidScript = 4,
  kProviderUnavailable = 5,
};

struct ModelSpecError {
  ModelSpecErrorKind kind = ModelSpecErrorKind::kMalformed;
  std::string subject;  // the provider (kProviderUnavailable) or the script path
  std::string detail;   // why a script could not be used
  // One line for the user. `flag` is the option that carried the spec ("--model"), `offline`
  // the specs this build accepts instead ("scripted:PATH").
  std::string Message(std::string_view flag, std::string_view offline) const;
};

struct ModelChoice {
  std::shared_ptr<ModelClient> client;
  ModelKey model;
  bool scripted = false;  // a test double: no catalog entry, the CLI's offline limits
};

Result<ModelChoice, ModelSpecError> MakeModelClient(std::string_view spec);

}  // namespace harness::cli
