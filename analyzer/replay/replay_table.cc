#include "analyzer/replay/replay_table.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

using Row = std::vector<std::string>;

std::string ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return text;
}

std::string fixed(double value, const char* format) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string bytes(uint64_t value) { return format_bytes(static_cast<int64_t>(value)); }
std::string count(uint64_t value) { return format_count(static_cast<int64_t>(value)); }

double divided(uint64_t numerator, uint64_t denominator) {
  return denominator == 0 ? 0.0 : static_cast<double>(numerator) / static_cast<double>(denominator);
}

Row figures_row(const std::string& name, const MemoryFigures& figures,
                const MemoryFigures* recorded) {
  const std::optional<double> fragmentation =
      figures.at_peak ? figures.at_peak->fragmentation() : std::nullopt;
  Row row = {name, bytes(figures.peak_reserved_bytes),
             ratio(divided(figures.peak_reserved_bytes, figures.peak_in_use_bytes))};
  if (recorded != nullptr) {
    row.push_back(ratio(divided(figures.peak_reserved_bytes, recorded->peak_reserved_bytes)));
  }
  row.push_back(count(figures.driver_alloc_calls));
  row.push_back(count(figures.driver_free_calls));
  row.push_back(figures.at_peak ? bytes(figures.at_peak->free_bytes) : "-");
  row.push_back(fragmentation ? fixed(*fragmentation, "%.2f") : "-");
  row.push_back(figures.ns_per_operation ? fixed(*figures.ns_per_operation, "%.0f") : "-");
  return row;
}

// The first column left-aligned, the others right-aligned, two spaces apart.
void render_rows(std::ostream& out, const std::vector<Row>& rows) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const Row& row : rows) {
    std::string line = "  " + row[0] + std::string(widths[0] - row[0].size(), ' ');
    for (size_t i = 1; i < row.size(); ++i) {
      line += std::string(widths[i] - row[i].size() + 2, ' ') + row[i];
    }
    out << line << '\n';
  }
}

void render_device(std::ostream& out, const TraceReplay& replay, const DeviceReplay& device) {
  const auto number = [](size_t n, const char* one, const char* many) {
    return format_count_of(static_cast<int64_t>(n), one, many);
  };
  out << "\ndevice " << device.device << ": "
      << number(device.allocations, "allocation", "allocations") << ", "
      << number(device.frees, "free", "frees") << ", peak in use "
      << bytes(device.recorded.peak_in_use_bytes) << " (requests rounded up to 512 B)\n\n";
  if (device.allocations_before_trace > 0) {
    out << "  " << number(device.allocations_before_trace, "allocation was", "allocations were")
        << " live before the trace's first event (its history kept the "
           "last events only, or began late); they are replayed first, in address order\n";
  }
  if (device.out_of_memory_events > 0) {
    out << "  the trace records " << count(device.out_of_memory_events)
        << " allocations that ran out of memory; they are not replayed\n";
  }
  const MemoryFigures* recorded = device.records_reservations ? &device.recorded : nullptr;
  Row header = {"policy", "peak reserved", "/ in use"};
  if (recorded != nullptr) header.push_back("/ " + replay.allocator);
  for (const char* column :
       {"driver allocs", "driver frees", "free at peak", "fragmentation", "ns/op"}) {
    header.push_back(column);
  }
  std::vector<Row> rows = {header};
  if (recorded != nullptr) rows.push_back(figures_row(replay.allocator, *recorded, recorded));
  for (const PolicyReplay& policy : device.policies) {
    rows.push_back(figures_row(policy.policy, policy.figures, recorded));
  }
  render_rows(out, rows);
  if (recorded == nullptr) {
    out << "  the trace records no segments, so " << replay.allocator
        << "'s own peak reserved is unknown\n";
    return;
  }
  for (const PolicyReplay& policy : device.policies) {
    if (policy.policy != "default") continue;
    const double against =
        divided(policy.figures.peak_reserved_bytes, recorded->peak_reserved_bytes);
    out << "  vramshim's default pool reserves " << ratio(against) << " of " << replay.allocator
        << "'s peak (target <= " << ratio(kPeakReservedTarget)
        << "): " << (against <= kPeakReservedTarget ? "met" : "NOT met") << '\n';
  }
}

nlohmann::json figures_json(const MemoryFigures& figures) {
  nlohmann::json json = {
      {"peak_reserved_bytes", figures.peak_reserved_bytes},
      {"peak_in_use_bytes", figures.peak_in_use_bytes},
      {"driver_alloc_calls", figures.driver_alloc_calls},
      {"driver_free_calls", figures.driver_free_calls},
      {"free_bytes_at_peak", nullptr},
      {"largest_free_range_at_peak_bytes", nullptr},
      {"fragmentation_at_peak", nullptr},
      {"ns_per_operation", nullptr},
  };
  if (figures.at_peak) {
    json["free_bytes_at_peak"] = figures.at_peak->free_bytes;
    json["largest_free_range_at_peak_bytes"] = figures.at_peak->largest_bytes;
    if (const auto fragmentation = figures.at_peak->fragmentation()) {
      json["fragmentation_at_peak"] = *fragmentation;
    }
  }
  if (figures.ns_per_operation) json["ns_per_operation"] = *figures.ns_per_operation;
  return json;
}

}  // namespace

void render_replay_text(std::ostream& out, const TraceReplay& replay) {
  out << replay.source << ": " << replay.format << ", replayed through vramshim's pool\n";
  for (const DeviceReplay& device : replay.devices) render_device(out, replay, device);
  out << "\nfree at peak: reserved memory no allocation covers, right after the allocation that "
         "first took\n"
         "  reserved memory to its peak; fragmentation: 1 - largest free range / free at peak\n"
         "  (0: one range; near 1: scattered in small ones).\n"
         "ns/op: wall time per allocate or free in this process, fastest of "
      << replay.timed_runs
      << " replays, with an\n"
         "  in-process driver that costs nothing; a real cuMemAlloc + cuMemFree pair costs "
         "60-300 us.\n";
}

nlohmann::json replay_json(const TraceReplay& replay) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceReplay& device : replay.devices) {
    nlohmann::json policies = nlohmann::json::array();
    for (const PolicyReplay& policy : device.policies) {
      nlohmann::json json = figures_json(policy.figures);
      json["policy"] = policy.policy;
      json["peak_reserved_vs_recorded"] =
          device.records_reservations ? nlohmann::json(divided(policy.figures.peak_reserved_bytes,
                                                               device.recorded.peak_reserved_bytes))
                                      : nlohmann::json(nullptr);
      policies.push_back(std::move(json));
    }
    nlohmann::json recorded = nullptr;
    if (device.records_reservations) {
      recorded = figures_json(device.recorded);
      recorded["allocator"] = replay.allocator;
    }
    devices.push_back({{"device", device.device},
                       {"allocations", device.allocations},
                       {"allocations_before_trace", device.allocations_before_trace},
                       {"frees", device.frees},
                       {"out_of_memory_events", device.out_of_memory_events},
                       {"peak_in_use_bytes", device.recorded.peak_in_use_bytes},
                       {"recorded", std::move(recorded)},
                       {"policies", std::move(policies)}});
  }
  return {{"trace", replay.source},
          {"format", replay.format},
          {"timed_runs", replay.timed_runs},
          {"devices", std::move(devices)}};
}

}  // namespace vramshim::analyzer
