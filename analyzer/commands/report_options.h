// Options shared by the report-reading subcommands: which frames to hide and which sites to keep.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/site_view.h"

namespace vramshim::cli {

struct ViewOptions {
  std::vector<std::string> hide;
  bool no_hide = false;
  bool python_only = false;
  std::string module;
  std::string function;

  analyzer::HidePatterns hide_patterns() const;
  analyzer::SiteFilter filter() const { return {module, function}; }
};

// Adds --hide PATTERN…, --no-hide, --module M and --function F to `command`.
void add_view_options(CLI::App* command, ViewOptions& options);

// The HTML page of `vramshim html` for the report at `report_path`, written to `output` (a file,
// or - for standard output).
void write_html(const std::string& report_path, const std::string& output, const ViewOptions& view);

// Adds --top N (default 10; 0: all).
void add_top_option(CLI::App* command, size_t& top);

}  // namespace vramshim::cli
