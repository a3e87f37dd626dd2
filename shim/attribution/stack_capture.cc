#include "shim/attribution/stack_capture.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unwind.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "shim/intercept/real_dlsym.h"
#include "shim/support/owned_descriptor.h"

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

// libunwind's start opens a pipe at the two lowest free numbers, through which it tests whether an
// address may be read while it unwinds a frame without unwind information (JIT code): it reads
// one end, writes a byte of that memory into the other, and closes and reopens both when the read
// fails. Should the program close those numbers and reuse them, libunwind would do that to the
// program's files: from then on, the stacks are unwound by libgcc (libunwind_pipe_lost).
support::OwnedDescriptor g_libunwind_pipe[2];
std::atomic<bool> g_libunwind_pipe_known{false};
std::atomic<bool> g_libunwind_abandoned{false};
std::atomic<bool> g_libunwind_loss_told{false};
// The capturing threads check the pipe themselves, once per this much of the coarse clock at
// most, so that how soon a lost pipe is given up does not depend on the control thread running
// (a loaded machine may not run it for a second).
constexpr int64_t kPipeCheckIntervalNs = 10'000'000;
std::atomic<int64_t> g_next_pipe_check_ns{0};

int64_t coarse_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Whether libunwind is given up, checking its pipe now if it is not yet.
bool libunwind_given_up() {
  if (g_libunwind_abandoned.load(std::memory_order_relaxed)) return true;
  if (!g_libunwind_pipe_known.load(std::memory_order_acquire)) return false;
  if (g_libunwind_pipe[0].still_ours() && g_libunwind_pipe[1].still_ours()) return false;
  g_libunwind_abandoned.store(true, std::memory_order_relaxed);
  return true;
}

// Whether a capture may use libunwind: not given up, its pipe checked within the interval.
bool libunwind_usable() {
  if (g_libunwind_abandoned.load(std::memory_order_relaxed)) return false;
  if (!g_libunwind_pipe_known.load(std::memory_order_acquire)) return true;  // no pipe to lose
  const int64_t now = coarse_now_ns();
  int64_t next = g_next_pipe_check_ns.load(std::memory_order_relaxed);
  if (now >= next && g_next_pipe_check_ns.compare_exchange_strong(next, now + kPipeCheckIntervalNs,
                                                                  std::memory_order_relaxed)) {
    return !libunwind_given_up();
  }
  return true;
}

// The two lowest descriptor numbers not open now (-1 where there is none below 65536).
void lowest_free_descriptors(int free[2]) {
  free[0] = free[1] = -1;
  for (int fd = 0, found = 0; fd < 65536 && found < 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) free[found++] = fd;
  }
}

// Records the pipe libunwind's start opened at `free`, the numbers that were free before it.
void note_libunwind_pipe(const int free[2]) {
  support::OwnedDescriptor ends[2] = {support::OwnedDescriptor::recognize(free[0]),
                                      support::OwnedDescriptor::recognize(free[1])};
  struct stat read_end, write_end;
  if (ends[0].empty() || ends[1].empty() || ::fstat(free[0], &read_end) != 0 ||
      ::fstat(free[1], &write_end) != 0 || !S_ISFIFO(read_end.st_mode) ||
      read_end.st_ino != write_end.st_ino) {
    return;  // another thread's files, or a libunwind that opens no pipe
  }
  g_libunwind_pipe[0] = ends[0];
  g_libunwind_pipe[1] = ends[1];
  g_libunwind_pipe_known.store(true, std::memory_order_release);
}

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
  if (set_policy != nullptr && local_space != nullptr) {
    int free[2];
    lowest_free_descriptors(free);
    set_policy(*local_space, kUnwCachePerThread);  // libunwind starts here
    note_libunwind_pipe(free);
  }
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

bool libunwind_pipe_lost() {
  return libunwind_given_up() && !g_libunwind_loss_told.exchange(true, std::memory_order_relaxed);
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
  if (unwinder_ == Unwinder::kLibunwind && libunwind_usable()) {
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
