// A small JSON writer for the control socket's responses (the shim links no JSON library).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vramshim::control {

// Builds one JSON text, commas and escaping included. Strings are escaped as JSON requires and
// bytes that are not valid UTF-8 become U+FFFD, so the output is always valid JSON whatever the
// input bytes. Usage: w.begin_object(); w.key("ok").boolean(true); w.key("n").unsigned_number(3);
// w.end_object();
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);  // inside an object, before each value
  JsonWriter& string(std::string_view value);
  JsonWriter& unsigned_number(std::uint64_t value);
  JsonWriter& signed_number(std::int64_t value);
  JsonWriter& real_number(double value);  // NaN and infinities are written as null
  JsonWriter& boolean(bool value);
  JsonWriter& null();

  const std::string& text() const { return text_; }

 private:
  void before_value();
  void append_escaped(std::string_view value);

  std::string text_;
  // One entry per open object or array: whether it has no element yet.
  std::vector<bool> empty_;
  bool after_key_ = false;
};

}  // namespace vramshim::control
