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

std::string report_variant(const std::string& path, const char* variant) {
  static constexpr char kExtension[] = ".json";
  const size_t extension = sizeof(kExtension) - 1;
  const size_t slash = path.rfind('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  if (path.size() >= name_start + extension &&
      path.compare(path.size() - extension, extension, kExtension) == 0) {
    return path.substr(0, path.size() - extension) + "." + variant + kExtension;
  }
  return path + "." + variant;
}

}  // namespace vramshim::report
