#include "analyzer/render/prometheus.h"

#include <map>
#include <vector>

#include "shim/support/figures.h"

namespace vramshim::cli {
namespace {

// The figures of shim/support/device_figures.def, by name; any other numeric figure is exported as
// a gauge with a generic help text.
const support::DeviceFigureInfo* known_figure(const std::string& name) {
  for (const support::DeviceFigureInfo& figure : support::kDeviceFigures) {
    if (name == figure.name) return &figure;
  }
  return nullptr;
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
    const support::DeviceFigureInfo* known = known_figure(name);
    const bool counter = known != nullptr && known->type == support::FigureType::kCounter;
    const std::string metric = "vramshim_" + name + (counter ? "_total" : "");
    const std::string help = known != nullptr ? known->help : "vramshim figure " + name + ".";
    text += "# HELP " + metric + " " + help + "\n";
    text += "# TYPE " + metric + (counter ? " counter\n" : " gauge\n");
    for (const std::string& line : lines) text += metric + line + "\n";
  }
  return text;
}

}  // namespace vramshim::cli
