// Runs find_other_processes in a process of its own, with the simulated driver loaded and
// initialized as in a shimmed process, and prints what it found, for the tests that choose its
// environment (LD_LIBRARY_PATH, FAKE_NVML_*):
//   other_processes_probe DEVICE CALLS BUS_ID|- DIRECTORY…
// For each of CALLS calls: "call N ELAPSED_MS", then one line per process,
//   "process PID VRAMSHIM NVML COMMAND" (VRAMSHIM: IN_USE/CACHED or -; NVML: used bytes, ? when
//   NVML did not say, or -), and one line per note, "note TEXT". Last, "nvml_initialized N" (the
//   NVML double's nvmlInit_v2 calls not shut down) or "nvml_initialized -" when it is not loaded.
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shim/oom/other_processes.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: other_processes_probe DEVICE CALLS BUS_ID|- DIRECTORY…\n");
    return 2;
  }
  if (cuInit(0) != CUDA_SUCCESS) return 3;
  vramshim::oom::OtherProcessesQuery query;
  query.device = std::atoi(argv[1]);
  const int calls = std::atoi(argv[2]);
  if (std::string(argv[3]) != "-") query.pci_bus_id = argv[3];
  for (int i = 4; i < argc; ++i) query.socket_directories.push_back(argv[i]);

  for (int call = 1; call <= calls; ++call) {
    const auto started = std::chrono::steady_clock::now();
    const vramshim::oom::OtherProcesses found = vramshim::oom::find_other_processes(query);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - started;
    std::printf("call %d %.1f\n", call, elapsed.count());
    for (const vramshim::oom::OtherProcess& process : found.processes) {
      const std::string vramshim =
          process.from_vramshim
              ? std::to_string(process.in_use_bytes) + "/" + std::to_string(process.cached_bytes)
              : "-";
      const std::string nvml = !process.from_nvml        ? "-"
                               : process.nvml_used_bytes ? std::to_string(*process.nvml_used_bytes)
                                                         : "?";
      std::printf("process %d %s %s %s\n", static_cast<int>(process.pid), vramshim.c_str(),
                  nvml.c_str(), process.command.c_str());
    }
    for (const std::string& note : found.notes) std::printf("note %s\n", note.c_str());
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto* initialized =
      nvml != nullptr ? reinterpret_cast<int (*)()>(dlsym(nvml, "fake_nvml_initialized")) : nullptr;
  if (initialized != nullptr) {
    std::printf("nvml_initialized %d\n", initialized());
  } else {
    std::printf("nvml_initialized -\n");
  }
  std::fflush(stdout);
  return 0;
}
