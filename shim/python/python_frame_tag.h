// How a Python frame travels in a stack of return addresses: a tagged 64-bit value.
#pragma once

#include <cstdint>

namespace vramshim::python {

// Bit 63 set: a Python frame, whose low 32 bits are its id in the PythonFrameTable. User-space
// return addresses never have bit 63 set, so the stack interner carries both kinds unchanged.
inline constexpr uint64_t kPythonFrameTag = uint64_t{1} << 63;

inline uint64_t tag_python_frame(uint32_t id) { return kPythonFrameTag | id; }
inline bool is_python_frame(uint64_t frame) { return (frame & kPythonFrameTag) != 0; }
inline uint32_t python_frame_id(uint64_t frame) { return static_cast<uint32_t>(frame); }

}  // namespace vramshim::python
