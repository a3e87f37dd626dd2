#include "shim/attribution/stack_capture.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/auxv.h>
#include <unwind.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "shim/intercept/real_dlsym.h"

namespace vramshim::attribution {
namespace {

using UnwBacktraceFn = int (*)(void** buffer, int size);
using UnwSetCachingPolicyFn = int (*)(void* address_space, int policy);
constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD in libunwind.h

#if defined(__x86_64__)
#define VRAMSHIM_UNW_ARCH "x86_64"
#elif defined(__aarch64__)
#define VRAMSHIM_UNW_ARCH "aarch64"
#endif

// libunwind is opened RTLD_LOCAL so its _Unwind_* never replace libgcc's in the host process.
UnwBacktraceFn load_unw_backtrace() {
  const char* forced_off = getenv("VRAMSHIM_TEST_NO_LIBUNWIND");
  if (forced_off != nullptr && strcmp(forced_off, "1") == 0) return nullptr;
  const intercept::DlsymFn find = intercept::real_dlsym();
  if (find == nullptr) return nullptr;
  void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return nullptr;
  auto backtrace = reinterpret_cast<UnwBacktraceFn>(find(library, "unw_backtrace"));
#ifdef VRAMSHIM_UNW_ARCH
  auto set_policy = reinterpret_cast<UnwSetCachingPolicyFn>(
      find(library, "_UL" VRAMSHIM_UNW_ARCH "_set_caching_policy"));
  auto* local_space =
      static_cast<void**>(find(library, "_UL" VRAMSHIM_UNW_ARCH "_local_addr_space"));
  if (set_policy != nullptr && local_space != nullptr) set_policy(*local_space, kUnwCachePerThread);
#endif
  return backtrace;
}

UnwBacktraceFn unw_backtrace_fn() {
  static const UnwBacktraceFn resolved = load_unw_backtrace();
  return resolved;
}

struct LibgccWalk {
  uint64_t* frames;
  int capacity;
  int count;
};

_Unwind_Reason_Code record_libgcc_frame(struct _Unwind_Context* context, void* data) {
  auto* walk = static_cast<LibgccWalk*>(data);
  if (walk->count >= walk->capacity) return _URC_END_OF_STACK;
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  walk->frames[walk->count++] = ip;
  return _URC_NO_REASON;
}

}  // namespace

Unwinder preferred_unwinder() {
  return unw_backtrace_fn() != nullptr ? Unwinder::kLibunwind : Unwinder::kLibgcc;
}

StackCapture::StackCapture(int depth, Unwinder unwinder, ModuleRange own_module)
    : depth_(std::clamp(depth, 1, kMaxDepth)),
      unwinder_(unwinder == Unwinder::kLibunwind && unw_backtrace_fn() == nullptr
                    ? Unwinder::kLibgcc
                    : unwinder),
      own_module_(own_module),
      c_library_(ModuleRange::containing(reinterpret_cast<const void*>(&clone))),
      program_entry_(getauxval(AT_ENTRY)) {}

bool StackCapture::at_stack_base(uint64_t return_address) const {
  // _start calls __libc_start_main within its first few dozen bytes.
  constexpr uintptr_t kEntryCode = 64;
  return c_library_.contains(return_address) ||
         (program_entry_ != 0 && return_address > program_entry_ &&
          return_address <= program_entry_ + kEntryCode);
}

StackCapture::Frames StackCapture::capture(Buffer& buffer) const {
  static_assert(sizeof(void*) == sizeof(uint64_t), "return addresses are stored as uint64_t");
  uint64_t* const unwound = buffer.data();
  // One frame more than may be kept: its presence says the depth cut the stack.
  const int wanted = depth_ + kOwnFrameAllowance + 1;
  int count = 0;
  if (unwinder_ == Unwinder::kLibunwind) {
    count = unw_backtrace_fn()(reinterpret_cast<void**>(unwound), wanted);
    if (count < 0) count = 0;
  } else {
    LibgccWalk walk{unwound, wanted, 0};
    _Unwind_Backtrace(record_libgcc_frame, &walk);
    count = walk.count;
  }
  const int first = count_leading_frames_in(unwound, count, own_module_);
  const bool cut = count - first > depth_;
  const bool whole = !cut && count < wanted && count > first && at_stack_base(unwound[count - 1]);
  return {unwound + first, std::min(count - first, depth_), whole, cut};
}

}  // namespace vramshim::attribution
