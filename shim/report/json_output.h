// Hand-rolled JSON output for the report: numbers with std::to_chars, strings escaped and made
// valid UTF-8. No JSON library and no per-value allocation, so large reports stream out quickly.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include "shim/report/atomic_file.h"

namespace vramshim::report {

class JsonOutput {
 public:
  explicit JsonOutput(AtomicFile& file) : file_(file) {}

  // Structural text written as is: braces, commas, keys known to need no escaping.
  JsonOutput& raw(std::string_view text) {
    file_.append(text);
    return *this;
  }
  JsonOutput& raw(char c) {
    file_.append(c);
    return *this;
  }

  JsonOutput& number(uint64_t value) { return integer(value); }
  JsonOutput& number(int64_t value) { return integer(value); }
  JsonOutput& number(uint32_t value) { return integer(value); }
  JsonOutput& number(int32_t value) { return integer(value); }
  // Shortest round-trip form; NaN and infinities become null.
  JsonOutput& number(double value);
  JsonOutput& number_or_null(const std::optional<uint64_t>& value);

  JsonOutput& boolean(bool value) { return raw(value ? "true" : "false"); }
  JsonOutput& null() { return raw("null"); }

  // A quoted string. Invalid UTF-8 bytes (paths and command lines may hold any bytes) become
  // U+FFFD so the document always parses.
  JsonOutput& string(std::string_view text);

 private:
  template <typename Integer>
  JsonOutput& integer(Integer value) {
    char digits[24];
    const auto result = std::to_chars(digits, digits + sizeof(digits), value);
    file_.append(std::string_view(digits, static_cast<size_t>(result.ptr - digits)));
    return *this;
  }

  AtomicFile& file_;
};

}  // namespace vramshim::report
