#include "analyzer/files/removed_if_killed.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>

namespace vramshim::analyzer {
namespace {

// The signals whose default action ends the process, but a crash's (SIGSEGV and the other faults,
// SIGABRT): Ctrl-C, kill, a closed terminal, Ctrl-\, timers and CPU limits (timeout -s, ulimit -t),
// SIGUSR1/2, a broken pipe, the real-time ones. SIGXFSZ, raised by a write past the limit on a
// file's size (ulimit -f), is ignored rather than handled: the write then fails with EFBIG, and the
// writer reports it and removes the file as for any failed write.
bool ends_the_process_without_a_crash(int signal_number) {
  switch (signal_number) {
    case SIGHUP:
    case SIGINT:
    case SIGQUIT:
    case SIGUSR1:
    case SIGUSR2:
    case SIGPIPE:
    case SIGALRM:
    case SIGTERM:
    case SIGSTKFLT:
    case SIGXCPU:
    case SIGXFSZ:
    case SIGVTALRM:
    case SIGPROF:
    case SIGPOLL:
    case SIGPWR:
      return true;
    default:
      return signal_number >= SIGRTMIN && signal_number <= SIGRTMAX;
  }
}

// The files named, where the handler can read them without taking a lock or allocating: a slot's
// path is written before it is marked live, and not again until it is marked free.
struct Slot {
  std::atomic<bool> live{false};
  char path[PATH_MAX];
};
Slot slots[8];

std::mutex registry_mutex;  // guards claiming slots, live_files and signals_taken
size_t live_files = 0;
bool signals_taken[NSIG] = {};  // which signals have our handler

// Runs with the disposition reset to the default (SA_RESETHAND) and the signal blocked: raised
// again, it ends the process as soon as the handler returns.
void remove_files_and_die(int signal_number) {
  for (Slot& slot : slots) {
    if (slot.live.load(std::memory_order_acquire)) ::unlink(slot.path);
  }
  ::raise(signal_number);
}

// Where a signal's disposition is the default (it would end the process), the handler takes it.
void take_signals() {
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (!ends_the_process_without_a_crash(signal_number)) continue;
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0 ||
        (current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
      continue;
    }
    struct sigaction handler {};
    handler.sa_handler = signal_number == SIGXFSZ ? SIG_IGN : &remove_files_and_die;
    handler.sa_flags = SA_RESETHAND;
    sigemptyset(&handler.sa_mask);
    signals_taken[signal_number] = ::sigaction(signal_number, &handler, nullptr) == 0;
  }
}

void give_back_signals() {
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (!signals_taken[signal_number]) continue;
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(signal_number, &default_action, nullptr);
    signals_taken[signal_number] = false;
  }
}

}  // namespace

RemovedIfKilled::RemovedIfKilled(const std::string& path) {
  if (path.size() >= PATH_MAX) {
    throw std::runtime_error(path + ": cannot write: " + std::strerror(ENAMETOOLONG));
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  slot_ = 0;
  while (slot_ < std::size(slots) && slots[slot_].live.load(std::memory_order_relaxed)) ++slot_;
  if (slot_ == std::size(slots)) {
    throw std::runtime_error(path + ": cannot write: " + std::to_string(std::size(slots)) +
                             " other files are being written");
  }
  // The handler first, then the name: a signal in between finds nothing to remove, and nothing
  // has been created yet.
  if (live_files++ == 0) take_signals();
  std::memcpy(slots[slot_].path, path.c_str(), path.size() + 1);
  slots[slot_].live.store(true, std::memory_order_release);
}

RemovedIfKilled::~RemovedIfKilled() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  slots[slot_].live.store(false, std::memory_order_release);
  if (--live_files == 0) give_back_signals();
}

}  // namespace vramshim::analyzer
