// Members of the API's answers that WireWriter (event/wire.h) has no method for: an id that may
// be absent, written as null, and a value that is JSON text already (an event, a message, a tool
// call's input), written as it is.
// Thread safety: as WireWriter's.
#pragma once

#include <optional>
#include <string_view>

#include "harness/core/uuid.h"
#include "harness/event/wire.h"

namespace harness::serve {

// "name":"<uuid>", or "name":null without one.
inline WireWriter& IdOrNull(WireWriter& w, std::string_view name, const std::optional<Uuid>& id) {
  if (id)
    return w.Id(name, *id);
  w.Key(name).out() += "null";
  return w;
}

// "name":<json>, `json` being one JSON value's text.
inline WireWriter& RawMember(WireWriter& w, std::string_view name, std::string_view json) {
  w.Key(name).out() += json;
  return w;
}

}  // namespace harness::serve
