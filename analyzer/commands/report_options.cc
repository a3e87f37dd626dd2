#include "analyzer/commands/report_options.h"

namespace vramshim::cli {

analyzer::HidePatterns ViewOptions::hide_patterns() const {
  analyzer::HidePatterns patterns;
  if (!no_hide) patterns.patterns = analyzer::HidePatterns::defaults();
  patterns.patterns.insert(patterns.patterns.end(), hide.begin(), hide.end());
  patterns.python_only = python_only;
  return patterns;
}

void add_view_options(CLI::App* command, ViewOptions& options) {
  command->add_option(
      "--hide", options.hide,
      "Also hide frames whose module (basename) or function matches these glob patterns");
  command->add_flag("--no-hide", options.no_hide,
                    "Show the CUDA driver, runtime and shim frames that are hidden by default "
                    "(libcuda*, libcudart*, libvramshim*)");
  command->add_flag("--python-only", options.python_only,
                    "Show only the Python frames of each stack (file, function and line)");
  command->add_option("--module", options.module,
                      "Only sites with a frame in a module matching this (substring, or glob)");
  command->add_option("--function", options.function,
                      "Only sites with a frame in a function matching this (substring, or glob)");
}

void add_top_option(CLI::App* command, size_t& top) {
  command->add_option("--top", top, "How many rows to show; 0: all (rows left out are counted)")
      ->default_val(10)
      ->check(CLI::NonNegativeNumber);
}

}  // namespace vramshim::cli
