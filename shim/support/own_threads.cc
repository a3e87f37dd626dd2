#include "shim/support/own_threads.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vramshim::support {
namespace {

std::atomic<int> g_own_threads{0};
// Bumped by each of the shim's threads as it starts and as it ends.
std::atomic<uint64_t> g_own_thread_changes{0};

// A /proc stat file into `buffer`, and where the fields after its command's closing parenthesis
// begin (the command may hold spaces and parentheses); null when it cannot be read.
const char* read_stat(const char* path, char* buffer, size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  const ssize_t read = ::read(fd, buffer, size - 1);
  ::close(fd);
  if (read <= 0) return nullptr;
  buffer[read] = '\0';
  const char* end_of_command = std::strrchr(buffer, ')');
  return end_of_command != nullptr && end_of_command[1] == ' ' ? end_of_command + 2 : nullptr;
}

}  // namespace

int start_own_thread(void* (*run)(void*), void* argument) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_t thread;
  const int error = pthread_create(&thread, &attributes, run, argument);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attributes);
  return error;
}

OwnThread::OwnThread() {
  g_own_threads.fetch_add(1);
  g_own_thread_changes.fetch_add(1);
}

OwnThread::~OwnThread() {
  g_own_threads.fetch_sub(1);
  g_own_thread_changes.fetch_add(1);
}

bool only_own_threads_remain() {
  // A thread of the shim's that starts or ends while /proc is read makes the counts disagree: the
  // answer is false until the next look.
  const uint64_t changes = g_own_thread_changes.load();
  const int own = g_own_threads.load();
  char buffer[1024];
  // Fields from the state on: state (3), ..., num_threads (20).
  const char* fields = read_stat("/proc/self/stat", buffer, sizeof(buffer));
  if (fields == nullptr || g_own_thread_changes.load() != changes) return false;
  // The process's number as this /proc knows it (in a pid namespace with the parent's /proc,
  // getpid() is another number).
  const long process = std::strtol(buffer, nullptr, 10);
  long threads = 0;
  for (int field = 3;; ++field) {
    if (field == 20) {
      threads = std::strtol(fields, nullptr, 10);
      break;
    }
    fields = std::strchr(fields, ' ');
    if (fields == nullptr) return false;
    ++fields;
  }
  // The main thread stays among them as a zombie until the process ends.
  if (process <= 0 || threads != own + 1) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", process);
  const char* main_fields = read_stat(path, buffer, sizeof(buffer));
  return main_fields != nullptr && main_fields[0] == 'Z';
}

}  // namespace vramshim::support
