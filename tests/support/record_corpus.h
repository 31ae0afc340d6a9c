// The fuzz seeds of a record codec (fuzz/corpus/<name>) as regression cases: each file's name
// starts with the verdict the decoder must give it, "accept_" or the error kind's wire name
// followed by "_", and an accepted seed is in canonical form: it re-encodes byte for byte.
//
// ExpectSeedsGetTheVerdictTheirNameSays(corpus, decode, encode, kind_name, describe) checks every
// file of fuzz/corpus/<corpus> and that there are at least `at_least` of them; it skips the test
// when the source tree is not known (build_paths.h: ctest sets HARNESS_SOURCE_DIR). `decode`
// maps the bytes to a Result; `encode` an accepted value back to a Result of bytes; `kind_name`
// and `describe` an error to its kind's wire name and to a sentence for the failure message.
// Thread safety: call it from the test's own thread.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "support/build_paths.h"

namespace harness {

template <class Decode, class Encode, class KindName, class Describe>
void ExpectSeedsGetTheVerdictTheirNameSays(std::string_view corpus, Decode decode, Encode encode,
                                           KindName kind_name, Describe describe,
                                           int at_least = 15) {
  const std::string root = build_paths::SourceDir();
  if (root.empty())
    GTEST_SKIP() << "the source tree is not known: set HARNESS_SOURCE_DIR (ctest sets it)";
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(root) / "fuzz/corpus" / corpus)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream read;
    read << in.rdbuf();
    const std::string bytes = read.str();
    const auto decoded = decode(bytes);
    const std::string verdict = decoded.ok() ? "accept" : std::string(kind_name(decoded.error()));
    EXPECT_EQ(name.rfind(verdict + "_", 0), 0u)
        << name << " got " << verdict << ": "
        << (decoded.ok() ? std::string() : describe(decoded.error()));
    if (decoded.ok()) {
      const auto encoded = encode(*decoded);
      ASSERT_TRUE(encoded.ok()) << name;
      EXPECT_EQ(*encoded, bytes) << name;
    }
    ++seen;
  }
  EXPECT_GE(seen, at_least);
}

}  // namespace harness
