// Every numeric flag of the CLI goes through AddNumberOption, so that all of them take the same
// spelling and refuse the same way: digits only (no sign, no exponent, no decimal point, no
// spaces), at most the flag's maximum, at least its minimum. A value outside those rules is a
// usage error that names the flag and its real bounds ("--appenders: must be a whole number
// from 1 to 256"); it is never wrapped, saturated or rounded. The input is not echoed.
// Thread safety: pure functions; the option writes `target` while the command line is parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <concepts>
#include <string>

#include "arguments.h"

namespace harness::cli {

// Adds `name` to `command`; its value is stored in `target`, whose current value is the
// default shown in the help. `bounds.max` must fit in T.
template <std::integral T>
CLI::Option* AddNumberOption(CLI::App& command, const std::string& name, T& target,
                             NumberBounds bounds, const std::string& description) {
  const std::string default_text = std::to_string(target);
  auto* option = command.add_option_function<std::string>(
      name,
      [&target, name, bounds](const std::string& text) {
        auto value = ParseNumber(text, bounds);
        // CLI11 reports a ValidationError like any other parse error: the caller prints it
        // and exits 2 (main.cc).
        if (!value.ok())
          throw CLI::ValidationError(name, value.error());
        target = static_cast<T>(*value);
      },
      description + " (" + std::to_string(bounds.min) + " to " + std::to_string(bounds.max) + ")");
  option->type_name("N");
  // A default the bounds exclude (0 below a minimum of 1) is "not given": the description says
  // what that means ("without it, no limit"), and "N=0" would read as a value to pass.
  if (!(target == 0 && bounds.min > 0))
    option->default_str(default_text);
  return option;
}

}  // namespace harness::cli
