// Counts the SIGHUPs it receives, for the tests of how `vramshim run` passes signals on: writes
// "ready PID" into the file named by its argument once it waits for them, then a line "hup" for
// each one, and exits 0 at SIGTERM. Other signals have their default effect.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sigset_t awaited;
  sigemptyset(&awaited);
  sigaddset(&awaited, SIGHUP);
  sigaddset(&awaited, SIGTERM);
  sigprocmask(SIG_BLOCK, &awaited, nullptr);
  const int log = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return 1;
  const std::string ready = "ready " + std::to_string(getpid()) + "\n";
  if (write(log, ready.data(), ready.size()) < 0) return 1;
  for (;;) {
    const int signal_number = sigwaitinfo(&awaited, nullptr);
    if (signal_number == SIGTERM) return 0;
    if (signal_number == SIGHUP && write(log, "hup\n", 4) < 0) return 1;
  }
}
