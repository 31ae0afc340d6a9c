// `harness models`: the model catalog (inference/catalog.h, docs/models.md), one model a line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "commands.h"
#include "harness/inference/catalog.h"

namespace harness::cli {

struct ModelsCommandLine {
  CLI::App* command = nullptr;
};

namespace {

std::string OrDash(TokenCount value) {
  return value == 0 ? std::string("-") : std::to_string(value);
}

int Run() {
  std::string out = "provider\tmodel\twindow\tmax_input\tmax_output\tencoding\n";
  for (const CatalogModel& entry : ModelCatalog()) {
    out.append(fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", entry.provider, entry.name,
                           entry.window_tokens, OrDash(entry.max_input_tokens),
                           entry.max_output_tokens,
                           entry.encoding ? EncodingName(*entry.encoding) : "-"));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

std::shared_ptr<ModelsCommandLine> AddModelsCommand(CLI::App& app) {
  auto line = std::make_shared<ModelsCommandLine>();
  line->command = app.add_subcommand(
      "models",
      "List the model catalog: provider, model, context window, maximum input (- when only the\n"
      "window limits it), maximum output, and the exact tokenizer encoding (OpenAI models).\n"
      "A name also matches its dated snapshots (-YYYY-MM-DD, -YYYYMMDD); see docs/models.md.");
  return line;
}

std::optional<int> RunModelsCommand(const ModelsCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run();
}

}  // namespace harness::cli
