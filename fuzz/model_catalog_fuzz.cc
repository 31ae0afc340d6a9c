// libFuzzer target for the model spec parser (PROVIDER:MODEL) and the catalog's matching rule.
//
// Invariants checked (abort on violation):
// - ParseModelSpec returns a key or a ModelSpecError of a named kind, whose message is that
//   kind's fixed text (so it never quotes the input);
// - an accepted key has a non-empty provider without ':' and a non-empty model, both printable
//   ASCII without spaces, and provider + ":" + model is the input;
// - LookupModel on any key (accepted or the raw bytes as a model name) finds nothing or an
//   entry of the key's provider whose name is the model or its prefix followed by "-" and a
//   date of eight digits ("YYYY-MM-DD" or "YYYYMMDD"); no longer entry of that provider
//   matches the same way;
// - the entry's limits are sane: 0 < output <= window, input 0 or below the window.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/inference/catalog.h"

namespace {

using namespace harness;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "model_catalog_fuzz: %s\n", what);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok)
    Violation(what);
}

bool PrintableWord(std::string_view text) {
  for (const char c : text) {
    if (c <= ' ' || c > '~')
      return false;
  }
  return true;
}

bool Digits(std::string_view text) {
  for (const char c : text) {
    if (c < '0' || c > '9')
      return false;
  }
  return true;
}

bool DatedSuffix(std::string_view suffix) {
  if (suffix.size() == 8)
    return Digits(suffix);
  return suffix.size() == 10 && suffix[4] == '-' && suffix[7] == '-' &&
         Digits(suffix.substr(0, 4)) && Digits(suffix.substr(5, 2)) && Digits(suffix.substr(8));
}

// Whether catalog name `name` matches `model` by the documented rule.
bool RuleMatches(std::string_view name, std::string_view model) {
  if (model == name)
    return true;
  return model.size() > name.size() + 1 && model.substr(0, name.size()) == name &&
         model[name.size()] == '-' && DatedSuffix(model.substr(name.size() + 1));
}

void CheckLookup(const ModelKey& key) {
  const auto found = LookupModel(key);
  std::size_t longest = 0;
  bool any = false;
  for (const CatalogModel& entry : ModelCatalog()) {
    if (entry.provider == key.provider && RuleMatches(entry.name, key.model)) {
      any = true;
      if (entry.name.size() > longest)
        longest = entry.name.size();
    }
  }
  Check(found.has_value() == any, "lookup disagrees with the rule about a match");
  if (!found)
    return;
  Check(found->provider == key.provider, "entry of another provider");
  Check(RuleMatches(found->name, key.model), "entry does not match by the rule");
  Check(found->name.size() == longest, "not the longest matching entry");
  Check(found->max_output_tokens > 0 && found->max_output_tokens <= found->window_tokens,
        "output limit outside the window");
  Check(found->max_input_tokens < found->window_tokens, "input limit not below the window");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parsed = ParseModelSpec(input);
  if (!parsed.ok()) {
    const std::string_view kind = ModelSpecErrorKindName(parsed.error().kind);
    Check(!kind.empty(), "unnamed error kind");
    // A fixed text per kind: nothing of the input can reach it.
    std::string expected = "invalid model ";
    expected.append(kind).append(": expected PROVIDER:MODEL");
    Check(parsed.error().Message() == expected, "message is not the kind's fixed text");
  } else {
    const ModelKey& key = *parsed;
    Check(!key.provider.empty() && !key.model.empty(), "accepted an empty part");
    Check(key.provider.find(':') == std::string::npos, "provider holds a ':'");
    Check(PrintableWord(key.provider) && PrintableWord(key.model), "accepted a bad byte");
    Check(input.size() <= kMaxModelSpecBytes, "accepted an over-long spec");
    std::string joined = key.provider;
    joined.append(":").append(key.model);
    Check(joined == input, "the key is not the input");
    CheckLookup(key);
  }
  // The raw bytes as a name, under both providers: lookup never needs a parsed spec.
  CheckLookup(ModelKey{"openai", std::string(input)});
  CheckLookup(ModelKey{"anthropic", std::string(input)});
  return 0;
}
