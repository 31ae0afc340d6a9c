// A SQLite VFS for tests that forwards everything to the default VFS (ForwardingVfs) and fails
// one chosen write or sync (SQLite's own habit: inject an I/O error at every write, check
// recovery after each), or every write and sync from a chosen one on (a disk that stays full:
// FailFrom(n, SQLITE_FULL)). ops() counts the writes and syncs seen, so a dry run sizes a sweep.
// It is registered under a name for its lifetime; open a journal with SqliteJournalOptions::vfs
// set to that name.
// Thread safety: FailNth and the forwarded calls may run on different threads.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <string>

#include "support/forwarding_vfs.h"

namespace harness::journal_testing {

class FaultInjectingVfs final : public ForwardingVfs {
 public:
  explicit FaultInjectingVfs(std::string name) : ForwardingVfs(std::move(name)) {}

  // Fails the n-th write or sync from now on (1: the very next); 0 disarms (also FailFrom).
  void FailNth(int n) {
    persistent_.store(false);
    if (n > 0)
      fired_.store(false);
    countdown_.store(n);
  }
  // Fails the n-th write or sync from now on and every one after it with `code` (for example
  // SQLITE_FULL), until FailNth(0).
  void FailFrom(int n, int code) {
    code_.store(code);
    fired_.store(false);
    persistent_.store(true);
    countdown_.store(n);
  }
  // Writes and syncs seen since the VFS was made.
  long ops() const { return ops_.load(); }
  // True once the fault armed last has fired.
  bool fired() const { return fired_.load(); }

 private:
  int BeforeWrite(bool) override { return Fault(SQLITE_IOERR_WRITE); }
  int BeforeSync(bool) override { return Fault(SQLITE_IOERR_FSYNC); }

  // SQLITE_OK: go on; otherwise the error code to return.
  int Fault(int code) {
    ops_.fetch_add(1);
    if (persistent_.load() && fired_.load() && countdown_.load() == 0)
      return code_.load();
    return Countdown() ? (persistent_.load() ? code_.load() : code) : SQLITE_OK;
  }
  bool Countdown() {
    int expected = countdown_.load();
    while (expected > 0) {
      if (countdown_.compare_exchange_weak(expected, expected - 1)) {
        if (expected == 1) {
          fired_ = true;
          return true;
        }
        return false;
      }
    }
    return false;
  }

  std::atomic<int> countdown_{0};
  std::atomic<bool> fired_{false};
  std::atomic<bool> persistent_{false};
  std::atomic<int> code_{SQLITE_IOERR_WRITE};
  std::atomic<long> ops_{0};
};

}  // namespace harness::journal_testing
