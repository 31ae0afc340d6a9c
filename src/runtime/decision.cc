#include "runtime/decision.h"

namespace harness::runtime_detail {

SessionError LoopExitedError() {
  return SessionError{SessionErrorKind::kLoopExited, ""};
}

}  // namespace harness::runtime_detail
