#include "shim/control/control_signals.h"

#include <signal.h>

#include <atomic>
#include <initializer_list>

#include "shim/control/log.h"
#include "shim/control/wake_pipe.h"

namespace vramshim::control {
namespace {

std::atomic<int> g_flush_signal{0};
std::atomic<int> g_report_signal{0};
std::atomic<const support::OwnedDescriptor*> g_wake_end{nullptr};
std::atomic<unsigned> g_requests{0};

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<unsigned>::is_always_lock_free &&
                  std::atomic<const support::OwnedDescriptor*>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

// Async-signal-safe: lock-free atomics and write(2) only.
void on_control_signal(int signal_number) {
  unsigned requests = 0;
  if (signal_number == g_flush_signal.load(std::memory_order_relaxed)) requests |= kFlushRequested;
  if (signal_number == g_report_signal.load(std::memory_order_relaxed))
    requests |= kReportRequested;
  const support::OwnedDescriptor* wake_end = g_wake_end.load(std::memory_order_acquire);
  if (requests == 0 || wake_end == nullptr) return;
  g_requests.fetch_or(requests, std::memory_order_release);
  wake(*wake_end);
}

// Installs on_control_signal for signal_number if its disposition allows; returns whether it is
// ours now.
bool install_one(int signal_number, const char* role) {
  struct sigaction current;
  if (::sigaction(signal_number, nullptr, &current) != 0) {
    log(LogLevel::kWarn, "cannot read the disposition of signal %d (%s signal); not handling it",
        signal_number, role);
    return false;
  }
  const bool has_siginfo_handler = (current.sa_flags & SA_SIGINFO) != 0;
  if (!has_siginfo_handler && current.sa_handler == &on_control_signal) return true;
  if (has_siginfo_handler || current.sa_handler != SIG_DFL) {
    log(LogLevel::kDebug,
        "signal %d is handled or ignored by the application; not using it as the %s signal",
        signal_number, role);
    return false;
  }
  struct sigaction ours = {};
  ours.sa_handler = &on_control_signal;
  sigemptyset(&ours.sa_mask);
  // SA_ONSTACK: runtimes such as Go's require it of every handler in the process.
  ours.sa_flags = SA_RESTART | SA_ONSTACK;
  if (::sigaction(signal_number, &ours, nullptr) != 0) {
    log(LogLevel::kWarn, "cannot handle signal %d (%s signal)", signal_number, role);
    return false;
  }
  return true;
}

}  // namespace

SignalInstallation install_control_signals(int flush_signal, int report_signal,
                                           const support::OwnedDescriptor* wake_end) {
  // Recorded before the handler goes in, so a signal that arrives right after is not lost.
  g_flush_signal.store(flush_signal, std::memory_order_relaxed);
  g_report_signal.store(report_signal, std::memory_order_relaxed);
  g_wake_end.store(wake_end, std::memory_order_release);
  SignalInstallation installed;
  installed.flush = flush_signal > 0 && install_one(flush_signal, "flush");
  installed.report = report_signal > 0 && install_one(report_signal, "report");
  if (!installed.flush) g_flush_signal.store(0, std::memory_order_relaxed);
  if (!installed.report) g_report_signal.store(0, std::memory_order_relaxed);
  return installed;
}

unsigned take_signal_requests() { return g_requests.exchange(0, std::memory_order_acquire); }

void move_control_signals_wake(const support::OwnedDescriptor* from,
                               const support::OwnedDescriptor* to) {
  g_wake_end.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

void disconnect_control_signals() { g_wake_end.store(nullptr, std::memory_order_release); }

void give_control_signals_back() {
  for (const int signal_number : {g_flush_signal.load(std::memory_order_relaxed),
                                  g_report_signal.load(std::memory_order_relaxed)}) {
    struct sigaction current;
    if (signal_number <= 0 || ::sigaction(signal_number, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != &on_control_signal) continue;
    struct sigaction default_action = {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(signal_number, &default_action, nullptr);
  }
}

}  // namespace vramshim::control
