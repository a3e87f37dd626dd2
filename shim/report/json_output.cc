#include "shim/report/json_output.h"

#include <cmath>

namespace vramshim::report {
namespace {

// Length of the valid UTF-8 sequence starting at text[0] (a byte >= 0x80), or 0 if it is invalid.
size_t valid_utf8_length(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) second_min = 0xa0;  // overlong
    if (lead == 0xed) second_max = 0x9f;  // UTF-16 surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) second_min = 0x90;  // overlong
    if (lead == 0xf4) second_max = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < second_min || byte(1) > second_max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

JsonOutput& JsonOutput::number(double value) {
  if (!std::isfinite(value)) return null();
  char digits[32];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  file_.append(std::string_view(digits, static_cast<size_t>(result.ptr - digits)));
  return *this;
}

JsonOutput& JsonOutput::number_or_null(const std::optional<uint64_t>& value) {
  return value ? number(*value) : null();
}

JsonOutput& JsonOutput::string(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  file_.append('"');
  size_t plain_start = 0;
  size_t i = 0;
  const auto flush_plain = [&] {
    if (i > plain_start) file_.append(text.substr(plain_start, i - plain_start));
  };
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t length = valid_utf8_length(text.substr(i));
      if (length > 0) {
        i += length;
        continue;
      }
    }
    flush_plain();
    if (c == '"' || c == '\\') {
      file_.append('\\');
      file_.append(static_cast<char>(c));
    } else if (c == '\n') {
      file_.append("\\n");
    } else if (c == '\t') {
      file_.append("\\t");
    } else if (c < 0x20) {
      const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      file_.append(std::string_view(escaped, sizeof(escaped)));
    } else {
      file_.append("\\ufffd");
    }
    ++i;
    plain_start = i;
  }
  flush_plain();
  file_.append('"');
  return *this;
}

}  // namespace vramshim::report
