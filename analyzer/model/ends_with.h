// Whether a text ends with a suffix (std::string::ends_with is C++20's).
#pragma once

#include <cstring>
#include <string>

namespace vramshim::analyzer {

inline bool ends_with(const std::string& text, const char* suffix) {
  const size_t length = std::strlen(suffix);
  return text.size() >= length && text.compare(text.size() - length, length, suffix) == 0;
}

}  // namespace vramshim::analyzer
