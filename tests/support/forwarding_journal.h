// The tests' forwarding journal: harness::ForwardingJournal over a journal it owns, the base of
// the tests' fault-injecting journals, which override only the calls they change.
#pragma once

#include <memory>
#include <utility>

#include "harness/journal/forwarding_journal.h"

namespace harness::testing {

class ForwardingJournal : public harness::ForwardingJournal {
 public:
  // The inner journal is reached through the base's reference, which the move of the pointer
  // below does not change.
  explicit ForwardingJournal(std::unique_ptr<Journal> inner)
      : harness::ForwardingJournal(*inner), owned_(std::move(inner)) {}

 private:
  std::unique_ptr<Journal> owned_;
};

}  // namespace harness::testing
