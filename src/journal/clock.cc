#include "harness/journal/clock.h"

namespace harness {

JournalTime SystemLeaseClock::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

}  // namespace harness
