// `harness models [--json]`: the model catalog (inference/catalog.h, docs/models.md), one model a
// line: tab-separated columns under a header, or (--json) one JSON object a line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "commands.h"
#include "core/internal/json_dom.h"
#include "harness/inference/catalog.h"

namespace harness::cli {

struct ModelsCommandLine {
  CLI::App* command = nullptr;
  bool json = false;
};

namespace {

std::string OrDash(TokenCount value) {
  return value == 0 ? std::string("-") : std::to_string(value);
}

// {"provider", "model", "window", "max_input" (null when only the window limits it),
// "max_output", "encoding" (null without a local tokenizer)}.
std::string JsonLine(const CatalogModel& entry) {
  Json line = Json::object();
  line["provider"] = entry.provider;
  line["model"] = entry.name;
  line["window"] = entry.window_tokens;
  line["max_input"] = entry.max_input_tokens == 0 ? Json() : Json(entry.max_input_tokens);
  line["max_output"] = entry.max_output_tokens;
  line["encoding"] = entry.encoding ? Json(EncodingName(*entry.encoding)) : Json();
  return line.dump() + "\n";
}

int Run(const ModelsCommandLine& line) {
  std::string out =
      line.json ? std::string() : "provider\tmodel\twindow\tmax_input\tmax_output\tencoding\n";
  for (const CatalogModel& entry : ModelCatalog()) {
    if (line.json) {
      out.append(JsonLine(entry));
      continue;
    }
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
  line->command->add_flag("--json", line->json,
                          "one JSON object a line: provider, model, window, max_input (null: the "
                          "window), max_output, encoding (null: none)");
  return line;
}

std::optional<int> RunModelsCommand(const ModelsCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
