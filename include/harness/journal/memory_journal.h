// The in-memory Journal: for tests, and for a program that keeps nothing of its sessions (the
// CLI's `harness eval`). It is NOT durable: everything is lost with the object.
//
// Contract: exactly the Journal contract (journal.h) minus durability; it passes the same
// conformance suite as the SQLite backend. Appends are serialized by one mutex.
// Thread safety: every method may be called concurrently.
#pragma once

#include <memory>

#include "harness/journal/journal.h"

namespace harness {

std::unique_ptr<Journal> NewMemoryJournal(JournalOptions options = {});

}  // namespace harness
