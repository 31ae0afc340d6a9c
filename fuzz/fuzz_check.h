// How a fuzz target reports a broken invariant: the target's name and what broke on standard
// error, then abort, so that libFuzzer saves the input that broke it.
#pragma once

#include <cstdio>
#include <cstdlib>

inline void FuzzCheck(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
  }
}
