#include "harness/runtime/host.h"

#include "runtime/host_core.h"

namespace harness {

SessionHost::SessionHost(SessionHostOptions options)
    : core_(std::make_unique<runtime_detail::HostCore>(options)) {}

SessionHost::~SessionHost() = default;

}  // namespace harness
