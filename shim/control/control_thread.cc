#include "shim/control/control_thread.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "shim/control/client_connections.h"
#include "shim/control/control_signals.h"
#include "shim/control/dispatch.h"
#include "shim/control/fatal_signals.h"
#include "shim/control/listening_socket.h"
#include "shim/control/log.h"
#include "shim/control/socket_path.h"
#include "shim/control/wake_pipe.h"
#include "shim/intercept/internal_failure.h"
#include "shim/support/own_threads.h"

namespace vramshim::control {

using intercept::note_internal_failure;

namespace {
// The control thread's State, on that thread only (serve_crash_report_while_busy).
thread_local void* t_serving = nullptr;
}  // namespace

// Shared by the owner and the thread, so a thread still busy when stop() gives up keeps it alive.
struct ControlThread::State {
  explicit State(CommandHandler& h)
      : handler(h), connections([this](std::string_view line) { return respond(line); }) {}

  std::string respond(std::string_view line) {
    try {
      return respond_to(line, handler);
    } catch (const std::exception& e) {
      note_internal_failure("a socket request", e.what());
      return error_response(std::string("internal error: ") + e.what());
    } catch (...) {
      note_internal_failure("a socket request", "an exception");
      return error_response("internal error");
    }
  }

  // A thread that took a signal ending the process waits (a bounded time) for its report.
  void report_crash() {
    const std::optional<FatalSignal> crash = requested_crash();
    if (!crash) return;
    const char* what = crash->termination ? "exit report" : "crash report";
    try {
      support::StringSink ignored;
      support::JsonWriter response(ignored);
      const Outcome outcome = handler.report_crash(*crash, response);
      if (!outcome.ok()) log(LogLevel::kWarn, "no %s: %s", what, outcome.error.c_str());
    } catch (...) {
      log(LogLevel::kWarn, "no %s: the report failed with an exception", what);
    }
    // The signal ends the process next, with no exit path to remove the socket file.
    if (socket != nullptr) socket->remove_file();
    remove_own_directory();
    answer_crash();
    end_held_termination(*crash);
  }

  void act_on_signals() {
    const unsigned requests = take_signal_requests();
    try {
      if ((requests & kFlushRequested) != 0) {
        support::StringSink ignored;
        support::JsonWriter response(ignored);
        const Outcome outcome = handler.flush(Trigger::kSignal, /*deep=*/false, response);
        if (!outcome.ok())
          log(LogLevel::kWarn, "flush on signal failed: %s", outcome.error.c_str());
      }
      if ((requests & kReportRequested) != 0) {
        support::StringSink ignored;
        support::JsonWriter response(ignored);
        const Outcome outcome = handler.report(Trigger::kSignal, {}, response);
        if (!outcome.ok())
          log(LogLevel::kWarn, "report on signal failed: %s", outcome.error.c_str());
      }
    } catch (const std::exception& e) {
      note_internal_failure("a signal-requested command", e.what());
    } catch (...) {
      note_internal_failure("a signal-requested command", "an exception");
    }
  }

  // Checks that the descriptors it polls are still its own: the program may close any number
  // (closerange, dup2, a second close) and reuse it for a file of its own, which the thread would
  // then read, drain or close. A lost wake pipe is replaced, a lost socket bound again.
  void keep_descriptors() {
    if (!wake.load()->read_end.still_ours()) replace_wake_pipe();
    if (socket != nullptr && !socket->still_ours()) listen_again();
  }

