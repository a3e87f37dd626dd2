// What `vramshim top` shows: one row per process and device, with the growth since the previous
// look, kept across collections; and the top sites of one process with their growth.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/live/collection.h"

namespace vramshim::live {

struct TopRow {
  uid_t uid = 0;  // whose socket directory it was found in (root sees every user's)
  pid_t pid = 0;
  std::string command;
  std::string rank;        // empty when the process names none
  std::string device;      // empty for a process that has used no GPU memory yet
  std::string pci_bus_id;  // NVML's form (pci_bus_id.h); empty when the process gives none
  // Figures as the process said them; none where it said no figure (live::answer_figure): unknown.
  std::optional<std::uint64_t> in_use_bytes;
  std::optional<std::uint64_t> cached_bytes;
  std::optional<std::uint64_t> peak_in_use_bytes;
  std::optional<double> growth_per_second;  // in use; none before a second look
  std::optional<double> hit_rate;           // pool hits / (hits + misses) so far; none before any
  std::optional<std::uint64_t> out_of_memory_failures = 0;
  bool silent = false;  // did not answer the latest look: figures of the one before
};

enum class TopSort { kInUse, kCached, kPeak, kGrowth, kPid };
// "in use", "cached", "peak", "growth", "pid".
const char* top_sort_name(TopSort sort);
TopSort next_top_sort(TopSort sort);

class TopTable {
 public:
  // A new look at time `now` (seconds, any steady clock): answered processes get fresh rows, silent
  // ones keep their previous rows marked silent, all others (ended, gone) leave the table.
  void update(const Collection& collection, double now);
  std::vector<TopRow> rows(TopSort sort) const;

 private:
  struct Known {
    TopRow row;
    double time;
  };
  std::map<std::tuple<uid_t, pid_t, std::string>, Known> known_;  // by uid, pid and device
};

struct SiteRow {
  std::string label;
  std::string kind;
  std::optional<std::uint64_t> live_bytes;  // none: unknown, as in TopRow
  std::optional<std::uint64_t> live_count;
  std::optional<double> growth_per_second;
};

// The top sites of one process across looks (a new process starts it afresh).
class SiteTable {
 public:
  // `sites`: the `sites` answer's array for `process`, at time `now`.
  void update(const ProcessKey& process, const nlohmann::json& sites, double now);
  const std::vector<SiteRow>& rows() const { return rows_; }
  const ProcessKey& process() const { return process_; }

 private:
  ProcessKey process_{0, 0};
  double time_ = 0;
  // By stack and kind; none: unknown.
  std::map<std::pair<std::int64_t, std::string>, std::optional<std::uint64_t>> previous_;
  std::vector<SiteRow> rows_;
};

// The rows as a plain-text table (`top --once`), with a header line.
std::string plain_table(const std::vector<TopRow>& rows);

// "1.5 MiB/s", "-2.0 KiB/s", or "-" for none.
std::string format_growth(const std::optional<double>& bytes_per_second);
// "1.5 MiB", or "?" for an unknown figure.
std::string format_figure_bytes(const std::optional<std::uint64_t>& bytes);
// "12", or "?".
std::string format_figure_count(const std::optional<std::uint64_t>& count);
// "97.5%", or "-".
std::string format_hit_rate(const std::optional<double>& rate);

}  // namespace vramshim::live
