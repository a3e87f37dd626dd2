#include "analyzer/render/prometheus.h"

#include <map>
#include <vector>

namespace vramshim::cli {
namespace {

struct Family {
  bool counter;
  const char* help;
};

// Known figures; any other numeric figure is exported as a gauge with a generic help text.
const std::map<std::string, Family>& known_families() {
  static const std::map<std::string, Family> families = {
      {"in_use_bytes", {false, "GPU memory the application holds, in bytes."}},
      {"cached_bytes", {false, "Free GPU memory kept in the vramshim pool, in bytes."}},
      {"reserved_bytes", {false, "GPU memory the pool holds from the driver, in bytes."}},
      {"peak_in_use_bytes", {false, "Highest in-use GPU memory so far, in bytes."}},
      {"peak_reserved_bytes", {false, "Highest reserved GPU memory so far, in bytes."}},
      {"limit_bytes", {false, "Per-device cap on in-use GPU memory, in bytes."}},
      {"driver_alloc_calls", {true, "Allocations the pool passed to the CUDA driver."}},
      {"driver_free_calls", {true, "Frees the pool passed to the CUDA driver."}},
      {"pool_hits", {true, "Allocations served from the pool's cache."}},
      {"pool_misses", {true, "Allocations the pool could not serve from its cache."}},
      {"fences_issued", {true, "Fences issued before reusing freed memory."}},
      {"synchronizations", {true, "Blocking synchronizations performed by the pool."}},
      {"released_by_flush_bytes", {true, "Bytes returned to the driver by flushes."}},
      {"released_by_oom_bytes", {true, "Bytes returned to the driver to retry an allocation."}},
      {"released_by_idle_bytes", {true, "Bytes returned to the driver after idle time."}},
  };
  return families;
}

}  // namespace

std::string to_prometheus(const nlohmann::json& stats, pid_t pid) {
  // Figure name → "labels value" lines, in a stable order.
  std::map<std::string, std::vector<std::string>> samples;
  const nlohmann::json& devices =
      stats.contains("devices") ? stats["devices"] : nlohmann::json::array();
  for (const nlohmann::json& device : devices) {
    if (!device.is_object()) continue;
    std::string device_label = "0";
    if (device.contains("device")) {
      const nlohmann::json& id = device["device"];
      device_label = id.is_string() ? id.get<std::string>() : id.dump();
    }
    for (const auto& [name, value] : device.items()) {
      if (name == "device" || !value.is_number()) continue;
      samples[name].push_back("{pid=\"" + std::to_string(pid) + "\",device=\"" + device_label +
                              "\"} " + value.dump());
    }
  }
  std::string text;
  for (const auto& [name, lines] : samples) {
    const auto known = known_families().find(name);
    const bool counter = known != known_families().end() && known->second.counter;
    const std::string metric = "vramshim_" + name + (counter ? "_total" : "");
    const std::string help =
        known != known_families().end() ? known->second.help : "vramshim figure " + name + ".";
    text += "# HELP " + metric + " " + help + "\n";
    text += "# TYPE " + metric + (counter ? " counter\n" : " gauge\n");
    for (const std::string& line : lines) text += metric + line + "\n";
  }
  return text;
}

}  // namespace vramshim::cli
