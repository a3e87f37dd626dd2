#include "shim/control/fatal_signals.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <string>

#include "shim/control/log.h"
#include "shim/control/wake_pipe.h"
#include "shim/support/write_without_sigpipe.h"

namespace vramshim::control {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
// What stops a job from outside (kill, timeout, a batch system's time limit, a closed terminal):
// their default action ends the process without its exit handlers, so without this no report.
// SIGINT is left alone: an interpreter embedded later keeps its own Ctrl-C handling only when it
// finds SIGINT at its default.
constexpr int kTerminationSignals[] = {SIGTERM, SIGHUP};

bool is_termination(int signal_number) {
  return signal_number == SIGTERM || signal_number == SIGHUP;
}

// The process's one crash report: idle → claimed (the crashed thread records the signal) →
// requested (it waits, futex on this word) → answered. Never back to idle, so any later fatal
// signal finds it taken and ends the process at once.
enum CrashState : int { kIdle, kClaimed, kRequested, kAnswered };
std::atomic<int> g_crash_state{kIdle};

std::atomic<const support::OwnedDescriptor*> g_wake_end{nullptr};
std::atomic<pid_t> g_process_id{0};  // the process that installed the handler
std::atomic<pid_t> g_reporting_thread_id{0};
std::atomic<bool> g_warn_unanswered{true};

// The claimed crash, written by its thread before it publishes kRequested.
std::atomic<int> g_signal_number{0};
std::atomic<int> g_code{0};
std::atomic<bool> g_address_known{false};
std::atomic<std::uintptr_t> g_address{0};
std::atomic<pid_t> g_thread_id{0};
std::atomic<pid_t> g_sender_pid{0};  // 0: none (a fault, or a signal from the kernel)

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free &&
                  std::atomic<std::uintptr_t>::is_always_lock_free &&
                  std::atomic<pid_t>::is_always_lock_free &&
                  std::atomic<const support::OwnedDescriptor*>::is_always_lock_free,
              "the signal handler needs lock-free atomics");
static_assert(sizeof(std::atomic<int>) == sizeof(int), "the crash state is a futex word");

// Where each thread's held termination signal is (set_termination_holds); null: no holds.
std::atomic<HeldTermination* (*)()> g_termination_holds{nullptr};
// The thread whose held termination the report was asked for (0: none).
std::atomic<pid_t> g_held_thread_id{0};

int* crash_state_word() { return reinterpret_cast<int*>(&g_crash_state); }

pid_t current_thread_id() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::int64_t monotonic_ns() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// Claims the crash report for this signal and wakes the control thread; false when nobody can
// write one: disconnected, another process (a vfork child shares our memory), the control thread
// itself, or a crash already claimed.
bool request_crash_report(int signal_number, const siginfo_t* info) {
  if (g_wake_end.load() == nullptr || g_process_id.load(std::memory_order_relaxed) != ::getpid()) {
    return false;
  }
  const pid_t thread_id = current_thread_id();
  if (thread_id == g_reporting_thread_id.load(std::memory_order_relaxed)) return false;
  int idle = kIdle;
  if (!g_crash_state.compare_exchange_strong(idle, kClaimed)) return false;
  g_signal_number.store(signal_number, std::memory_order_relaxed);
  g_code.store(info->si_code, std::memory_order_relaxed);
  // si_addr is the faulting address only for a signal the kernel raised for a fault; one sent by
  // kill, raise or abort (si_code <= 0) holds the sender there instead.
  g_address_known.store(info->si_code > 0, std::memory_order_relaxed);
  g_address.store(reinterpret_cast<std::uintptr_t>(info->si_addr), std::memory_order_relaxed);
  g_thread_id.store(thread_id, std::memory_order_relaxed);
  const bool sent =
      info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL;
  g_sender_pid.store(sent ? info->si_pid : 0, std::memory_order_relaxed);
  g_crash_state.store(kRequested);
  // Read after publishing the request: disconnect_fatal_signals() clears the pipe before it
  // answers, so either it answers this request or this sees the pipe gone (sequentially
  // consistent).
  const support::OwnedDescriptor* wake_end = g_wake_end.load();
  if (wake_end == nullptr) return false;
  wake(*wake_end);
  return true;
}

