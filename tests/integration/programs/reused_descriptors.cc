// A program that closes the descriptors the shim opened at its first CUDA call (as
// os.closerange or a daemon's close loop would; libunwind's among them) and puts files of its own
// at those numbers with dup2. Then it idles for a second, allocates from a frame without unwind
// information (where libunwind tests addresses through its pipe), asks for a flush by the flush
// signal and another over the control socket (VRAMSHIM_SOCKET), and forks a child that reads its
// files. Prints
//   descriptors=N cpu_ms=M signal_flush=0|1 socket_flush=0|1 child_ok=0|1 intact=0|1 [broken=...]
// intact: each of its files still open at its number, at offset 0, with its content; broken names
// each that is not and how (closed, moved, changed). argv[1]: a directory for its files, whose
// content the caller checks again after the exit.
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/without_unwind_info.h"
#include "tests/support/open_descriptors.h"

namespace {

using vramshim::testing::open_descriptors;

constexpr char kContent[] = "the program's own data, which nobody else reads or writes\n";

// What is wrong with `fd`, which should be open, at offset 0, and hold kContent: "" when nothing.
std::string damage(int fd) {
  char buffer[sizeof(kContent)] = {};
  if (fcntl(fd, F_GETFD) == -1) return "closed";
  const off_t offset = lseek(fd, 0, SEEK_CUR);
  if (offset != 0) return "moved to " + std::to_string(offset);
  if (pread(fd, buffer, sizeof(buffer), 0) != static_cast<ssize_t>(sizeof(kContent) - 1) ||
      std::string(buffer) != kContent) {
    return "changed";
  }
  return "";
}
bool intact(int fd) { return damage(fd).empty(); }

double cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

// Allocates and frees 4 KiB (the pool keeps it), asks for a flush with `flush`, and says whether
// the driver then holds nothing.
template <typename Flush>
bool flushed(const FakeDriverState& fake, Flush&& flush) {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  CHECK_CU(cuMemFree(ptr));
  flush();
  for (int i = 0; i < 100 && fake.live_bytes(0) != 0; ++i) usleep(10 * 1000);
  return fake.live_bytes(0) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::set<int> before = open_descriptors();
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  CHECK_CU(cuMemFree(ptr));
  // The control thread sets its descriptors up beside the program: their numbers are its own once
  // its socket file appears (bound, listening and renamed into place). Before, a loaded machine
  // showed the program a socket between its creation and its move to a high number.
  const char* socket_path = std::getenv("VRAMSHIM_SOCKET");
  for (int i = 0; i < 500 && socket_path != nullptr && access(socket_path, F_OK) != 0; ++i) {
    usleep(10 * 1000);
  }
  std::vector<int> shims;
  for (const int fd : open_descriptors()) {
    if (before.count(fd) == 0) shims.push_back(fd);
  }
  for (const int fd : shims) close(fd);
  for (const int fd : shims) {
    const std::string path = std::string(argv[1]) + "/file" + std::to_string(fd);
    const int file = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (file < 0 || write(file, kContent, sizeof(kContent) - 1) < 0 ||
        lseek(file, 0, SEEK_SET) != 0 || dup2(file, fd) != fd) {
      return 3;
    }
    if (file != fd) close(file);
  }

  const double cpu_before = cpu_ms();
  sleep(1);
  const double idle_cpu = cpu_ms() - cpu_before;
  for (int i = 0; i < 16; ++i) {
    CUdeviceptr block = 0;
    CHECK_CU(static_cast<CUresult>(call_without_unwind_info(
        [](unsigned long long* ptr, size_t bytes) -> int { return cuMemAlloc(ptr, bytes); }, &block,
        4096 * (i + 1))));
    CHECK_CU(cuMemFree(block));
  }
  const bool signal_flush = flushed(fake, [] { kill(getpid(), SIGUSR1); });
  const bool socket_flush = flushed(fake, [] { control_request("flush"); });

  const pid_t child = fork();
  if (child == 0) {
    for (const int fd : shims) {
      if (!intact(fd)) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  const bool child_ok =
      waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string broken;
  for (const int fd : shims) {
    const std::string what = damage(fd);
    if (!what.empty()) broken += " " + std::to_string(fd) + ":" + what;
  }
  std::printf("descriptors=%zu cpu_ms=%.0f signal_flush=%d socket_flush=%d child_ok=%d intact=%d",
              shims.size(), idle_cpu, signal_flush ? 1 : 0, socket_flush ? 1 : 0, child_ok ? 1 : 0,
              broken.empty() ? 1 : 0);
  if (!broken.empty()) std::printf(" broken=%s", broken.c_str() + 1);
  std::printf("\n");
  return 0;
}
