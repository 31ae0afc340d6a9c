// ForwardingVfs: a SQLite VFS that forwards every call to the default VFS and lets a subclass
// watch or fail a file's writes and syncs, the two calls durability depends on. It is the one
// base of the VFSs the tests and benchmarks open a journal with (SqliteJournalOptions::vfs):
// FaultInjectingVfs (fault_injecting_vfs.h) fails chosen ones, the runtime benchmark's counts
// syncs.
//
// Contract:
// - The VFS is registered under `name` (not as the default) for the object's lifetime; every
//   journal opened with it must be closed before it is destroyed.
// - BeforeWrite / BeforeSync run before the call reaches the real file; SQLITE_OK lets it
//   through, any other code is the call's result and the file is not touched. `wal` says the
//   file is a write-ahead log (opened with SQLITE_OPEN_WAL). The defaults let everything through.
// Thread safety: SQLite calls the hooks from whichever thread uses a connection: overrides must
// be thread-safe.
#pragma once

#include <sqlite3.h>

#include <cstring>
#include <string>

namespace harness::journal_testing {

class ForwardingVfs {
 public:
  explicit ForwardingVfs(std::string name) : name_(std::move(name)) {
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
  virtual ~ForwardingVfs() { sqlite3_vfs_unregister(&vfs_); }
  ForwardingVfs(const ForwardingVfs&) = delete;
  ForwardingVfs& operator=(const ForwardingVfs&) = delete;

  const std::string& name() const { return name_; }

 protected:
  virtual int BeforeWrite(bool /*wal*/) { return SQLITE_OK; }
  virtual int BeforeSync(bool /*wal*/) { return SQLITE_OK; }

 private:
  struct File {
    sqlite3_file base;
    sqlite3_file* real;
    ForwardingVfs* owner;
    bool wal;
  };

  static ForwardingVfs* Self(sqlite3_vfs* v) { return static_cast<ForwardingVfs*>(v->pAppData); }
  static File* Wrapper(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
  static sqlite3_file* Real(sqlite3_file* f) { return Wrapper(f)->real; }

  static int Open(sqlite3_vfs* v, const char* name, sqlite3_file* file, int flags, int* out) {
    ForwardingVfs* self = Self(v);
    File* wrapper = Wrapper(file);
    std::memset(wrapper, 0, sizeof(File));
    wrapper->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + sizeof(File));
    wrapper->owner = self;
    wrapper->wal = (flags & SQLITE_OPEN_WAL) != 0;
    const int rc = self->real_->xOpen(self->real_, name, wrapper->real, flags, out);
    wrapper->base.pMethods = wrapper->real->pMethods != nullptr ? &kMethods : nullptr;
    return rc;
  }

  static int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
    const int refused = Wrapper(f)->owner->BeforeWrite(Wrapper(f)->wal);
    return refused != SQLITE_OK ? refused : Real(f)->pMethods->xWrite(Real(f), buf, n, off);
  }
  static int Sync(sqlite3_file* f, int flags) {
    const int refused = Wrapper(f)->owner->BeforeSync(Wrapper(f)->wal);
    return refused != SQLITE_OK ? refused : Real(f)->pMethods->xSync(Real(f), flags);
  }

  static inline const sqlite3_io_methods kMethods = {
      3,
      [](sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); },
      [](sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
        return Real(f)->pMethods->xRead(Real(f), buf, n, off);
      },
      &Write,
      [](sqlite3_file* f, sqlite3_int64 size) {
        return Real(f)->pMethods->xTruncate(Real(f), size);
      },
      &Sync,
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
};

}  // namespace harness::journal_testing
