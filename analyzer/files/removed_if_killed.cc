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

// SIGXFSZ, raised by a write past the limit on a file's size (ulimit -f), is ignored rather than
// handled: the write then fails with EFBIG, and the writer reports it and removes the file as for
// any failed write (the signal ended the CLI, leaving NAME.tmp.* behind).
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

// The files named, where the handler can read them without taking a lock or allocating: a slot's
// path is written before it is marked live, and not again until it is marked free.
struct Slot {
  std::atomic<bool> live{false};
  char path[PATH_MAX];
};
Slot slots[8];

std::mutex registry_mutex;  // guards claiming slots, live_files and signals_taken
size_t live_files = 0;
bool signals_taken[std::size(kSignals)] = {};  // which of kSignals have our handler

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
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0 ||
        current.sa_handler != SIG_DFL) {
      continue;
    }
    struct sigaction handler {};
    handler.sa_handler = kSignals[i] == SIGXFSZ ? SIG_IGN : &remove_files_and_die;
    handler.sa_flags = SA_RESETHAND;
    sigemptyset(&handler.sa_mask);
    signals_taken[i] = ::sigaction(kSignals[i], &handler, nullptr) == 0;
  }
}

void give_back_signals() {
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (!signals_taken[i]) continue;
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(kSignals[i], &default_action, nullptr);
    signals_taken[i] = false;
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
