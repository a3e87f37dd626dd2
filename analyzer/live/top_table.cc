#include "analyzer/live/top_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "analyzer/control/control_client.h"
#include "analyzer/live/pci_bus_id.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/render/units.h"

namespace vramshim::live {
namespace {

constexpr size_t kCommandWidth = 40;
// The rank comes from other processes (another user's, for root): cut to a column.
constexpr size_t kLabelWidth = 16;

std::string text_of(const nlohmann::json& object, const char* name) {
  if (!object.is_object() || !object.contains(name)) return {};
  if (object[name].is_string()) return object[name].get<std::string>();
  if (object[name].is_number()) return object[name].dump();
  return {};
}

std::vector<TopRow> rows_of(const ProcessSample& process) {
  const nlohmann::json info = process.stats.value("process", nlohmann::json::object());
  TopRow base;
  base.uid = process.socket.owner;
  base.pid = process.socket.pid;
  base.command = text_of(info, "command");
  base.rank = text_of(info, "rank");
  // The collection keeps one entry per device, each numbered (collect()).
  std::map<int, std::optional<std::uint64_t>> failures;
  for (const nlohmann::json& entry :
       process.stats.value("out_of_memory", nlohmann::json::array())) {
    const std::optional<int> device = device_number(entry);
    if (device) failures[*device] = answer_figure(entry, "failures");
  }
  std::vector<TopRow> rows;
  for (const nlohmann::json& device : process.stats.value("devices", nlohmann::json::array())) {
    const std::optional<int> number = device_number(device);
    if (!number) continue;
    TopRow row = base;
    row.device = std::to_string(*number);
    row.pci_bus_id = nvml_pci_bus_id(device).value_or("");
    row.in_use_bytes = answer_figure(device, "in_use_bytes");
    row.cached_bytes = answer_figure(device, "cached_bytes");
    row.peak_in_use_bytes = answer_figure(device, "peak_in_use_bytes");
    const std::optional<std::uint64_t> hits = answer_figure(device, "pool_hits");
    const std::optional<std::uint64_t> misses = answer_figure(device, "pool_misses");
    if (hits && misses && *hits + *misses > 0) {  // each at most 2^62: no overflow
      row.hit_rate = static_cast<double>(*hits) / static_cast<double>(*hits + *misses);
    }
    const auto failed = failures.find(*number);
    if (failed != failures.end()) row.out_of_memory_failures = failed->second;
    rows.push_back(row);
  }
  if (rows.empty()) {
    // No device used yet: nothing in use, which is known (not '?', a figure that is none).
    base.in_use_bytes = base.cached_bytes = base.peak_in_use_bytes = 0;
    rows.push_back(base);
  }
  return rows;
}

// The command with its program's directory left out: "cached_idle cache 4".
std::string short_command(const std::string& command) {
  const size_t program_end = std::min(command.find(' '), command.size());
  const size_t slash = command.rfind('/', program_end == 0 ? 0 : program_end - 1);
  return slash == std::string::npos || slash >= program_end ? command : command.substr(slash + 1);
}

std::string cut(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  size_t end = width - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "...";
}

}  // namespace

const char* top_sort_name(TopSort sort) {
  switch (sort) {
    case TopSort::kInUse:
      return "in use";
    case TopSort::kCached:
      return "cached";
    case TopSort::kPeak:
      return "peak";
    case TopSort::kGrowth:
      return "growth";
    case TopSort::kPid:
      return "pid";
  }
  return "in use";
}

TopSort next_top_sort(TopSort sort) {
  return sort == TopSort::kPid ? TopSort::kInUse : static_cast<TopSort>(static_cast<int>(sort) + 1);
}

void TopTable::update(const Collection& collection, double now) {
  std::map<std::tuple<uid_t, pid_t, std::string>, Known> next;
  for (const ProcessSample& process : collection.processes) {
    for (TopRow& row : rows_of(process)) {
      const auto key = std::make_tuple(row.uid, row.pid, row.device);
      const auto before = known_.find(key);
      if (before != known_.end() && now > before->second.time && !before->second.row.silent &&
          row.in_use_bytes && before->second.row.in_use_bytes) {
        row.growth_per_second = (static_cast<double>(*row.in_use_bytes) -
                                 static_cast<double>(*before->second.row.in_use_bytes)) /
                                (now - before->second.time);
      }
      next[key] = Known{row, now};
    }
  }
  const std::set<ProcessKey> silent(collection.silent.begin(), collection.silent.end());
  const auto process_of = [](const auto& entry) {
    return ProcessKey{std::get<0>(entry.first), std::get<1>(entry.first)};
  };
  for (const auto& entry : known_) {
    if (silent.count(process_of(entry)) == 0) continue;
    Known kept = entry.second;
    kept.row.silent = true;
    kept.row.growth_per_second.reset();
    next[entry.first] = kept;
  }
  for (const ProcessKey& process : silent) {
    const bool seen = std::any_of(next.begin(), next.end(),
                                  [&](const auto& entry) { return process_of(entry) == process; });
    if (!seen) {
      TopRow row;
      row.uid = process.first;
      row.pid = process.second;
      row.silent = true;
      next[{process.first, process.second, ""}] = Known{row, now};
    }
  }
  known_ = std::move(next);
}

std::vector<TopRow> TopTable::rows(TopSort sort) const {
  std::vector<TopRow> rows;
  for (const auto& [key, known] : known_) rows.push_back(known.row);
  // Unknown figures sort last.
  auto bytes = [](const std::optional<std::uint64_t>& figure) {
    return figure ? static_cast<double>(*figure) : -INFINITY;
  };
  auto value = [sort, bytes](const TopRow& row) -> double {
    switch (sort) {
      case TopSort::kInUse:
        return bytes(row.in_use_bytes);
      case TopSort::kCached:
        return bytes(row.cached_bytes);
      case TopSort::kPeak:
        return bytes(row.peak_in_use_bytes);
      case TopSort::kGrowth:
        return row.growth_per_second.value_or(-INFINITY);
      case TopSort::kPid:
        return -static_cast<double>(row.pid);
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TopRow& a, const TopRow& b) { return value(a) > value(b); });
  return rows;
}

void SiteTable::update(const ProcessKey& process, const nlohmann::json& sites, double now) {
  if (process != process_) {
    previous_.clear();
    process_ = process;
  }
  const double elapsed = now - time_;
  const bool have_previous = !previous_.empty() && elapsed > 0;
  std::map<std::pair<std::int64_t, std::string>, std::optional<std::uint64_t>> current;
  rows_.clear();
  for (const nlohmann::json& site : sites.is_array() ? sites : nlohmann::json::array()) {
    if (!site.is_object()) continue;
    SiteRow row;
    row.label = text_of(site, "label");
    row.kind = text_of(site, "kind");
    row.live_bytes = answer_figure(site, "live_bytes");
    row.live_count = answer_figure(site, "live_count");
    const std::int64_t stack = site.contains("stack") && site["stack"].is_number_integer()
                                   ? site["stack"].get<std::int64_t>()
                                   : -1;
    const auto key = std::make_pair(stack, row.kind);
    const auto before = previous_.find(key);
    const bool earlier_known = before == previous_.end() || before->second;
    if (have_previous && row.live_bytes && earlier_known) {
      const double earlier = before != previous_.end() ? static_cast<double>(*before->second) : 0;
      row.growth_per_second = (static_cast<double>(*row.live_bytes) - earlier) / elapsed;
    }
    current[key] = row.live_bytes;
    rows_.push_back(row);
  }
  previous_ = std::move(current);
  time_ = now;
}

std::string format_growth(const std::optional<double>& bytes_per_second) {
  if (!bytes_per_second || std::isnan(*bytes_per_second)) return "-";
  // Between figures of at most 2^62 over a short time it may pass what an int64_t holds.
  const double limit = static_cast<double>(analyzer::kFigureLimit);
  const double bounded = std::clamp(*bytes_per_second, -limit, limit);
  return analyzer::format_signed_bytes(static_cast<int64_t>(std::llround(bounded))) + "/s";
}

std::string format_figure_bytes(const std::optional<std::uint64_t>& bytes) {
  return bytes ? analyzer::format_bytes(static_cast<int64_t>(*bytes)) : "?";
}

std::string format_figure_count(const std::optional<std::uint64_t>& count) {
  return count ? std::to_string(*count) : "?";
}

std::string format_hit_rate(const std::optional<double>& rate) {
  if (!rate) return "-";
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", *rate * 100);
  return text;
}

std::string plain_table(const std::vector<TopRow>& rows) {
  char line[512];
  std::snprintf(line, sizeof(line), "%8s %5s %4s %16s %10s %10s %10s %12s %6s %4s %10s  %s\n",
                "PID", "RANK", "DEV", "BUS ID", "IN USE", "CACHED", "PEAK", "GROWTH", "HIT%", "OOM",
                "UID", "COMMAND");
  std::string text = line;
  for (const TopRow& row : rows) {
    // Another process's text, without control characters and cut, so that a row is one line of
    // the table whatever the process said.
    const std::string command =
        cut(cli::printable(row.command.empty() ? "?" : short_command(row.command)), kCommandWidth) +
        (row.silent ? "  (not answering)" : "");
    const std::string rank = row.rank.empty() ? "-" : cut(cli::printable(row.rank), kLabelWidth);
    const std::string device =
        row.device.empty() ? "-" : cut(cli::printable(row.device), kLabelWidth);
    std::snprintf(
        line, sizeof(line), "%8d %5s %4s %16s %10s %10s %10s %12s %6s %4s %10u  %s\n", row.pid,
        rank.c_str(), device.c_str(), row.pci_bus_id.empty() ? "-" : row.pci_bus_id.c_str(),
        format_figure_bytes(row.in_use_bytes).c_str(),
        format_figure_bytes(row.cached_bytes).c_str(),
        format_figure_bytes(row.peak_in_use_bytes).c_str(),
        format_growth(row.growth_per_second).c_str(), format_hit_rate(row.hit_rate).c_str(),
        format_figure_count(row.out_of_memory_failures).c_str(), row.uid, command.c_str());
    text += line;
  }
  return text;
}

}  // namespace vramshim::live
