// The signals whose default action ends the process without its exit handlers: a handler that asks
// the control thread for a report, waits for it a bounded time, then lets the signal end the
// process as it would have without the shim (the same signal, the same core dump). The fatal ones
// (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) get a crash report; SIGTERM and SIGHUP, which stop a
// job from outside (kill, timeout, a batch system's time limit, a closed terminal), get the exit
// report the process would otherwise never write.
//
// The handler itself only reads and writes lock-free atomics and makes async-signal-safe calls
// (fstat and write of the wake pipe, a futex wait, sigaction, pthread_sigmask, raise). Only the
// first fatal signal of the process is reported; every other one — on any thread, while the first
// waits or after — and one on the control thread itself (which cannot write its own report) goes
// straight to the default action. So does every one once disconnected (the control thread stopped,
// a fork child) or in another process sharing the memory (vfork).
#pragma once

#include <signal.h>

#include <atomic>
#include <optional>
#include <string>

#include "shim/control/command_handler.h"
#include "shim/support/owned_descriptor.h"

namespace vramshim::control {

// How long a crashed thread waits for its report before the signal proceeds without one.
inline constexpr int kCrashReportWaitMs = 5000;

// Points the handler at `wake_end` (a wake pipe's write end, kept alive for good) and installs it
// for each of those signals whose disposition is SIG_DFL right now (or is already this handler). A
// signal the application handles or ignores is left alone, so there is never an earlier handler to
// chain to. A handler the application installs later replaces ours; if it calls the one it
// replaced, ours reports and ends the process with the signal, as the default action would have.
void install_fatal_signals(const support::OwnedDescriptor* wake_end);

// Points the handler at a new wake pipe's write end `to`, unless it no longer points at `from`
// (disconnected meanwhile).
void move_fatal_signals_wake(const support::OwnedDescriptor* from,
                             const support::OwnedDescriptor* to);

// Called by the control thread itself: a fatal signal on this thread is never reported.
void set_crash_reporting_thread();

// The fatal signal a thread is waiting on, if any; the control thread then writes the report and
// calls answer_crash().
std::optional<FatalSignal> requested_crash();

// Lets the crashed thread go on to end the process.
void answer_crash();

// No more crash reports: a crashed thread still waiting goes on, later fatal signals end the
// process at once. Used when the control thread stops and in a forked child.
void disconnect_fatal_signals();

// "SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE", "SIGILL", "SIGTERM", "SIGHUP"; "signal N" for any
// other.
std::string fatal_signal_name(int signal_number);

// A termination signal held on a thread (TerminationHold): how deep its holds are, and the signal
// held (0: none) with its siginfo. Each thread's lives where its holds are made (a thread-local of
// the hooks' file: one TLS address with their others, and none among the shim's dynamic symbols);
// the handler finds it through set_termination_holds.
struct HeldTermination {
  int depth;
  int signal_number;
  siginfo_t info;
};

// The calling thread's HeldTermination, for the handler (it runs on the thread a signal struck).
// The shim is preloaded: its thread-locals are in static TLS, which a handler may use.
void set_termination_holds(HeldTermination* (*of_this_thread)());

// Ends the hold in which a termination signal landed: waits for its report, then ends the process
// with the signal.
[[noreturn]] void end_held_termination_here(HeldTermination& held);

// Held around the shim's work on its locks (an allocation's or a free's bookkeeping): a SIGTERM or
// SIGHUP that lands meanwhile on this thread asks for the exit report at once but waits for it,
// and ends the process, only when the outermost hold ends, with the locks the report needs free
// (waiting inside, it would wait out the 5 s with them held, and the report be lost). Should the
// thread not get there, the control thread ends the process kCrashReportWaitMs after the report.
// `held`: this thread's.
class TerminationHold {
 public:
  explicit TerminationHold(HeldTermination& held) noexcept : held_(held) {
    ++held_.depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // before the hold's work (the locks)
  }
  ~TerminationHold() {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // after it (the unlocks)
    if (--held_.depth == 0 && held_.signal_number != 0) end_held_termination_here(held_);
  }

  TerminationHold(const TerminationHold&) = delete;
  TerminationHold& operator=(const TerminationHold&) = delete;

 private:
  HeldTermination& held_;
};

// Around a driver call made inside a hold with none of the shim's locks held (an allocation, a
// free or a synchronize, which may wait for the device for long): a termination signal landing
// during it is acted on at once, as outside any hold, not when the hold ends.
class TerminationRelease {
 public:
  explicit TerminationRelease(HeldTermination& held) noexcept : held_(held), depth_(held.depth) {
    held_.depth = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~TerminationRelease() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    held_.depth = depth_;
  }

  TerminationRelease(const TerminationRelease&) = delete;
  TerminationRelease& operator=(const TerminationRelease&) = delete;

 private:
  HeldTermination& held_;
  const int depth_;
};

// Called by the control thread after answering a termination whose thread held it: ends the
// process with that signal if the thread has not within kCrashReportWaitMs.
void end_held_termination(const FatalSignal& crash);

}  // namespace vramshim::control
