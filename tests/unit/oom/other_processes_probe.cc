// Runs find_other_processes in a process of its own, with the simulated driver loaded and
// initialized as in a shimmed process, and prints what it found, for the tests that choose its
// environment (LD_LIBRARY_PATH, FAKE_NVML_*):
//   other_processes_probe DEVICE CALLS BUS_ID|- DIRECTORY…
// For each of CALLS calls: "call N ELAPSED_MS", then one line per process,
//   "process PID SOURCE IN_USE CACHED USED COMMAND" (- for a figure not known), and one line per
//   note, "note TEXT". Last, "nvml_initialized N" (the NVML double's nvmlInit_v2 calls not shut
//   down) or "nvml_initialized -" when it is not loaded.
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "shim/oom/other_processes.h"

namespace {

std::string figure(const std::optional<std::uint64_t>& bytes) {
  return bytes ? std::to_string(*bytes) : "-";
}

}  // namespace

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
      std::printf("process %d %s %s %s %s %s\n", process.pid, process.source.c_str(),
                  figure(process.in_use_bytes).c_str(), figure(process.cached_bytes).c_str(),
                  figure(process.used_bytes).c_str(), process.command.c_str());
    }
    for (const std::string& note : found.unasked) std::printf("note %s\n", note.c_str());
    std::printf("own %s\n", figure(found.own_used_bytes).c_str());
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
