// The real tokenizer data for tests: loaded once per test process from HARNESS_TOKENIZER_DIR
// (scripts/fetch-tokenizers). A test that needs it fails, never skips, when it is absent, and
// says how to get it; tests that do not need it never touch it.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "harness/inference/tokenizer.h"

namespace harness::test {

inline std::string MissingDataHint() {
  std::string hint("tokenizer data not available in ");
  hint.append(TokenizerDirFromEnvironment().string());
  hint.append(" (HARNESS_TOKENIZER_DIR): run scripts/fetch-tokenizers (scripts/setup does)");
  return hint;
}

// The tokenizer of `encoding`, or nullptr after recording a test failure that says why.
inline std::shared_ptr<const BpeTokenizer> RealTokenizer(Encoding encoding) {
  static std::map<Encoding, std::shared_ptr<const BpeTokenizer>> loaded;
  if (const auto it = loaded.find(encoding); it != loaded.end())
    return it->second;
  auto tokenizer = BpeTokenizer::Load(encoding, TokenizerDirFromEnvironment());
  if (!tokenizer.ok()) {
    ADD_FAILURE() << tokenizer.error().Message() << "\n" << MissingDataHint();
    return nullptr;
  }
  auto shared = std::make_shared<const BpeTokenizer>(std::move(tokenizer).value());
  loaded.emplace(encoding, shared);
  return shared;
}

// A file of the data directory, or "" after recording a failure.
inline std::filesystem::path DataFile(const std::string& name) {
  const std::filesystem::path path = TokenizerDirFromEnvironment() / name;
  if (!std::filesystem::is_regular_file(path)) {
    ADD_FAILURE() << path.string() << " is missing\n" << MissingDataHint();
    return {};
  }
  return path;
}

}  // namespace harness::test
