// What the two compaction wires (compaction/wire.h) have in common: the members they open with,
// {"version":1,"basis":{"revision":n,"through_event_id":"…"},"model":{"provider":"…",
// "model":"…"},"request_fingerprint":"…", and the way both read them. Each wire keeps its own
// error type and messages: the readers report a JsonError (or WireHeadError) and leave the
// mapping, and the checks of the values (UUID, fingerprint hex), to the caller, in the caller's
// order.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/internal/json_dom.h"
#include "harness/context/basis.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"

namespace harness {

// The top-level members read by ReadWireHead. basis and model point into the parsed document.
struct WireHead {
  const Json* basis = nullptr;
  const Json* model = nullptr;
  std::string request_fingerprint;  // not yet checked to be hex
};

// A failure of ReadWireHead. wrong_version: "version" is an integer other than
// kCompactionWireVersion (json then says so at $.version, kind kRange); otherwise json is the
// member's own failure.
struct WireHeadError {
  WireHeadError(JsonError error, bool wrong = false)  // NOLINT: implicit, for HARNESS_TRY
      : json(std::move(error)), wrong_version(wrong) {}

  JsonError json;
  bool wrong_version;
};

// Reads version (checked before anything else is read), basis and model (present, non-null) and
// request_fingerprint (a string) from `top`, in that order. The caller then reads its own
// members and calls top.RejectUnknown().
Result<WireHead, WireHeadError> ReadWireHead(JsonObject& top);

// The basis and model objects of `head`, each with exactly its members: revision (unsigned
// integer) and through_event_id (a string, not yet checked to be a UUID); provider and model
// (strings).
struct WireIdentity {
  std::uint64_t revision = 0;
  std::string through_event_id;
  ModelKey model;
};
Result<WireIdentity, JsonError> ReadWireIdentity(const WireHead& head);

// Appends the canonical opening both wires share, through `"request_fingerprint":"<hex>",`
// (the comma included); the caller appends its own members and the closing brace.
void AppendWireHead(std::string& out, const ContextBasis& basis, const ModelKey& model,
                    const Fingerprint& request_fingerprint);

}  // namespace harness
