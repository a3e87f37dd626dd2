// The flush and report signals: a handler that only records the request and wakes the control
// thread.
#pragma once

#include "shim/support/owned_descriptor.h"

namespace vramshim::control {

// Bits returned by take_signal_requests().
inline constexpr unsigned kFlushRequested = 1;
inline constexpr unsigned kReportRequested = 2;

struct SignalInstallation {
  bool flush = false;   // the flush signal is handled by vramshim
  bool report = false;  // the report signal is handled by vramshim
};

// Points the handler at `wake_end` (a wake pipe's write end, kept alive for good) and installs it
// for each of the two signals (0 = none) whose disposition is SIG_DFL right now (or is already this
// handler). A signal the application handles or ignores is left alone (logged at debug level), so
// the application keeps it and the socket still flushes; since only the default disposition is ever
// replaced there is no earlier handler to chain to. A handler the application installs later simply
// replaces ours. The same number for both signals does both on one delivery.
SignalInstallation install_control_signals(int flush_signal, int report_signal,
                                           const support::OwnedDescriptor* wake_end);

// Points the handler at a new wake pipe's write end `to`, unless it no longer points at `from`
// (disconnected meanwhile).
void move_control_signals_wake(const support::OwnedDescriptor* from,
                               const support::OwnedDescriptor* to);

// The requests recorded since the last call (kFlushRequested | kReportRequested), cleared.
unsigned take_signal_requests();

// The handler stays installed but records and wakes nothing: used when the control thread stops and
// in a forked child (whose inherited wake pipe is the parent's).
void disconnect_control_signals();

// In a forked child, where the shim does nothing: the signals whose handler is still the shim's get
// their default disposition back, so that they end the child as they would without the shim.
// Async-signal-safe.
void give_control_signals_back();

}  // namespace vramshim::control