// Waits until the claimed request is answered or kCrashReportWaitMs pass; false on the time out.
bool wait_for_crash_report() {
  const std::int64_t deadline = monotonic_ns() + std::int64_t{kCrashReportWaitMs} * 1000000;
  for (;;) {
    const int state = g_crash_state.load();
    if (state != kClaimed && state != kRequested) return true;
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return false;
    if (state == kClaimed) {  // the claiming thread publishes kRequested within a few calls
      const timespec millisecond = {0, 1000000};
      ::nanosleep(&millisecond, nullptr);
      continue;
    }
    const timespec timeout = {static_cast<time_t>(left / 1000000000),
                              static_cast<long>(left % 1000000000)};
    // Returns at once if the word is no longer kRequested; EINTR (another signal) loops.
    ::syscall(SYS_futex, crash_state_word(), FUTEX_WAIT_PRIVATE, kRequested, &timeout, nullptr, 0);
  }
}

void warn_unanswered(int signal_number) {
  static const char crash[] =
      "vramshim: no crash report: not written within 5 s; the signal proceeds\n";
  static const char termination[] =
      "vramshim: no exit report: not written within 5 s; the signal proceeds\n";
  static_assert(kCrashReportWaitMs == 5000, "the messages say 5 s");
  const bool ends_job = is_termination(signal_number);
  ssize_t ignored =
      support::write_without_sigpipe(STDERR_FILENO, ends_job ? termination : crash,
                                     (ends_job ? sizeof termination : sizeof crash) - 1);
  (void)ignored;
}

void set_default_action(int signal_number) {
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(signal_number, &default_action, nullptr);
}

// The default action, on this thread: the signal ends the process (dumping core) as it would have
// without the shim. It is queued again with its own siginfo (si_code, si_addr), which the kernel
// allows a process to send itself, so the core dump records the fault, not a raise(); raise() if
// that fails. The signal is blocked while its handler runs, so it is unblocked first.
void end_with_default_action(int signal_number, siginfo_t* info) {
  set_default_action(signal_number);
  sigset_t this_signal;
  sigemptyset(&this_signal);
  sigaddset(&this_signal, signal_number);
  ::pthread_sigmask(SIG_UNBLOCK, &this_signal, nullptr);
  if (::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), current_thread_id(), signal_number, info) != 0) {
    ::raise(signal_number);
  }
}

void on_fatal_signal(int signal_number, siginfo_t* info, void* context);

