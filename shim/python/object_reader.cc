#include "shim/python/object_reader.h"

namespace vramshim::python {

namespace {

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x110000) {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back('?');
  }
}

constexpr uint32_t kKindShift = 2;
constexpr uint32_t kKindMask = 7;
constexpr uint32_t kCompactBit = 1u << 5;
constexpr uint32_t kAsciiBit = 1u << 6;

}  // namespace

std::string read_str(const PythonLayout& layout, uintptr_t str, size_t max_bytes) {
  if (!plausible_pointer(str)) return "?";
  const int64_t length = read_field<int64_t>(str, layout.str_length);
  const uint32_t state = read_field<uint32_t>(str, layout.str_state);
  if (length < 0 || (state & kCompactBit) == 0) return "?";
  const size_t count = static_cast<size_t>(length) < max_bytes ? length : max_bytes;
  if ((state & kAsciiBit) != 0) {
    return std::string(reinterpret_cast<const char*>(str + layout.str_ascii_size), count);
  }
  // Non-ASCII compact str: the cached UTF-8 copy when there is one, else the code points.
  const int64_t utf8_length = read_field<int64_t>(str, layout.str_ascii_size);
  const uintptr_t utf8 = read_field<uintptr_t>(str, layout.str_ascii_size + 8);
  if (utf8 != 0 && utf8_length >= 0) {
    const size_t bytes = static_cast<size_t>(utf8_length) < max_bytes ? utf8_length : max_bytes;
    return std::string(reinterpret_cast<const char*>(utf8), bytes);
  }
  const uintptr_t data = str + layout.str_compact_size;
  const uint32_t kind = (state >> kKindShift) & kKindMask;
  std::string out;
  for (size_t i = 0; i < count && out.size() < max_bytes; ++i) {
    uint32_t code_point;
    if (kind == 1) {
      code_point = reinterpret_cast<const uint8_t*>(data)[i];
    } else if (kind == 2) {
      code_point = read_field<uint16_t>(data, static_cast<int32_t>(2 * i));
    } else if (kind == 4) {
      code_point = read_field<uint32_t>(data, static_cast<int32_t>(4 * i));
    } else {
      return "?";
    }
    append_utf8(out, code_point);
  }
  return out;
}

ByteView read_bytes(const PythonLayout& layout, uintptr_t bytes, size_t max_size) {
  if (!plausible_pointer(bytes)) return {nullptr, 0};
  const int64_t size = read_field<int64_t>(bytes, layout.bytes_size);
  if (size <= 0 || static_cast<uint64_t>(size) > max_size) return {nullptr, 0};
  return {reinterpret_cast<const uint8_t*>(bytes + layout.bytes_data), static_cast<size_t>(size)};
}

}  // namespace vramshim::python
