// The shim's JSON writer (it links no JSON library), for the control socket's answers and the
// report. It writes into a ByteSink and throws nothing of its own (a sink, or the stack of open
// objects and arrays, may throw std::bad_alloc); it allocates nothing per value or character:
// numbers go through std::to_chars, strings as runs of the input between escapes.
//
// Two ways to lay a document out:
// - structure: begin_object(), key(), begin_array() … write the commas and colons, compactly
//   (`{"ok":true,"devices":[{"device":0}]}`);
// - raw(): layout text written as is between values (the report's spaced, entry-per-line layout).
//   It takes no part in the commas: use it only while no begin_object() or begin_array() is open.
//
// Strings are escaped by one rule: `"` and `\` with a backslash, every control character below
// U+0020 as \u00XX, and each byte that does not start a valid UTF-8 sequence (stray, cut, overlong,
// surrogate, above U+10FFFF: paths and command lines may hold any bytes) as \ufffd, so the output
// is valid JSON whatever the input bytes.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shim/support/byte_sink.h"

namespace vramshim::support {

class JsonWriter {
 public:
  explicit JsonWriter(ByteSink& sink) : sink_(sink) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view name);  // inside an object, before each value

  JsonWriter& string(std::string_view value);
  template <typename Integer, typename = std::enable_if_t<std::is_integral_v<Integer> &&
                                                          !std::is_same_v<Integer, bool>>>
  JsonWriter& number(Integer value) {
    before_value();
    char digits[24];
    const auto result = std::to_chars(digits, digits + sizeof(digits), value);
    sink_.append(std::string_view(digits, static_cast<size_t>(result.ptr - digits)));
    return *this;
  }
  // Shortest round-trip form, whatever the locale; NaN and infinities are written as null.
  JsonWriter& number(double value);
  JsonWriter& number_or_null(const std::optional<uint64_t>& value);
  JsonWriter& boolean(bool value);
  JsonWriter& null();

  // Layout text written as is: braces, separators, keys known to need no escaping.
  JsonWriter& raw(std::string_view text) {
    sink_.append(text);
    return *this;
  }
  JsonWriter& raw(char c) {
    sink_.append(c);
    return *this;
  }

 private:
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  void before_value();
  void append_escaped(std::string_view value);

  ByteSink& sink_;
  // One entry per open object or array: whether it has no element yet.
  std::vector<bool> empty_;
  bool after_key_ = false;
};

}  // namespace vramshim::support
