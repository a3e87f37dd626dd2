#include "tests/integration/report_reading.h"

#include <fstream>
#include <stdexcept>

namespace vramshim::testing {

nlohmann::json read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no report at " + path);
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> stack_frames(const nlohmann::json& report, const nlohmann::json& site) {
  std::vector<nlohmann::json> frames;
  const int stack = site.at("stack").get<int>();
  if (stack < 0) return frames;
  for (int frame_id : report.at("stacks").at(stack).at("frames")) {
    frames.push_back(report.at("frames").at(frame_id));
  }
  return frames;
}

std::vector<nlohmann::json> sites_with_function(const nlohmann::json& report,
                                                const std::string& function) {
  std::vector<nlohmann::json> sites;
  for (const auto& site : report.at("sites")) {
    for (const nlohmann::json& frame : stack_frames(report, site)) {
      if (frame.contains("function") && frame.at("function").is_string() &&
          frame.at("function").get<std::string>() == function) {
        sites.push_back(site);
        break;
      }
    }
  }
  return sites;
}

std::vector<std::string> stack_module_paths(const nlohmann::json& report) {
  std::vector<std::string> paths;
  for (const auto& stack : report.at("stacks")) {
    for (int frame_id : stack.at("frames")) {
      const auto& frame = report.at("frames").at(frame_id);
      if (!frame.contains("module")) continue;
      const int module = frame.at("module").get<int>();
      if (module >= 0) paths.push_back(report.at("modules").at(module).at("path"));
    }
  }
  return paths;
}

}  // namespace vramshim::testing
