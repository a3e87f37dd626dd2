#include "analyzer/live/top_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "analyzer/control/control_client.h"
#include "analyzer/render/units.h"

namespace vramshim::live {
namespace {

constexpr size_t kCommandWidth = 40;
// Rank and device come from other processes (another user's, for root): cut to a column.
constexpr size_t kLabelWidth = 16;

std::uint64_t unsigned_of(const nlohmann::json& object, const char* name) {
  if (!object.is_object() || !object.contains(name) || !object[name].is_number_unsigned()) return 0;
  return object[name].get<std::uint64_t>();
}

std::string text_of(const nlohmann::json& object, const char* name) {
  if (!object.is_object() || !object.contains(name)) return {};
  if (object[name].is_string()) return object[name].get<std::string>();
  if (object[name].is_number()) return object[name].dump();
  return {};
}

std::vector<TopRow> rows_of(const ProcessSample& process) {
  const nlohmann::json info = process.stats.value("process", nlohmann::json::object());
  TopRow base;
  base.pid = process.socket.pid;
  base.command = text_of(info, "command");
  base.rank = text_of(info, "rank");
  std::map<std::string, std::uint64_t> failures;
  for (const nlohmann::json& entry : process.stats.value("out_of_memory", nlohmann::json::array()))
    failures[text_of(entry, "device")] = unsigned_of(entry, "failures");
  std::vector<TopRow> rows;
  for (const nlohmann::json& device : process.stats.value("devices", nlohmann::json::array())) {
    TopRow row = base;
    row.device = text_of(device, "device");
    row.in_use_bytes = unsigned_of(device, "in_use_bytes");
    row.cached_bytes = unsigned_of(device, "cached_bytes");
    row.peak_in_use_bytes = unsigned_of(device, "peak_in_use_bytes");
    const std::uint64_t hits = unsigned_of(device, "pool_hits");
    const std::uint64_t misses = unsigned_of(device, "pool_misses");
    if (hits + misses > 0) row.hit_rate = static_cast<double>(hits) / (hits + misses);
    row.out_of_memory_failures = failures[row.device];
    rows.push_back(row);
  }
  if (rows.empty()) rows.push_back(base);
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
  std::map<std::pair<pid_t, std::string>, Known> next;
  for (const ProcessSample& process : collection.processes) {
    for (TopRow& row : rows_of(process)) {
      const auto key = std::make_pair(row.pid, row.device);
      const auto before = known_.find(key);
      if (before != known_.end() && now > before->second.time && !before->second.row.silent) {
        row.growth_per_second = (static_cast<double>(row.in_use_bytes) -
                                 static_cast<double>(before->second.row.in_use_bytes)) /
                                (now - before->second.time);
      }
      next[key] = Known{row, now};
    }
  }
  const std::set<pid_t> silent(collection.silent.begin(), collection.silent.end());
  for (const auto& [key, known] : known_) {
    if (silent.count(key.first) == 0) continue;
    Known kept = known;
    kept.row.silent = true;
    kept.row.growth_per_second.reset();
    next[key] = kept;
  }
  for (const pid_t pid : silent) {
    const bool seen = std::any_of(next.begin(), next.end(),
                                  [pid](const auto& entry) { return entry.first.first == pid; });
    if (!seen) {
      TopRow row;
      row.pid = pid;
      row.silent = true;
      next[{pid, ""}] = Known{row, now};
    }
  }
  known_ = std::move(next);
}

std::vector<TopRow> TopTable::rows(TopSort sort) const {
  std::vector<TopRow> rows;
  for (const auto& [key, known] : known_) rows.push_back(known.row);
  auto value = [sort](const TopRow& row) -> double {
    switch (sort) {
      case TopSort::kInUse:
        return static_cast<double>(row.in_use_bytes);
      case TopSort::kCached:
        return static_cast<double>(row.cached_bytes);
      case TopSort::kPeak:
        return static_cast<double>(row.peak_in_use_bytes);
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

void SiteTable::update(pid_t pid, const nlohmann::json& sites, double now) {
  if (pid != pid_) {
    previous_.clear();
    pid_ = pid;
  }
  const double elapsed = now - time_;
  const bool have_previous = !previous_.empty() && elapsed > 0;
  std::map<std::pair<std::int64_t, std::string>, std::uint64_t> current;
  rows_.clear();
  for (const nlohmann::json& site : sites.is_array() ? sites : nlohmann::json::array()) {
    if (!site.is_object()) continue;
    SiteRow row;
    row.label = text_of(site, "label");
    row.kind = text_of(site, "kind");
    row.live_bytes = unsigned_of(site, "live_bytes");
    row.live_count = unsigned_of(site, "live_count");
    const std::int64_t stack = site.contains("stack") && site["stack"].is_number_integer()
                                   ? site["stack"].get<std::int64_t>()
                                   : -1;
    const auto key = std::make_pair(stack, row.kind);
    if (have_previous) {
      const auto before = previous_.find(key);
      const double earlier = before != previous_.end() ? static_cast<double>(before->second) : 0;
      row.growth_per_second = (static_cast<double>(row.live_bytes) - earlier) / elapsed;
    }
    current[key] = row.live_bytes;
    rows_.push_back(row);
  }
  previous_ = std::move(current);
  time_ = now;
}

std::string format_growth(const std::optional<double>& bytes_per_second) {
  if (!bytes_per_second) return "-";
  return analyzer::format_signed_bytes(static_cast<int64_t>(std::llround(*bytes_per_second))) +
         "/s";
}

std::string format_hit_rate(const std::optional<double>& rate) {
  if (!rate) return "-";
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", *rate * 100);
  return text;
}

std::string plain_table(const std::vector<TopRow>& rows) {
  char line[512];
  std::snprintf(line, sizeof(line), "%8s %5s %4s %10s %10s %10s %12s %6s %4s  %s\n", "PID", "RANK",
                "DEV", "IN USE", "CACHED", "PEAK", "GROWTH", "HIT%", "OOM", "COMMAND");
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
    std::snprintf(line, sizeof(line), "%8d %5s %4s %10s %10s %10s %12s %6s %4llu  %s\n", row.pid,
                  rank.c_str(), device.c_str(),
                  analyzer::format_bytes(static_cast<int64_t>(row.in_use_bytes)).c_str(),
                  analyzer::format_bytes(static_cast<int64_t>(row.cached_bytes)).c_str(),
                  analyzer::format_bytes(static_cast<int64_t>(row.peak_in_use_bytes)).c_str(),
                  format_growth(row.growth_per_second).c_str(),
                  format_hit_rate(row.hit_rate).c_str(),
                  static_cast<unsigned long long>(row.out_of_memory_failures), command.c_str());
    text += line;
  }
  return text;
}

}  // namespace vramshim::live
