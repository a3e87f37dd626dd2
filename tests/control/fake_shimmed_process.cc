// Serves the control socket the way a process under the shim does, with FakeHandler behind it,
// until SIGTERM or SIGINT. Reads its configuration from the VRAMSHIM_* environment like the shim.
// Prints "ready" on stdout once the socket is listening.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "shim/control/config.h"
#include "shim/control/control_thread.h"
#include "tests/control/fake_handler.h"

int main() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  vramshim::testing::FakeHandler handler;
  vramshim::control::ControlThread control;
  if (!control.start(vramshim::control::load_config_from_environment(), handler)) return 1;
  std::printf("ready %s\n", control.socket_path().c_str());
  std::fflush(stdout);

  int received;
  sigwait(&stop_signals, &received);
  control.stop();
  return 0;
}
