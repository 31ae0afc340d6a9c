// The replaced operator new and delete of counted_heap.h.
#include "memory/counted_heap.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::size_t> live_bytes{0};
std::atomic<std::size_t> peak_bytes{0};

void* Counted(void* p) {
  if (p == nullptr)
    throw std::bad_alloc();
  const std::size_t now = live_bytes += malloc_usable_size(p);
  std::size_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void Uncounted(void* p) {
  if (p == nullptr)
    return;
  live_bytes -= malloc_usable_size(p);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t size) {
  return Counted(std::malloc(size == 0 ? 1 : size));
}
void* operator new[](std::size_t size) {
  return Counted(std::malloc(size == 0 ? 1 : size));
}
void* operator new(std::size_t size, std::align_val_t align) {
  return Counted(std::aligned_alloc(
      static_cast<std::size_t>(align),
      (size + static_cast<std::size_t>(align) - 1) & ~(static_cast<std::size_t>(align) - 1)));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return operator new(size, align);
}
// The nothrow forms too (std::stable_sort's temporary buffer takes one): left to the
// sanitizer's runtime, its block would reach the free() above, an alloc-dealloc mismatch.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  void* p = std::malloc(size == 0 ? 1 : size);
  return p != nullptr ? Counted(p) : nullptr;
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  const auto a = static_cast<std::size_t>(align);
  void* p = std::aligned_alloc(a, (size + a - 1) & ~(a - 1));
  return p != nullptr ? Counted(p) : nullptr;
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return operator new(size, align, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  Uncounted(p);
}
void operator delete(void* p) noexcept {
  Uncounted(p);
}
void operator delete[](void* p) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::size_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Uncounted(p);
}

namespace harness {

HeapPeak::HeapPeak() : before_(live_bytes.load()) {
  peak_bytes = before_;
}

std::size_t HeapPeak::Bytes() const {
  const std::size_t peak = peak_bytes.load();
  return peak > before_ ? peak - before_ : 0;
}

}  // namespace harness
