// Captures the return addresses of the calling thread, innermost first, without the shim's own
// frames.
#pragma once

#include <array>
#include <cstdint>

#include "shim/attribution/module_range.h"

namespace vramshim::attribution {

enum class Unwinder : uint8_t {
  kLibunwind,  // libunwind's unw_backtrace, from a private (RTLD_LOCAL) dlopen of libunwind.so.8
  kLibgcc,     // libgcc's _Unwind_Backtrace: slower, always present
};

// libunwind when libunwind.so.8 loads and VRAMSHIM_TEST_NO_LIBUNWIND is not "1", else libgcc.
// Loads libunwind and reads the variable on the first call only: call it at init.
Unwinder preferred_unwinder();

// Called periodically: true, once, when the program closed a descriptor of the pipe libunwind
// opened at its start (it may have reused the number for a file of its own, which libunwind would
// read, write and close): every capture uses libgcc's unwinder from then on. Captures check the
// pipe too, every 10 ms at most, and give libunwind up at once; this call then says so.
bool libunwind_pipe_lost();

class StackCapture {
 public:
  // VRAMSHIM_STACK_DEPTH accepts up to this (control::kMaxStackDepth).
  static constexpr int kMaxDepth = 256;
  // Frames unwound beyond the requested depth so that the shim's own leading frames (hook, tracker,
  // capture) can be dropped without shortening the stack.
  static constexpr int kOwnFrameAllowance = 8;
  // What one capture unwinds into: one frame more than it may keep, to tell a stack the depth cut.
  using Buffer = std::array<uint64_t, kMaxDepth + kOwnFrameAllowance + 1>;
  // The frames a capture kept, inside its buffer.
  struct Frames {
    const uint64_t* frames;
    int depth;
    // The unwinder reached the stack's base (a thread's start in the C library, or the program's
    // entry point), and every frame is among those kept. An unwinder also stops early, at a frame
    // without unwind information (JIT code, a perf trampoline): such a stack is not whole.
    bool whole;
    // The stack had frames past the depth, left out: the buffer holds one past `frames + depth`.
    bool cut;
  };

  // depth: frames kept per stack, clamped to [1, kMaxDepth]. A libunwind request falls back to
  // libgcc when libunwind cannot be loaded. Leading frames inside `own_module` are dropped.
  StackCapture(int depth, Unwinder unwinder, ModuleRange own_module);

  // Unwinds the caller's stack into `buffer` and returns at most depth() of its return addresses,
  // innermost first, where they lie in the buffer (so that dropping the shim's own frames copies
  // nothing). Takes no lock and does not allocate after the calling thread's first capture.
  Frames capture(Buffer& buffer) const;

  int depth() const { return depth_; }
  Unwinder unwinder() const { return unwinder_; }

 private:
  // Whether `return_address`, a stack's last, lies where every stack ends: in the C library
  // (start_thread, clone3, __libc_start_call_main) or just after the program's entry point.
  bool at_stack_base(uint64_t return_address) const;

  int depth_;
  Unwinder unwinder_;
  ModuleRange own_module_;
  ModuleRange c_library_;
  uintptr_t program_entry_;
};

}  // namespace vramshim::attribution