  // The signal handlers are pointed at a new pipe; the old write end stays open, as a handler may
  // be writing to it now. Without a pipe, signals are still acted on at the next tick.
  void replace_wake_pipe() {
    WakePipe* old = wake.load();
    const int lost = old->read_end.fd();
    old->read_end.forget();
    auto fresh = std::make_unique<WakePipe>();
    if (!create_wake_pipe(fresh.get())) {
      if (lost >= 0) {
        log(LogLevel::kWarn,
            "the program closed descriptor %d, the control thread's wake-up pipe, and no new pipe "
            "can be made; signals are acted on within %d ms",
            lost, kTickMs);
      }
      return;
    }
    log(LogLevel::kWarn,
        "the program closed descriptor %d, the control thread's wake-up pipe; using a new one",
        lost);
    WakePipe* replacement = fresh.release();
    wake.store(replacement);
    move_control_signals_wake(&old->write_end, &replacement->write_end);
    move_fatal_signals_wake(&old->write_end, &replacement->write_end);
  }

  // Binds the socket's path again (the file left there is the closed socket's).
  void listen_again() {
    const int lost = socket->fd();
    const std::string path =
        socket->absolute_path().empty() ? socket->path() : socket->absolute_path();
    socket.reset();  // removes the file, if it is still the closed socket's; closes nothing
    std::string error;
    socket = ListeningSocket::open(path, &error);
    if (socket == nullptr) {
      log(LogLevel::kWarn,
          "the program closed descriptor %d, the control socket; control socket disabled: %s", lost,
          error.c_str());
    } else {
      log(LogLevel::kWarn,
          "the program closed descriptor %d, the control socket; listening at %s again", lost,
          path.c_str());
    }
  }

  void loop() {
    set_crash_reporting_thread();
    t_serving = this;
    std::int64_t next_tick = monotonic_ms() + kTickMs;
    std::int64_t accept_paused_until = 0;
    std::vector<pollfd> fds;
    while (!stop_requested.load(std::memory_order_acquire)) {
      // The loop's own allocations (poll descriptors, connections, answers) may fail: the thread
      // goes on, its connections dropped (std::terminate would end the job).
      try {
        keep_descriptors();
        std::int64_t now = monotonic_ms();
        if (now >= next_tick) {
          try {
            handler.tick();
          } catch (const std::exception& e) {
            note_internal_failure("the periodic work", e.what());
          } catch (...) {
            note_internal_failure("the periodic work", "an exception");
          }
          now = monotonic_ms();
          next_tick = now + kTickMs;
          // The program's main thread ended with pthread_exit() and its other threads since: glibc
          // would end the process now, as its last thread ends, but the shim's threads run on.
          if (support::only_own_threads_remain()) {
            log(LogLevel::kDebug, "the program's threads have all ended; ending the process");
            // The program's exit handlers run here with the program's signal mask, as on its last
            // thread: one that waits on a signal (a watchdog's alarm, a SIGTERM) gets it.
            pthread_sigmask(SIG_SETMASK, &program_signal_mask, nullptr);
            std::exit(0);
          }
        }
        fds.clear();
        fds.push_back(pollfd{wake.load()->read_end.fd(), POLLIN, 0});
        const bool accepting =
            socket != nullptr && !connections.full() && now >= accept_paused_until;
        if (accepting) fds.push_back(pollfd{socket->fd(), POLLIN, 0});
        const size_t first_connection = fds.size();
        connections.add_poll_fds(fds);

        std::int64_t timeout = next_tick - now;
        const std::int64_t deadline = connections.ms_until_next_deadline(now);
        if (deadline >= 0 && deadline < timeout) timeout = deadline;
        if (::poll(fds.data(), fds.size(), static_cast<int>(timeout)) < 0 && errno != EINTR) {
          log(LogLevel::kError, "control thread: poll failed; stopping");
          break;
        }
        if ((fds[0].revents & POLLIN) != 0) drain(wake.load()->read_end);
        // Whether or not the pipe woke it (a wake-up is lost while the pipe is being replaced).
        report_crash();
        act_on_signals();
        if (stop_requested.load(std::memory_order_acquire)) break;
        now = monotonic_ms();
        if (accepting && fds[1].revents != 0 && !connections.accept_from(socket->fd(), now)) {
          accept_paused_until = now + kTickMs;  // out of descriptors: retry later rather than spin
        }
        connections.service(fds, first_connection, now);
      } catch (const std::exception& e) {
        log(LogLevel::kWarn, "control thread: %s; its connections are dropped", e.what());
        connections.close_all();
        std::this_thread::sleep_for(std::chrono::milliseconds(kTickMs));
      }
    }
    connections.close_all();
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
    finished_changed.notify_all();
  }

