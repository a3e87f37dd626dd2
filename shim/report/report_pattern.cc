#include "shim/report/report_pattern.h"

#include <unistd.h>

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
        if (!values.rank || is_safe_rank(*values.rank)) path += values.rank.value_or("0");
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

bool is_safe_rank(std::string_view rank) {
  if (rank.empty() || rank == "." || rank == "..") return false;
  for (const char c : rank) {
    const bool safe = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) return false;
  }
  return true;
}

std::string absolute_report_pattern(const std::string& pattern) {
  if (pattern.empty() || pattern[0] == '/') return pattern;
  char directory[4096];
  if (::getcwd(directory, sizeof(directory)) == nullptr) return pattern;
  std::string absolute;
  for (const char* c = directory; *c != '\0'; ++c) {
    if (*c == '%') absolute.push_back('%');
    absolute.push_back(*c);
  }
  return absolute + "/" + pattern;
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
