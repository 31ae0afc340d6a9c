// The heap of a memory test program, counted: counted_heap.cc replaces the global operator new
// and delete with ones that count the bytes live (malloc_usable_size) and their peak, on every
// thread. A program of its own, because the replacement applies to the whole program.
#pragma once

#include <cstddef>

namespace harness {

// The peak of the bytes allocated since it was made, beyond those live then. One at a time:
// making one resets the program's peak.
class HeapPeak {
 public:
  HeapPeak();
  std::size_t Bytes() const;

 private:
  std::size_t before_;
};

}  // namespace harness
