// A SQLite VFS for tests that forwards everything to the default VFS and fails one chosen write
// or sync (SQLite's own habit: inject an I/O error at every write, check recovery after each),
// or every write and sync from a chosen one on (a disk that stays full: FailFrom(n, SQLITE_FULL)).
// ops() counts the writes and syncs seen, so a dry run sizes a sweep.
// It is registered under a name for its lifetime; open a journal with SqliteJournalOptions::vfs
// set to that name.
// Thread safety: FailNth and the forwarded calls may run on different threads.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <string>

namespace harness::journal_testing {

class FaultInjectingVfs {
 public:
  explicit FaultInjectingVfs(std::string name) : name_(std::move(name)) {
    real_ = sqlite3_vfs_find(nullptr);
    vfs_ = *real_;
    vfs_.pNext = nullptr;
    vfs_.zName = name_.c_str();
    vfs_.pAppData = this;
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.xOpen = &Open;
    vfs_.xDelete = [](sqlite3_vfs* v, const char* path, int sync) {
      return Self(v)->real_->xDelete(Self(v)->real_, path, sync);
    };
    vfs_.xAccess = [](sqlite3_vfs* v, const char* path, int flags, int* out) {
      return Self(v)->real_->xAccess(Self(v)->real_, path, flags, out);
    };
    vfs_.xFullPathname = [](sqlite3_vfs* v, const char* path, int n, char* out) {
      return Self(v)->real_->xFullPathname(Self(v)->real_, path, n, out);
    };
    sqlite3_vfs_register(&vfs_, 0);
  }
  ~FaultInjectingVfs() { sqlite3_vfs_unregister(&vfs_); }
  FaultInjectingVfs(const FaultInjectingVfs&) = delete;
  FaultInjectingVfs& operator=(const FaultInjectingVfs&) = delete;

  const std::string& name() const { return name_; }
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
  struct File {
    sqlite3_file base;
    sqlite3_file* real;
    FaultInjectingVfs* owner;
  };

  static FaultInjectingVfs* Self(sqlite3_vfs* v) {
    return static_cast<FaultInjectingVfs*>(v->pAppData);
  }
  static sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
  // 0: go on; otherwise the error code to return.
  static int Fault(sqlite3_file* f, int code) {
    FaultInjectingVfs* self = reinterpret_cast<File*>(f)->owner;
    self->ops_.fetch_add(1);
    if (self->persistent_.load() && self->fired_.load() && self->countdown_.load() == 0)
      return self->code_.load();
    return Countdown(self) ? (self->persistent_.load() ? self->code_.load() : code) : 0;
  }
  static bool Countdown(FaultInjectingVfs* self) {
    int expected = self->countdown_.load();
    while (expected > 0) {
      if (self->countdown_.compare_exchange_weak(expected, expected - 1)) {
        if (expected == 1) {
          self->fired_ = true;
          return true;
        }
        return false;
      }
    }
    return false;
  }

  static int Open(sqlite3_vfs* v, const char* name, sqlite3_file* file, int flags, int* out) {
    FaultInjectingVfs* self = Self(v);
    File* wrapper = reinterpret_cast<File*>(file);
    std::memset(wrapper, 0, sizeof(File));
    wrapper->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + sizeof(File));
    wrapper->owner = self;
    const int rc = self->real_->xOpen(self->real_, name, wrapper->real, flags, out);
    wrapper->base.pMethods = wrapper->real->pMethods != nullptr ? &kMethods : nullptr;
    return rc;
  }

  static inline const sqlite3_io_methods kMethods = {
      3,
      [](sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); },
      [](sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
        return Real(f)->pMethods->xRead(Real(f), buf, n, off);
      },
      [](sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
        const int fault = Fault(f, SQLITE_IOERR_WRITE);
        return fault != 0 ? fault : Real(f)->pMethods->xWrite(Real(f), buf, n, off);
      },
      [](sqlite3_file* f, sqlite3_int64 size) {
        return Real(f)->pMethods->xTruncate(Real(f), size);
      },
      [](sqlite3_file* f, int flags) {
        const int fault = Fault(f, SQLITE_IOERR_FSYNC);
        return fault != 0 ? fault : Real(f)->pMethods->xSync(Real(f), flags);
      },
      [](sqlite3_file* f, sqlite3_int64* size) {
        return Real(f)->pMethods->xFileSize(Real(f), size);
      },
      [](sqlite3_file* f, int lock) { return Real(f)->pMethods->xLock(Real(f), lock); },
      [](sqlite3_file* f, int lock) { return Real(f)->pMethods->xUnlock(Real(f), lock); },
      [](sqlite3_file* f, int* out) { return Real(f)->pMethods->xCheckReservedLock(Real(f), out); },
      [](sqlite3_file* f, int op, void* arg) {
        return Real(f)->pMethods->xFileControl(Real(f), op, arg);
      },
      [](sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); },
      [](sqlite3_file* f) { return Real(f)->pMethods->xDeviceCharacteristics(Real(f)); },
      [](sqlite3_file* f, int page, int size, int extend, void volatile** out) {
        return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, out);
      },
      [](sqlite3_file* f, int offset, int n, int flags) {
        return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
      },
      [](sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); },
      [](sqlite3_file* f, int remove) { return Real(f)->pMethods->xShmUnmap(Real(f), remove); },
      [](sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
        return Real(f)->pMethods->xFetch(Real(f), off, n, out);
      },
      [](sqlite3_file* f, sqlite3_int64 off, void* p) {
        return Real(f)->pMethods->xUnfetch(Real(f), off, p);
      },
  };

  std::string name_;
  sqlite3_vfs* real_ = nullptr;
  sqlite3_vfs vfs_{};
  std::atomic<int> countdown_{0};
  std::atomic<bool> fired_{false};
  std::atomic<bool> persistent_{false};
  std::atomic<int> code_{SQLITE_IOERR_WRITE};
  std::atomic<long> ops_{0};
};

}  // namespace harness::journal_testing
