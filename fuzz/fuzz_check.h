// How a fuzz target reports a broken invariant: the target's name and what broke on standard
// error, then abort, so that libFuzzer saves the input that broke it.
//   constexpr FuzzCheck Check{"name_fuzz"};  ...  Check(invariant, "what broke");
#pragma once

#include <cstdio>
#include <cstdlib>

struct FuzzCheck {
  const char* target;
  void operator()(bool ok, const char* what) const {
    if (!ok) {
      std::fprintf(stderr, "%s: %s\n", target, what);
      std::abort();
    }
  }
};
