// The threads the shim runs in the program's process (the control thread, the exit report's, the
// helpers), counted, so that the control thread can tell when only they are left: a program whose
// main thread ended with pthread_exit() ends, as glibc ends it, when its last thread does, and the
// shim's threads, which never end on their own and block every signal, would otherwise keep it
// running for good (a SIGTERM pending with no thread to take it; only SIGKILL ended it).
#pragma once

namespace vramshim::support {

// Held by each of the shim's threads for as long as it runs (the first thing its function makes).
class OwnThread {
 public:
  OwnThread();
  ~OwnThread();
  OwnThread(const OwnThread&) = delete;
  OwnThread& operator=(const OwnThread&) = delete;
};

// Starts `run(argument)` on a detached thread with every signal blocked (the program's signals must
// never be delivered to the shim's threads) but the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGTRAP, SIGSYS): one the kernel raises on a thread that blocks it ends the process at once,
// without the crash report (the deep flush's thread runs the frameworks' own code).
// pthread_create's error, 0 when started.
int start_own_thread(void* (*run)(void*), void* argument);

// Whether the program's main thread has ended (a zombie, as pthread_exit leaves it) and no thread
// but the shim's runs: what glibc's last thread would end with exit(0). Reads /proc (a few system
// calls); false when it cannot tell.
bool only_own_threads_remain();

}  // namespace vramshim::support