  // The directory of the process's own its socket is in (make_fallback_socket_directory), removed
  // once the socket file is; empty when the socket is in a default or a chosen place.
  void remove_own_directory() const {
    if (!own_directory.empty()) ::rmdir(own_directory.c_str());
  }

  CommandHandler& handler;
  // Never freed, nor its write end closed: a signal handler may write to it at any time, even
  // after the thread stopped. Replaced by the thread only.
  std::atomic<WakePipe*> wake{nullptr};
  std::unique_ptr<ListeningSocket> socket;
  std::string own_directory;
  ClientConnections connections;
  std::atomic<bool> stop_requested{false};
  // The signal mask of the program's thread that started this one, which runs with every signal
  // blocked.
  sigset_t program_signal_mask{};
  std::mutex mutex;
  std::condition_variable finished_changed;
  bool finished = false;
};

namespace {

// DIRECTORY/PID.sock, or null with *error set.
std::unique_ptr<ListeningSocket> socket_in(const std::string& directory, std::string* error) {
  return ListeningSocket::open(directory + "/" + std::to_string(::getpid()) + ".sock", error);
}

// A socket in a new directory of this process's own, whose path goes to *own_directory; null with
// *error set.
std::unique_ptr<ListeningSocket> socket_in_own_directory(std::string* own_directory,
                                                         std::string* error) {
  const std::string directory = make_fallback_socket_directory(::geteuid(), error);
  if (directory.empty()) return nullptr;
  std::unique_ptr<ListeningSocket> socket = socket_in(directory, error);
  if (socket == nullptr) {
    ::rmdir(directory.c_str());
    return nullptr;
  }
  *own_directory = directory;
  return socket;
}

// VRAMSHIM_SOCKET's path, else the first default directory that works (the XDG one may be missing
// or unusable in containers and batch jobs; the CLI looks in every one of them). When
// /tmp/vramshim-UID is not this user's own (any user may make that name first), a directory of
// the process's own instead, whose path goes to *own_directory.
std::unique_ptr<ListeningSocket> open_control_socket(const Config& config,
                                                     std::string* own_directory) {
  std::string error;
  if (!config.socket_path.empty()) {
    std::unique_ptr<ListeningSocket> socket = ListeningSocket::open(config.socket_path, &error);
    if (socket == nullptr) log(LogLevel::kWarn, "control socket disabled: %s", error.c_str());
    return socket;
  }
  std::string refusals;
  for (const std::string& directory : socket_directories(config.runtime_dir, ::geteuid())) {
    std::unique_ptr<ListeningSocket> socket;
    error = prepare_private_directory(directory, ::geteuid());
    if (error.empty()) {
      socket = socket_in(directory, &error);
    } else if (directory == default_socket_directory("", ::geteuid())) {
      std::string own_error;
      socket = socket_in_own_directory(own_directory, &own_error);
      if (socket != nullptr) {
        log(LogLevel::kInfo, "%s; the control socket is in %s instead", error.c_str(),
            own_directory->c_str());
      } else {
        error += "; " + own_error;
      }
    }
    if (socket != nullptr) return socket;
    refusals += (refusals.empty() ? "" : "; ") + error;
  }
  log(LogLevel::kWarn, "control socket disabled: %s", refusals.c_str());
  return nullptr;
}

}  // namespace

bool ControlThread::start(const Config& config, CommandHandler& handler) {
  if (state_ != nullptr) return true;
  auto state = std::make_shared<State>(handler);
  auto wake = std::make_unique<WakePipe>();
  if (!create_wake_pipe(wake.get())) {
    log(LogLevel::kWarn, "cannot create a pipe; no control thread (no socket, no signals)");
    return false;
  }
  state->wake.store(wake.release());
  if (config.socket_enabled) state->socket = open_control_socket(config, &state->own_directory);

  // The thread starts with every signal blocked, so the application's signals go to its own
  // threads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &state->program_signal_mask);
  auto* thread_reference = new std::shared_ptr<State>(state);
  const int error = pthread_create(&thread_, nullptr, &ControlThread::run, thread_reference);
  pthread_sigmask(SIG_SETMASK, &state->program_signal_mask, nullptr);
  if (error != 0) {
    delete thread_reference;
    state->wake.load()->close();
    log(LogLevel::kWarn, "cannot start the control thread; no socket, no signals");
    return false;
  }
  state_ = std::move(state);
  // Read before the thread may replace it; the handlers are moved to a replacement with it.
  const support::OwnedDescriptor* wake_end = &state_->wake.load()->write_end;
  install_control_signals(config.flush_signal, config.report_signal, wake_end);
  if (config.report_enabled) install_fatal_signals(wake_end);
  if (state_->socket != nullptr) {
    log(LogLevel::kInfo, "control socket at %s", state_->socket->path().c_str());
  }
  return true;
}

void ControlThread::serve_crash_report_while_busy() {
  if (t_serving != nullptr) static_cast<State*>(t_serving)->report_crash();
}

void* ControlThread::run(void* reference) {
  const support::OwnThread own;
  std::unique_ptr<std::shared_ptr<State>> state(static_cast<std::shared_ptr<State>*>(reference));
  (*state)->loop();
  return nullptr;
}

void ControlThread::finish(int wait_ms) {
  // The handler may still fire; it then writes to a wake pipe that stays open for good (closing it
  // could let a signal write into a descriptor the application reuses), so the pipe is never
  // closed here.
  disconnect_control_signals();
  disconnect_fatal_signals();
  state_->stop_requested.store(true, std::memory_order_release);
  if (pthread_equal(pthread_self(), thread_)) {  // exit() on it: the program's threads all ended
    pthread_detach(thread_);
    return;
  }
  // A pipe the thread replaces meanwhile wakes nothing; the thread then sees the request within a
  // tick.
  wake(state_->wake.load()->write_end);
  bool finished;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    finished = state_->finished_changed.wait_for(lock, std::chrono::milliseconds(wait_ms),
                                                 [this] { return state_->finished; });
  }
  if (finished) {
    pthread_join(thread_, nullptr);
  } else {
    pthread_detach(thread_);
    log(LogLevel::kDebug, "control thread still busy at exit; leaving it");
  }
}

void ControlThread::stop(int wait_ms) {
  if (state_ == nullptr || stopped_at_exit_) return;
  finish(wait_ms);
  if (state_->socket != nullptr) state_->socket->remove_file();
  state_->remove_own_directory();
  state_.reset();  // closes the socket, once the thread no longer uses it
}

void ControlThread::stop_at_exit(int wait_ms) {
  if (state_ == nullptr || stopped_at_exit_) return;
  finish(wait_ms);
  if (state_->socket != nullptr) state_->socket->remove_file();
  state_->remove_own_directory();
  stopped_at_exit_ = true;
}

void ControlThread::reset_after_fork_in_child() {
  if (state_ == nullptr) return;
  disconnect_control_signals();
  disconnect_fatal_signals();
  // Only this thread exists in the child; the state may be mid-update by the parent's control
  // thread at the time of fork, so it is abandoned (leaked) after closing what it holds, never
  // destroyed.
  state_->wake.load()->close();
  if (state_->socket != nullptr) state_->socket->abandon();
  new std::shared_ptr<State>(std::move(state_));
  thread_ = {};
}

std::string ControlThread::socket_path() const {
  if (state_ == nullptr || state_->socket == nullptr) return {};
  return state_->socket->path();
}

}  // namespace vramshim::control
