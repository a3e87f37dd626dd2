#include "shim/report/report_pattern.h"

namespace vramshim::report {

std::string expand_report_pattern(std::string_view pattern, const ReportPatternValues& values) {
  std::string path;
  path.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      path.push_back(pattern[i]);
      continue;
    }
    switch (pattern[i + 1]) {
      case 'p':
        path += std::to_string(values.pid);
        break;
      case 'h':
        path += values.host;
        break;
      case 'r':
        path += values.rank.value_or("0");
        break;
      case 't':
        path += std::to_string(values.unix_time);
        break;
      case 'n':
        path += std::to_string(values.sequence);
        break;
      case '%':
        path.push_back('%');
        break;
      default:
        path.push_back('%');
        path.push_back(pattern[i + 1]);
        break;
    }
    ++i;
  }
  return path;
}

std::string crash_report_path(std::string_view report_path) {
  constexpr std::string_view kJson = ".json";
  const bool json = report_path.size() >= kJson.size() &&
                    report_path.substr(report_path.size() - kJson.size()) == kJson;
  const std::string_view stem =
      json ? report_path.substr(0, report_path.size() - kJson.size()) : report_path;
  return std::string(stem) + ".crash" + (json ? std::string(kJson) : std::string());
}

}  // namespace vramshim::report
