// Reads CPython objects' fields straight from memory, given the running version's layout: no call
// into the interpreter, no GIL, no Python object created.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "shim/python/python_layout.h"

namespace vramshim::python {

template <typename T>
T read_field(uintptr_t object, int32_t offset) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(object + offset), sizeof(T));
  return value;
}

// A plausible object address: non-null, past the first page, pointer-aligned.
inline bool plausible_pointer(uintptr_t address) {
  return address >= 4096 && (address & (sizeof(void*) - 1)) == 0;
}

// The UTF-8 text of a compact str object (every str a code object holds is compact), at most
// `max_bytes` bytes of it. "?" when `str` is not a readable compact str.
std::string read_str(const PythonLayout& layout, uintptr_t str, size_t max_bytes = 4096);

// The data and size of a bytes object; size 0 when `bytes` is not plausible.
struct ByteView {
  const uint8_t* data;
  size_t size;
};
ByteView read_bytes(const PythonLayout& layout, uintptr_t bytes, size_t max_size);

}  // namespace vramshim::python
