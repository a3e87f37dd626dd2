#include "analyzer/render/units.h"

#include <cstdio>
#include <cstdlib>

namespace vramshim::analyzer {

std::string format_bytes(int64_t bytes) {
  const char* sign = bytes < 0 ? "-" : "";
  const double magnitude = std::abs(static_cast<double>(bytes));
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  char text[48];
  if (magnitude < 1024) {
    std::snprintf(text, sizeof text, "%s%.0f B", sign, magnitude);
    return text;
  }
  double value = magnitude / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::snprintf(text, sizeof text, "%s%.1f %s", sign, value, kUnits[unit]);
  return text;
}

std::string format_signed_bytes(int64_t bytes) {
  return bytes > 0 ? "+" + format_bytes(bytes) : format_bytes(bytes);
}

std::string format_count(int64_t count) {
  // The magnitude as unsigned: the negation of INT64_MIN does not fit an int64_t.
  const uint64_t magnitude =
      count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

std::string format_count_of(int64_t count, const char* one, const char* many) {
  return format_count(count) + " " + (count == 1 ? one : many);
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

}  // namespace vramshim::analyzer
