#include "shim/control/json_writer.h"

#include <cmath>
#include <cstdio>

namespace vramshim::control {
namespace {

// Length of the valid UTF-8 sequence at the start of bytes, or 0 if it does not start with one.
size_t utf8_sequence_length(std::string_view bytes) {
  const auto b0 = static_cast<unsigned char>(bytes[0]);
  size_t length;
  unsigned char min1 = 0x80, max1 = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) min1 = 0xA0;  // overlong
    if (b0 == 0xED) max1 = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) min1 = 0x90;  // overlong
    if (b0 == 0xF4) max1 = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (bytes.size() < length) return 0;
  const auto b1 = static_cast<unsigned char>(bytes[1]);
  if (b1 < min1 || b1 > max1) return 0;
  for (size_t i = 2; i < length; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return length;
}

}  // namespace

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!empty_.empty()) {
    if (!empty_.back()) text_ += ',';
    empty_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  text_ += '{';
  empty_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  text_ += '}';
  if (!empty_.empty()) empty_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  text_ += '[';
  empty_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  text_ += ']';
  if (!empty_.empty()) empty_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  append_escaped(name);
  text_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view value) {
  before_value();
  append_escaped(value);
  return *this;
}

JsonWriter& JsonWriter::unsigned_number(std::uint64_t value) {
  before_value();
  text_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::signed_number(std::int64_t value) {
  before_value();
  text_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::real_number(double value) {
  if (!std::isfinite(value)) return null();
  before_value();
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  // printf's decimal point follows the C locale's; the host may have changed LC_NUMERIC.
  for (char* c = buffer; *c != '\0'; ++c) {
    if (*c == ',') *c = '.';
  }
  text_ += buffer;
  return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
  before_value();
  text_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  text_ += "null";
  return *this;
}

void JsonWriter::append_escaped(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  text_ += '"';
  size_t i = 0;
  while (i < value.size()) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '"' || c == '\\') {
      text_ += '\\';
      text_ += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      text_ += "\\u00";
      text_ += kHex[c >> 4];
      text_ += kHex[c & 0xF];
      ++i;
    } else {
      const size_t length = utf8_sequence_length(value.substr(i));
      if (length == 0) {
        text_ += "\\ufffd";
        ++i;
      } else {
        text_.append(value.data() + i, length);
        i += length;
      }
    }
  }
  text_ += '"';
}

}  // namespace vramshim::control