// Whether our handler is `signal_number`'s disposition now.
bool installed(int signal_number) {
  struct sigaction current;
  return ::sigaction(signal_number, nullptr, &current) == 0 &&
         (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &on_fatal_signal;
}

// SIGTERM or SIGHUP. A handler the program installed over ours that calls the one it replaced
// would, without the shim, have found the default there and called nothing (the program then
// shuts down its own way): while ours is not installed, a call does nothing (and `info`, which such
// a caller may not pass, is not read). A second one while the first one's report is written waits
// for it instead of ending the process with the report half written.
void on_termination_signal(int signal_number, siginfo_t* info) {
  if (!installed(signal_number)) return;
  HeldTermination* (*const holds)() = g_termination_holds.load();
  HeldTermination* const held_here = holds != nullptr ? holds() : nullptr;
  if (held_here != nullptr && held_here->depth > 0) {
    HeldTermination& held = *held_here;
    // The report waits for this thread's locks: asked for now, waited for when the hold ends.
    if (held.signal_number == 0) {
      held.signal_number = signal_number;
      held.info = *info;
      g_held_thread_id.store(current_thread_id());
      request_crash_report(signal_number, info);
    }
    return;
  }
  const bool claimed = request_crash_report(signal_number, info);
  if (!wait_for_crash_report() && claimed && g_warn_unanswered.load(std::memory_order_relaxed)) {
    warn_unanswered(signal_number);
  }
  end_with_default_action(signal_number, info);
}

void on_fatal_signal(int signal_number, siginfo_t* info, void*) {
  if (is_termination(signal_number)) {
    on_termination_signal(signal_number, info);
    return;
  }
  if (request_crash_report(signal_number, info) && !wait_for_crash_report() &&
      g_warn_unanswered.load(std::memory_order_relaxed)) {
    warn_unanswered(signal_number);
  }
  end_with_default_action(signal_number, info);
}

void install_one(int signal_number) {
  if (installed(signal_number)) return;
  struct sigaction current;
  if (::sigaction(signal_number, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
    log(LogLevel::kDebug, "signal %d is handled or ignored by the application; no report for it",
        signal_number);
    return;
  }
  struct sigaction ours = {};
  ours.sa_sigaction = &on_fatal_signal;
  sigemptyset(&ours.sa_mask);
  // SA_ONSTACK: on a thread with an alternate stack (a stack overflow leaves no room on its own),
  // the handler runs there; runtimes such as Go's require it of every handler.
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  if (::sigaction(signal_number, &ours, nullptr) != 0) {
    log(LogLevel::kWarn, "cannot handle signal %d; no report for it", signal_number);
  }
}

}  // namespace

void install_fatal_signals(const support::OwnedDescriptor* wake_end) {
  // Recorded before the handler goes in, so a signal right after it finds them.
  g_process_id.store(::getpid(), std::memory_order_relaxed);
  g_warn_unanswered.store(log_level() >= LogLevel::kWarn, std::memory_order_relaxed);
  g_wake_end.store(wake_end);
  for (const int signal_number : kFatalSignals) install_one(signal_number);
  // The init of a pid namespace (a container's program without an init of its own) ignores a
  // signal whose action is the default: ours would report the process ended and return, and it
  // would go on with its exit report spent.
  if (::getpid() == 1) return;
  for (const int signal_number : kTerminationSignals) install_one(signal_number);
}

void set_crash_reporting_thread() {
  g_reporting_thread_id.store(current_thread_id(), std::memory_order_relaxed);
}

std::optional<FatalSignal> requested_crash() {
  if (g_crash_state.load() != kRequested) return std::nullopt;
  FatalSignal crash;
  crash.signal_number = g_signal_number.load(std::memory_order_relaxed);
  crash.code = g_code.load(std::memory_order_relaxed);
  if (g_address_known.load(std::memory_order_relaxed)) {
    crash.address = g_address.load(std::memory_order_relaxed);
  }
  crash.thread_id = g_thread_id.load(std::memory_order_relaxed);
  crash.termination = is_termination(crash.signal_number);
  if (const pid_t sender = g_sender_pid.load(std::memory_order_relaxed)) crash.sender_pid = sender;
  return crash;
}

void answer_crash() {
  int requested = kRequested;
  if (g_crash_state.compare_exchange_strong(requested, kAnswered)) {
    ::syscall(SYS_futex, crash_state_word(), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

void move_fatal_signals_wake(const support::OwnedDescriptor* from,
                             const support::OwnedDescriptor* to) {
  g_wake_end.compare_exchange_strong(from, to);
}

void disconnect_fatal_signals() {
  g_wake_end.store(nullptr);
  answer_crash();
  // With nobody to write a report, SIGTERM and SIGHUP are the default again (a fork child, whose
  // interpreter or program may look at their disposition); the fatal ones pass straight through.
  for (const int signal_number : kTerminationSignals) {
    if (installed(signal_number)) set_default_action(signal_number);
  }
}

void set_termination_holds(HeldTermination* (*of_this_thread)()) {
  g_termination_holds.store(of_this_thread);
}

void end_held_termination_here(HeldTermination& held) {
  if (!wait_for_crash_report() && g_warn_unanswered.load(std::memory_order_relaxed)) {
    warn_unanswered(held.signal_number);
  }
  end_with_default_action(held.signal_number, &held.info);
  ::_exit(128 + held.signal_number);  // the signal's default action ended the process before this
}

void end_held_termination(const FatalSignal& crash) {
  if (!crash.termination || g_held_thread_id.load() != crash.thread_id) return;
  timespec wait = {kCrashReportWaitMs / 1000, (kCrashReportWaitMs % 1000) * 1000000L};
  while (::nanosleep(&wait, &wait) != 0 && errno == EINTR) {
  }
  // Still here: the thread is held inside the shim (a driver call that does not return).
  set_default_action(crash.signal_number);
  ::syscall(SYS_tgkill, ::getpid(), crash.thread_id, crash.signal_number);
}

std::string fatal_signal_name(int signal_number) {
  switch (signal_number) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

}  // namespace vramshim::control
