#include "shim/python/python_version.h"

namespace vramshim::python {

PythonVersion version_from_hex(uint32_t hex) {
  PythonVersion version;
  version.major = static_cast<int>((hex >> 24) & 0xff);
  version.minor = static_cast<int>((hex >> 16) & 0xff);
  version.micro = static_cast<int>((hex >> 8) & 0xff);
  return version;
}

namespace {

// Reads a decimal number of at most 4 digits at *text; -1 if there is none.
int read_number(const char*& text) {
  int value = 0;
  int digits = 0;
  while (*text >= '0' && *text <= '9' && digits < 4) {
    value = value * 10 + (*text - '0');
    ++text;
    ++digits;
  }
  return digits == 0 ? -1 : value;
}

}  // namespace

PythonVersion parse_version_text(const char* text) {
  if (text == nullptr) return {};
  const int major = read_number(text);
  if (major <= 0 || *text != '.') return {};
  ++text;
  const int minor = read_number(text);
  if (minor < 0) return {};
  int micro = 0;
  if (*text == '.') {
    ++text;
    micro = read_number(text);
    if (micro < 0) return {};
  }
  return {major, minor, micro};
}

}  // namespace vramshim::python
