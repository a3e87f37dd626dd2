// Frames of the shim's interned stacks as short text, for the out-of-memory explanation on stderr
// and the live views' sites (the report keeps module + offset; the analyzer resolves file:line).
// Uses what dladdr says of the frames (FrameNames, looked up first for every stack to label) and
// the Python frame table; not for the hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shim/attribution/stack_table.h"
#include "shim/oom/frame_names.h"
#include "shim/python/python_stacks.h"

namespace vramshim::oom {

// The native frames of `stacks`' stacks `ids`, looked up.
FrameNames frame_names_of(const attribution::StackTable& stacks, const std::vector<int32_t>& ids);

// One frame: "train.py:57 forward" for a Python frame, the demangled dynamic symbol for a native
// one ("c10::cuda::…", cut at 100 characters), else "libfoo.so+0x1234".
std::string frame_label(uint64_t frame, const python::PythonStacks* python,
                        const FrameNames& names);

// What names a site best: its innermost Python frame outside the frameworks' files, else the
// innermost named frame outside the libraries of shim/support/system_libraries.def (the
// interpreter, libffi, the C and C++ runtimes, the CUDA libraries, the frameworks), else the
// innermost such frame as module+offset, else its innermost Python frame, else the frame of the
// framework's operation (shim/support/framework_operations.def), else the innermost frame;
// "(no stack)" without one.
std::string site_label(const attribution::StackTable& stacks, const python::PythonStacks* python,
                       int32_t stack, const FrameNames& names);

// The first `count` frames of a stack, innermost first.
std::vector<std::string> first_frames(const attribution::StackTable& stacks,
                                      const python::PythonStacks* python, int32_t stack,
                                      size_t count, const FrameNames& names);

}  // namespace vramshim::oom
