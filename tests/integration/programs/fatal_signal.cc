// Starts the shim (one allocation), then dies of a fatal signal. Under the shim it must die exactly
// as it would without it. How, by the first argument:
//   segv, bus, abort, ill, fpe    a null-pointer write, raise(SIGBUS), abort(), a trap instruction,
//                                 an integer division by zero, on the main thread
//   thread-segv                   a null-pointer write on a second thread
//   own-first, own-later          the program's own SIGSEGV handler (prints "own handler ran"),
//                                 installed before the shim starts or after, then a null write
//   own-later-chaining            as own-later, and the handler then calls the one it replaced
//   stuck                         a null write while holding the loader's lock (inside a
//                                 dl_iterate_phdr callback), which the report needs
//   second-crash                  stuck on a second thread, then raise(SIGBUS) on the main thread
//   fork-child-segv               a fork child writes through null ("child_signal=N"), then the
//                                 parent does
// The thread about to crash prints "crashing thread=TID"; own-first also prints each fatal
// signal's disposition ("SIGSEGV=own SIGBUS=other …": default, own or other).
#include <cuda.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "tests/integration/programs/primary_context.h"

namespace {

void announce_crash() {
  std::printf("crashing thread=%d\n", static_cast<int>(gettid()));
  std::fflush(stdout);
}

void write_through_null() {
  // Both volatile: the compiler can neither drop the write nor turn it into a trap.
  volatile int* volatile null_pointer = nullptr;
  *null_pointer = 1;
}

void own_handler(int) {
  static const char message[] = "own handler ran\n";
  ssize_t ignored = write(STDOUT_FILENO, message, sizeof(message) - 1);
  (void)ignored;
  signal(SIGSEGV, SIG_DFL);  // returning retries the write, which the default action then ends
}

struct sigaction g_replaced;

void chaining_handler(int signal_number, siginfo_t* info, void* context) {
  own_handler(signal_number);
  if ((g_replaced.sa_flags & SA_SIGINFO) != 0) {
    g_replaced.sa_sigaction(signal_number, info, context);
  } else if (g_replaced.sa_handler != SIG_DFL && g_replaced.sa_handler != SIG_IGN) {
    g_replaced.sa_handler(signal_number);
  }
}

void install_own_handler() { signal(SIGSEGV, &own_handler); }

void install_chaining_handler() {
  struct sigaction action = {};
  action.sa_sigaction = &chaining_handler;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_replaced);
}

void print_dispositions() {
  const std::pair<int, const char*> signals[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"},
      {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
  };
  for (const auto& [number, name] : signals) {
    struct sigaction current;
    sigaction(number, nullptr, &current);
    const bool is_default = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
    const bool is_own = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == &own_handler;
    std::printf("%s=%s ", name, is_default ? "default" : is_own ? "own" : "other");
  }
  std::printf("\n");
}

std::atomic<bool> g_crashing_holding_the_loader_lock{false};

// Crashes inside a dl_iterate_phdr callback, which runs with the loader's lock held.
void crash_holding_the_loader_lock() {
  dl_iterate_phdr(
      [](dl_phdr_info*, size_t, void*) {
        announce_crash();
        g_crashing_holding_the_loader_lock = true;
        write_through_null();
        return 1;
      },
      nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string how = argc > 1 ? argv[1] : "segv";
  if (how == "own-first") install_own_handler();
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  std::printf("allocated\n");
  std::fflush(stdout);

  if (how == "own-first") print_dispositions();
  if (how == "own-later") install_own_handler();
  if (how == "own-later-chaining") install_chaining_handler();
  if (how == "bus") {
    announce_crash();
    raise(SIGBUS);
  } else if (how == "abort") {
    announce_crash();
    std::abort();
  } else if (how == "ill") {
    announce_crash();
    __builtin_trap();
  } else if (how == "fpe") {
    announce_crash();
    volatile int dividend = 1, divisor = 0;  // volatile: a real division instruction
    volatile int quotient = dividend / divisor;
    (void)quotient;
  } else if (how == "thread-segv") {
    std::thread([] {
      announce_crash();
      write_through_null();
    }).join();
  } else if (how == "stuck") {
    crash_holding_the_loader_lock();
  } else if (how == "second-crash") {
    std::thread(&crash_holding_the_loader_lock).detach();
    while (!g_crashing_holding_the_loader_lock) usleep(1000);
    usleep(300 * 1000);  // the first crash is waiting for its report by now
    announce_crash();
    raise(SIGBUS);
  } else if (how == "fork-child-segv") {
    const pid_t child = fork();
    if (child == 0) {
      write_through_null();
      _exit(0);
    }
    int status = 0;
    CHECK_TRUE(waitpid(child, &status, 0) == child);
    std::printf("child_signal=%d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    announce_crash();
    write_through_null();
  } else {
    announce_crash();
    write_through_null();
  }
  return 0;
}
