// libFuzzer target for the config file reader (src/cli/config_file.h ParseConfigFile): any
// bytes in.
// Invariants: nothing crashes, hangs or recurses without bound; a file that is read holds only
// known keys, each with a value of its type as the flag would be given (one value, or a list's
// elements); a refused file's message starts with the file's name and is one line without
// control characters.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config_file.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "config_file_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/fuzz/.harness.toml";
  auto file = harness::cli::ParseConfigFile(text, path);
  if (!file.ok()) {
    const std::string message = file.error().Message();
    Check(message.rfind(path + ":", 0) == 0, "the message does not start with the file");
    for (const char c : message)
      Check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F, "a control character");
    return 0;
  }
  for (const auto& [key, value] : file->values) {
    const harness::cli::SettingSpec* spec = harness::cli::FindSetting(key);
    Check(spec != nullptr, "an unknown key was read");
    if (spec->type != harness::cli::SettingType::kStringList)
      Check(value.values.size() == 1, "a single value is not one value");
  }
  return 0;
}
