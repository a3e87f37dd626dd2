#include "shim/support/json_writer.h"

#include <cmath>

namespace vramshim::support {
namespace {

// Length of the valid UTF-8 sequence at the start of `bytes` (whose first byte is >= 0x80), or 0
// if it does not start with one.
size_t utf8_sequence_length(std::string_view bytes) {
  const auto b0 = static_cast<unsigned char>(bytes[0]);
  size_t length;
  unsigned char min1 = 0x80, max1 = 0xBF;  // allowed range of the second byte
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
    if (!empty_.back()) sink_.append(',');
    empty_.back() = false;
  }
}

JsonWriter& JsonWriter::open(char bracket) {
  before_value();
  sink_.append(bracket);
  empty_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  sink_.append(bracket);
  if (!empty_.empty()) empty_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  append_escaped(name);
  sink_.append(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view value) {
  before_value();
  append_escaped(value);
  return *this;
}

JsonWriter& JsonWriter::number(double value) {
  if (!std::isfinite(value)) return null();
  before_value();
  char digits[32];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  sink_.append(std::string_view(digits, static_cast<size_t>(result.ptr - digits)));
  return *this;
}

JsonWriter& JsonWriter::number_or_null(const std::optional<uint64_t>& value) {
  return value ? number(*value) : null();
}

JsonWriter& JsonWriter::boolean(bool value) {
  before_value();
  sink_.append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  sink_.append("null");
  return *this;
}

void JsonWriter::append_escaped(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  sink_.append('"');
  size_t plain_start = 0;  // bytes [plain_start, i) are written as they are
  size_t i = 0;
  while (i < value.size()) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c != '"' && c != '\\') {
      const size_t length = c < 0x80 ? 1 : utf8_sequence_length(value.substr(i));
      if (length > 0) {
        i += length;
        continue;
      }
    }
    if (i > plain_start) sink_.append(value.substr(plain_start, i - plain_start));
    if (c == '"' || c == '\\') {
      const char escaped[] = {'\\', static_cast<char>(c)};
      sink_.append(std::string_view(escaped, sizeof(escaped)));
    } else if (c < 0x20) {
      const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      sink_.append(std::string_view(escaped, sizeof(escaped)));
    } else {
      sink_.append("\\ufffd");
    }
    ++i;
    plain_start = i;
  }
  if (i > plain_start) sink_.append(value.substr(plain_start, i - plain_start));
  sink_.append('"');
}

}  // namespace vramshim::support
