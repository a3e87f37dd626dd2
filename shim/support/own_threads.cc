#include "shim/support/own_threads.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "shim/support/owned_descriptor.h"

namespace vramshim::support {
namespace {

std::atomic<int> g_own_threads{0};
// Bumped by each of the shim's threads as it starts and as it ends.
std::atomic<uint64_t> g_own_thread_changes{0};

}  // namespace

int start_own_thread(void* (*run)(void*), void* argument) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  sigset_t blocked, previous;
  sigfillset(&blocked);
  for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) {
    sigdelset(&blocked, fault);
  }
  pthread_sigmask(SIG_SETMASK, &blocked, &previous);
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
  // /proc/self/stat, kept open at a high number: opened and closed at each look, it took the lowest
  // free number, one a program closing and reopening descriptors could take meanwhile, and the
  // shim then read and closed the program's file (reused_descriptors' files moved and closed).
  // The control thread's alone.
  static OwnedDescriptor stat;
  if (!stat.empty() && !stat.still_ours()) stat.forget();  // the number is the program's now
  if (stat.empty()) stat = OwnedDescriptor::adopt(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
  if (stat.empty()) return false;
  // A thread of the shim's that starts or ends while /proc is read makes the counts disagree: the
  // answer is false until the next look.
  const uint64_t changes = g_own_thread_changes.load();
  const int own = g_own_threads.load();
  char buffer[1024];
  const ssize_t read = ::pread(stat.fd(), buffer, sizeof(buffer) - 1, 0);
  if (read <= 0 || g_own_thread_changes.load() != changes) return false;
  buffer[read] = '\0';
  // After the command's closing parenthesis (the command may hold spaces and parentheses): the
  // state (field 3), the main thread's, Z once it ended with others left; num_threads (field 20),
  // which counts a zombie main thread until the process ends.
  const char* fields = std::strrchr(buffer, ')');
  if (fields == nullptr || fields[1] != ' ') return false;
  fields += 2;
  const char state = fields[0];
  for (int field = 3; field < 20; ++field) {
    fields = std::strchr(fields, ' ');
    if (fields == nullptr) return false;
    ++fields;
  }
  return state == 'Z' && std::strtol(fields, nullptr, 10) == own + 1;
}

}  // namespace vramshim::support
