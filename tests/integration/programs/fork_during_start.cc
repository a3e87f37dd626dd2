// A fork while another thread starts the shim's runtime (at the process's first hooked call): the
// child must not wait for the start lock the parent's starting thread held at the fork. Each child
// makes one hooked call and exits; a child still running 2 s after the start counts as hung (and is
// killed).
// Prints the forks made while the runtime started and the children that hung.
#include <cuda.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/integration/programs/program_support.h"

namespace {

// Whether the child `pid` ended by `deadline` (else it is killed).
bool ended_by(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  do {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (std::chrono::steady_clock::now() < deadline);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return false;
}

}  // namespace

int main() {
  CHECK_CU(cuInit(0));  // not hooked: the runtime has not started
  std::atomic<bool> go{false};
  std::atomic<bool> started{false};
  std::thread starter([&] {
    while (!go.load()) {
    }
    CUcontext context;
    CHECK_CU(cuDevicePrimaryCtxRetain(&context, 0));  // the first hooked call starts the runtime
    started = true;
  });
  std::vector<pid_t> children;
  go = true;
  // As many forks as fit in the start (at least one); the children are waited for afterwards.
  while ((!started.load() || children.empty()) && children.size() < 200) {
    const pid_t pid = fork();
    CHECK_TRUE(pid >= 0);
    if (pid == 0) {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      cuMemGetInfo(&free_bytes, &total_bytes);  // hooked; the driver refuses it after a fork
      _exit(0);
    }
    children.push_back(pid);
  }
  starter.join();
  const int forks = static_cast<int>(children.size());
  int hung = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t pid : children) hung += ended_by(pid, deadline) ? 0 : 1;
  std::printf("forks=%d hung=%d\n", forks, hung);
  return 0;
}
