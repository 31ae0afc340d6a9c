// Entity salience: the names a run keeps coming back to.
//
// A long run creates and names things — a module, a class, an environment variable, a setting,
// an endpoint — and the facts a person needs next are mostly those names. They recur across the
// run's messages (the assistant mentions them, tool inputs write them), while ordinary words do
// not look like names at all. The salience ledger counts, for every name-shaped token, the
// messages it appears in, weighting the places where the agent itself wrote it (a tool input,
// the assistant's words) above what it merely read.
//
// Contract:
// - A name is a token of [A-Za-z0-9_.:/$-] runs that has the shape of an identifier people
//   name things with (docs/compactors.md "Names in play"): snake_case with an underscore,
//   camelCase or PascalCase with an inner capital, an UPPER_CASE constant of at least four
//   characters with an underscore, a dotted name (`config.max_retries`, `pkg.module`), a `::`
//   qualified name, or an endpoint (`/api/v1/users`: at least two segments, the last without
//   a file extension). Not a name: plain words, numbers, hexadecimal digests and UUIDs, file
//   paths with an extension (the file ledger has those), URLs, tokens under 3 or over 64
//   bytes. Surrounding punctuation (quotes, backticks, brackets, a trailing '.', ',', ':')
//   is stripped first.
// - Observe(text, weight) adds each distinct name of one message once, with the weight of the
//   place it came from; Top(n) gives at most n names whose score is at least kSalientScore,
//   the highest score first, ties by first appearance. Deterministic.
// - Bounded: at most kMaxTrackedNames distinct names are tracked (later new names are
//   ignored once the table is full), and each text is read once, linearly.
// Thread safety: a value; not synchronized.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace harness {

inline constexpr std::size_t kMaxTrackedNames = 20000;
inline constexpr std::size_t kSalientScore = 3;

class SalienceLedger {
 public:
  void Observe(std::string_view text, std::size_t weight);
  std::vector<std::string> Top(std::size_t n) const;

 private:
  struct Entry {
    std::size_t score = 0;
    std::size_t first = 0;
    std::size_t seen_in = 0;  // the message it was last counted for
  };
  // Looked up by a view of the text: no string is built for a name already counted.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, Entry, NameHash, std::equal_to<>> names_;
  std::size_t messages_ = 0;
};

// Whether `token` (already stripped of surrounding punctuation) is name-shaped.
bool IsNameShaped(std::string_view token);

}  // namespace harness
