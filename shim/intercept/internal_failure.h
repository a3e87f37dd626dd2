// A C++ exception inside the shim — in practice std::bad_alloc: the host is out of memory, or the
// mapping of a growing table failed — must never reach the program (through an extern "C" hook it
// ends in std::terminate), and the pool it may have left half-updated must never hand memory out
// again. The exported hooks and the control thread catch every exception and report it here; from
// then on the runtime stops pooling: new allocations go to the driver, and a free of memory a pool
// holds returns success and leaves the memory held, so no block goes to the driver or to a second
// owner.
#pragma once

#include <cuda.h>

#include <exception>

namespace vramshim::intercept {

// Logs one line, the first time (`where`: the hook or the task; `what`: the exception's message).
void note_internal_failure(const char* where, const char* what) noexcept;
bool internal_failure_seen() noexcept;

// For a hook whose body threw: notes the failure; the call fails with CUDA_ERROR_OUT_OF_MEMORY
// (the host's memory ran out), which leaves the program's data as it was.
CUresult failed_hook(const char* name, const char* what) noexcept;

// Runs `bookkeeping`, the shim's own part of a hook before or after its driver call (a pool hears
// of a stream or context made or about to go). An exception in it is the shim's failure, noted
// here (no pool serves anything from then on, so what it missed matters no more), not the call's:
// the call still goes to the driver, or keeps the result it had, instead of failing with the
// object it made leaked, or not made at all.
template <typename Bookkeeping>
void contain_failure(const char* hook, Bookkeeping&& bookkeeping) noexcept {
  try {
    bookkeeping();
  } catch (const std::exception& error) {
    note_internal_failure(hook, error.what());
  } catch (...) {
    note_internal_failure(hook, "an exception");
  }
}

}  // namespace vramshim::intercept
