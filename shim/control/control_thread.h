// The control thread: serves the control socket, acts on the flush and report signals, writes the
// crash report of a fatal signal, and runs the runtime's periodic work, all on one thread that
// never keeps the process from exiting.
#pragma once

#include <pthread.h>

#include <memory>
#include <string>

#include "shim/control/command_handler.h"
#include "shim/control/config.h"

namespace vramshim::control {

class ControlThread {
 public:
  // On the control thread, inside a request that waits long (a deep flush waits for the GIL and
  // for the frameworks' releases): writes the report a fatal or termination signal asked for
  // meanwhile, which would otherwise wait for the request's end past the signal's 5 s. Does
  // nothing on another thread.
  static void serve_crash_report_while_busy();

  // How often CommandHandler::tick runs.
  static constexpr int kTickMs = kControlTickMs;

  ControlThread() = default;
  ~ControlThread() { stop(); }
  ControlThread(const ControlThread&) = delete;
  ControlThread& operator=(const ControlThread&) = delete;

  // Opens the control socket (config.socket_enabled; config.socket_path or the default path in a
  // private directory), installs the flush and report signal handlers and, with reports on
  // (config.report_enabled), the fatal-signal handlers (fatal_signals.h) where the disposition is
  // the default, and starts the thread, which calls `handler` only. A part that fails is logged
  // once and left out (no socket: signals still work). `handler` must outlive the thread. Returns
  // false if no thread runs. Does nothing and returns true if already running.
  bool start(const Config& config, CommandHandler& handler);

  // Asks the thread to finish and waits at most wait_ms (a command in progress may take longer; the
  // thread is then left to die with the process). Removes the socket file either way. Fatal
  // signals from then on get no crash report.
  void stop(int wait_ms = 1000);

  // For the exit path: stop() that frees nothing (what the thread used stays until the process
  // ends) and takes no lock the program may hold: exit() may come from a signal handler that
  // interrupted malloc, or the shim's work, on the calling thread, whose locks stay held.
  void stop_at_exit(int wait_ms);

  // From the runtime's pthread_atfork child handler: the child has no control thread and must not
  // touch the parent's socket or wake fd. Closes the inherited wake fd and listening socket (the
  // file stays, it is the parent's) and forgets all state; the signal handlers stay but do nothing
  // (a fatal signal takes its default action at once).
  // Connections the parent was answering at the moment of fork stay open in the child (they are
  // close-on-exec; clients stop reading at the parent's newline). start() may be called again.
  void reset_after_fork_in_child();

  bool running() const { return state_ != nullptr; }

  // The control socket's path, or empty when there is none.
  std::string socket_path() const;

 private:
  struct State;
  static void* run(void* state);
  // Disconnects the signals, asks the thread to finish and waits at most wait_ms; joins it if it
  // did, else leaves it (detached) to the process's end.
  void finish(int wait_ms);

  std::shared_ptr<State> state_;
  pthread_t thread_{};
  bool stopped_at_exit_ = false;
};

}  // namespace vramshim::control
