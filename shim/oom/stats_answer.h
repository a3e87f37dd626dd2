// Reads one device's figures out of another shim's "stats" answer (README.md, "Control socket"):
// `{"ok":true,"devices":[{"device":0,"pci_bus_id":"0000:18:00.0","in_use_bytes":N,"cached_bytes":N,…},
// …]}`. The shim links no
// JSON library; this extracts the few numbers it needs and rejects what it cannot read.
#pragma once

#include <cstdint>
#include <string_view>

namespace vramshim::oom {

struct ShimDeviceFigures {
  std::uint64_t in_use_bytes = 0;
  std::uint64_t cached_bytes = 0;
};

struct StatsReading {
  enum class Kind {
    kFigures,       // `figures` are the device's
    kNoSuchDevice,  // a good answer without that device: the process does not use it
    kRefused,       // "ok":false
    kUnreadable,    // not such an answer
  };
  Kind kind = Kind::kUnreadable;
  ShimDeviceFigures figures;
};

// What the answer line `answer` says of the device whose PCI bus id is `pci_bus_id`, this
// process's CUDA device `device`. Ordinals differ between processes (CUDA_VISIBLE_DEVICES): a
// device entry is matched by its bus id where both sides have one, by its ordinal only where either
// lacks it (a shim older than the bus id, a driver that gave none).
StatsReading read_stats_answer(std::string_view answer, int device, std::string_view pci_bus_id);

}  // namespace vramshim::oom
