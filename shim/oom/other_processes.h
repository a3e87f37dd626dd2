// Every other process on a GPU, for the explanation of an allocation the driver refused: the
// processes of this user running under vramshim on this node (asked on their control sockets) and,
// where the NVIDIA management library is installed, every process NVML lists on the device. Meant
// for the control thread, never for the failing call: it takes up to `total_timeout`, and never
// longer, whatever another process or NVML does.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "shim/oom/out_of_memory_facts.h"

namespace vramshim::oom {

struct OtherProcessesQuery {
  // The CUDA device ordinal in this process.
  int device = 0;
  // The device's PCI bus id ("0000:18:00.0"); empty: asked of the loaded driver. NVML is asked by
  // it, and other shims' devices are matched on it: ordinals differ between processes under
  // CUDA_VISIBLE_DEVICES. A shim whose answer has no bus id is matched on the ordinal.
  std::string pci_bus_id;
  // Where the other shims' sockets are: control::socket_directories(config.runtime_dir, geteuid()).
  std::vector<std::string> socket_directories;
  // All sockets are asked at once; each answer is awaited at most this long.
  std::chrono::milliseconds socket_timeout{100};
  // NVML runs on a helper thread, beside the sockets; it is awaited at most this long.
  std::chrono::milliseconds nvml_timeout{200};
  // The whole call, command lines included.
  std::chrono::milliseconds total_timeout{300};
};

// What it found, for OutOfMemoryFacts::other_processes and ::unasked.
struct OtherProcesses {
  // Ordered by pid; inside a PID namespace, NVML's processes (pids of the host) come last. Source
  // "vramshim": its shim answered on its control socket with in_use_bytes and cached_bytes of the
  // device, and used_bytes is NVML's figure where NVML lists it too. Source "nvml": listed by NVML
  // alone, with used_bytes (null where NVML may not say). The command as `ps` shows it
  // (proc_info.h), empty when unknown.
  std::vector<OtherProcess> processes;
  // NVML's figure for this very process, when NVML lists it.
  std::optional<uint64_t> own_used_bytes;
  // One line for each thing that could not be asked or answered, and why: "no NVML: …", "NVML
  // did not answer within 200 ms", "pid 123 (…/123.sock) did not answer within 100 ms", "… has
  // group or other permissions; its sockets are not asked".
  std::vector<std::string> unasked;
};

OtherProcesses find_other_processes(const OtherProcessesQuery& query);

}  // namespace vramshim::oom
