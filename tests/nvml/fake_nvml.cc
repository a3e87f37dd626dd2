// The NVML test double (README.md): NVML's entry points that the shim calls, answering from the
// environment as it is at nvmlInit_v2.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "shim/oom/nvml_abi.h"

namespace nvml = vramshim::oom::nvml;

struct vramshim::oom::nvml::DeviceOpaque {
  unsigned int domain, bus, device, function;
};

namespace {

constexpr char kDefaultBusId[] = "0000:18:00.0";  // the simulated driver's device 0

struct Process {
  unsigned int pid;
  unsigned long long used_bytes;
};

struct State {
  std::mutex mutex;
  int initialized = 0;  // nvmlInit_v2 calls not yet shut down
  nvml::DeviceOpaque device{};
  std::vector<Process> processes;
};

State& state() {
  static State* made = new State;  // never destroyed: a helper thread may call in at exit
  return *made;
}

const char* environment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// "domain:bus:device.function", "domain:bus:device" or "bus:device.function", in hexadecimal.
bool parse_bus_id(const char* text, nvml::DeviceOpaque* location) {
  unsigned int fields[4] = {0, 0, 0, 0};
  const bool has_domain = std::strchr(text, ':') != std::strrchr(text, ':');
  unsigned int* first = has_domain ? fields : fields + 1;
  const int read = std::sscanf(text, has_domain ? "%x:%x:%x.%x" : "%x:%x.%x", &first[0], &first[1],
                               &first[2], &first[3]);
  if (read < 3) return false;
  *location = {fields[0], fields[1], fields[2], fields[3]};
  return true;
}

// FAKE_NVML_PROCESSES: "pid:bytes,pid:bytes"; "-" for bytes is NVML_VALUE_NOT_AVAILABLE.
std::vector<Process> parse_processes(const char* text) {
  std::vector<Process> processes;
  std::string list(text);
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string entry = list.substr(at, end - at);
    at = end + 1;
    unsigned int pid = 0;
    unsigned long long bytes = 0;
    if (std::sscanf(entry.c_str(), "%u:%llu", &pid, &bytes) == 2) {
      processes.push_back({pid, bytes});
    } else if (std::sscanf(entry.c_str(), "%u:-", &pid) == 1 && entry.back() == '-') {
      processes.push_back({pid, nvml::kValueNotAvailable});
    } else {
      std::fprintf(stderr, "fake NVML: ignoring \"%s\" in FAKE_NVML_PROCESSES\n", entry.c_str());
    }
  }
  return processes;
}

bool same_location(const nvml::DeviceOpaque& a, const nvml::DeviceOpaque& b) {
  return a.domain == b.domain && a.bus == b.bus && a.device == b.device && a.function == b.function;
}

}  // namespace

extern "C" {

nvml::Return nvmlInit_v2() {
  const int delay_ms = std::atoi(environment("FAKE_NVML_DELAY_MS", "0"));
  nvml::DeviceOpaque device{};
  if (!parse_bus_id(environment("FAKE_NVML_BUS_ID", kDefaultBusId), &device)) {
    std::fprintf(stderr, "fake NVML: FAKE_NVML_BUS_ID is not a PCI bus id\n");
  }
  std::vector<Process> processes = parse_processes(environment("FAKE_NVML_PROCESSES", ""));
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.device = device;
  s.processes = std::move(processes);
  ++s.initialized;
  return nvml::kSuccess;
}

nvml::Return nvmlShutdown() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized == 0) return nvml::kErrorUninitialized;
  --s.initialized;
  return nvml::kSuccess;
}

const char* nvmlErrorString(nvml::Return result) {
  switch (result) {
    case nvml::kSuccess:
      return "Success";
    case nvml::kErrorUninitialized:
      return "Uninitialized";
    case nvml::kErrorInvalidArgument:
      return "Invalid Argument";
    case nvml::kErrorNotFound:
      return "Not Found";
    case nvml::kErrorInsufficientSize:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}

nvml::Return nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvml::Device* device) {
  if (pciBusId == nullptr || device == nullptr) return nvml::kErrorInvalidArgument;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized == 0) return nvml::kErrorUninitialized;
  nvml::DeviceOpaque asked{};
  if (!parse_bus_id(pciBusId, &asked)) return nvml::kErrorInvalidArgument;
  if (!same_location(asked, s.device)) return nvml::kErrorNotFound;
  *device = &s.device;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device device, unsigned int* infoCount,
                                                     nvml::ProcessInfo* infos) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized == 0) return nvml::kErrorUninitialized;
  if (device != &s.device || infoCount == nullptr) return nvml::kErrorInvalidArgument;
  const auto listed = static_cast<unsigned int>(s.processes.size());
  if (*infoCount < listed) {
    *infoCount = listed;
    return nvml::kErrorInsufficientSize;
  }
  if (listed > 0 && infos == nullptr) return nvml::kErrorInvalidArgument;
  for (unsigned int i = 0; i < listed; ++i) {
    infos[i] = {s.processes[i].pid, s.processes[i].used_bytes, 0xFFFFFFFFu, 0xFFFFFFFFu};
  }
  *infoCount = listed;
  return nvml::kSuccess;
}

// Test control: nvmlInit_v2 calls not yet shut down.
int fake_nvml_initialized() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.initialized;
}

}  // extern "C"

// The definitions have the signatures the shim calls them by.
static_assert(std::is_same_v<decltype(&nvmlInit_v2), nvml::InitV2Fn>);
static_assert(std::is_same_v<decltype(&nvmlShutdown), nvml::ShutdownFn>);
static_assert(std::is_same_v<decltype(&nvmlErrorString), nvml::ErrorStringFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetHandleByPciBusId_v2),
                             nvml::DeviceGetHandleByPciBusIdV2Fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetComputeRunningProcesses_v3),
                             nvml::DeviceGetComputeRunningProcessesV3Fn>);
