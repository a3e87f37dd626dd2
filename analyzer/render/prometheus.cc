#include "analyzer/render/prometheus.h"

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/live/pci_bus_id.h"
#include "analyzer/render/terminal_safe.h"
#include "shim/support/figures.h"

namespace vramshim::cli {
namespace {

// Label values come from the processes (another user's, for root), and each is repeated in every
// sample of its process: cut, so that one process cannot swell a scrape.
constexpr size_t kMaxLabelShown = 100;
constexpr size_t kMaxSiteLabelShown = 200;  // a site's frame: a function, a file and a line

// A label value as the exposition format quotes it: backslash, double quote and newline escaped;
// and, as the format has no escape for them, the controls a terminal acts on shown as '?'
// (terminal_safe.h): `stats --prometheus` prints to terminals too.
std::string quoted(const std::string& value) {
  std::string text = "\"";
  for (const char c : analyzer::terminal_safe(value)) {
    if (c == '\\') {
      text += "\\\\";
    } else if (c == '"') {
      text += "\\\"";
    } else if (c == '\n') {
      text += "\\n";
    } else {
      text += c;
    }
  }
  return text + "\"";
}

std::string string_or(const nlohmann::json& object, const char* name, const std::string& absent) {
  if (!object.is_object() || !object.contains(name)) return absent;
  const nlohmann::json& value = object[name];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  return absent;
}

// `value` cut at `limit` bytes without splitting a UTF-8 sequence.
std::string shown(std::string value, size_t limit = kMaxLabelShown) {
  if (value.size() <= limit) return value;
  size_t end = limit - 3;
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
  return value.substr(0, end) + "...";
}

// `name="value",…` of a process, without braces.
std::string process_labels(const live::ProcessSample& process) {
  const nlohmann::json& info =
      process.stats.contains("process") ? process.stats["process"] : nlohmann::json::object();
  std::string labels = "pid=\"" + std::to_string(process.socket.pid) + "\"";
  // The one label the process cannot choose: its uid, checked on its socket (peer credentials).
  // The others are what it says, so a job's series are told from look-alikes by their uid.
  labels += ",uid=\"" + std::to_string(process.socket.owner) + "\"";
  labels += ",command=" + quoted(shown(string_or(info, "command", "?")));
  labels += ",host=" + quoted(shown(string_or(info, "host", "?")));
  const std::string rank = string_or(info, "rank", "");
  if (!rank.empty()) labels += ",rank=" + quoted(shown(rank));
  const std::string job = string_or(info, "job", "");
  if (!job.empty()) labels += ",job_id=" + quoted(shown(job));
  return labels;
}

// `,device="N",pci_bus_id="00000000:18:00.0"` (the bus id in NVML's form, as DCGM labels it; left
// out when the answer gives none), or nullopt for an entry of no device a machine can have (the
// collection refuses such answers; this holds for any sample).
std::optional<std::string> device_label(const nlohmann::json& entry) {
  const std::optional<int> device = live::device_number(entry);
  if (!device) return std::nullopt;
  const std::optional<std::string> bus_id = live::nvml_pci_bus_id(entry);
  return ",device=\"" + std::to_string(*device) + "\"" +
         (bus_id ? ",pci_bus_id=\"" + *bus_id + "\"" : "");
}

// The metrics in the order written, each with its samples ("{labels} value" lines).
class Families {
 public:
  void add(const std::string& metric, const char* type, const std::string& help,
           const std::string& labels, const std::string& value) {
    auto [at, added] = index_.emplace(metric, families_.size());
    if (added) families_.push_back({metric, type, help, {}});
    families_[at->second].samples.push_back("{" + labels + "} " + value);
  }

  std::string text() const {
    std::string text;
    for (const Family& family : families_) {
      text += "# HELP " + family.metric + " " + family.help + "\n";
      text += "# TYPE " + family.metric + " " + family.type + "\n";
      for (const std::string& sample : family.samples) text += family.metric + sample + "\n";
    }
    return text;
  }

 private:
  struct Family {
    std::string metric;
    const char* type;
    std::string help;
    std::vector<std::string> samples;
  };
  std::vector<Family> families_;
  std::map<std::string, size_t> index_;
};

void add_devices(const live::ProcessSample& process, const std::string& labels,
                 Families& families) {
  const nlohmann::json devices = process.stats.value("devices", nlohmann::json::array());
  for (const support::DeviceFigureInfo& figure : support::kDeviceFigures) {
    const bool counter = figure.type == support::FigureType::kCounter;
    const std::string metric = std::string("vramshim_") + figure.name + (counter ? "_total" : "");
    std::set<std::string> written;  // a device listed twice is one series
    for (const nlohmann::json& device : devices) {
      const std::optional<std::string> label = device_label(device);
      // A figure that is not one (negative, fractional, past kFigureLimit) is unknown: left out.
      const std::optional<std::uint64_t> value = live::answer_figure(device, figure.name);
      if (!label || !value || !written.insert(*label).second) continue;
      families.add(metric, counter ? "counter" : "gauge", figure.help, labels + *label,
                   std::to_string(*value));
    }
  }
}

void add_out_of_memory(const live::ProcessSample& process, const std::string& labels,
                       Families& families) {
  // Every device the process uses, with 0 unless the answer counts failures on it; and devices
  // with failures but no pool (a failed first allocation). An out-of-memory entry names its device
  // by number only: it is labelled as the device of that number is.
  std::map<std::string, std::string> failures;
  std::map<int, std::string> labels_by_number;
  for (const nlohmann::json& device : process.stats.value("devices", nlohmann::json::array())) {
    const std::optional<std::string> label = device_label(device);
    if (!label) continue;
    failures[*label] = "0";
    labels_by_number.emplace(*live::device_number(device), *label);
  }
  for (const nlohmann::json& entry :
       process.stats.value("out_of_memory", nlohmann::json::array())) {
    std::optional<std::string> label = device_label(entry);
    const std::optional<std::uint64_t> count = live::answer_figure(entry, "failures");
    if (!label) continue;
    const auto listed = labels_by_number.find(*live::device_number(entry));
    if (listed != labels_by_number.end()) label = listed->second;
    if (count) {
      failures[*label] = std::to_string(*count);
    } else {
      failures.erase(*label);  // unknown: left out
    }
  }
  for (const auto& [device, count] : failures) {
    families.add("vramshim_out_of_memory_failures_total", "counter",
                 "Allocations vramshim failed with CUDA_ERROR_OUT_OF_MEMORY.", labels + device,
                 count);
  }
}

void add_sites(const live::ProcessSample& process, const std::string& labels, Families& families) {
  if (!process.sites.is_array()) return;
  // Sites whose innermost user frame is the same are one series: the same as written (cut, its
  // controls shown as '?'), or the scrape would hold one series twice.
  std::map<std::pair<std::string, std::string>, std::uint64_t> live_bytes;
  std::vector<std::pair<std::string, std::string>> order;
  for (const nlohmann::json& site : process.sites) {
    const std::optional<std::uint64_t> bytes = live::answer_figure(site, "live_bytes");
    if (!bytes) continue;
    const std::pair<std::string, std::string> key{
        analyzer::terminal_safe(shown(string_or(site, "kind", "?"))),
        analyzer::terminal_safe(shown(string_or(site, "label", "?"), kMaxSiteLabelShown))};
    auto [at, added] = live_bytes.emplace(key, 0);
    if (added) order.push_back(key);
    at->second = live::saturating_figure_sum(at->second, *bytes);
  }
  for (const auto& key : order) {
    families.add("vramshim_site_live_bytes", "gauge",
                 "GPU memory held by one of the process's top allocation sites, named by its "
                 "innermost user frame, in bytes.",
                 labels + ",kind=" + quoted(key.first) + ",site=" + quoted(key.second),
                 std::to_string(live_bytes[key]));
  }
}

}  // namespace

std::string to_prometheus(const live::Collection& collection, const std::set<uid_t>& listings_cut) {
  Families families;
  for (const live::ProcessSample& process : collection.processes) {
    const std::string labels = process_labels(process);
    add_devices(process, labels, families);
    add_out_of_memory(process, labels, families);
    add_sites(process, labels, families);
  }
  std::string text = families.text();
  text +=
      "# HELP vramshim_processes_answered Processes running under vramshim that answered.\n"
      "# TYPE vramshim_processes_answered gauge\n"
      "vramshim_processes_answered " +
      std::to_string(collection.processes.size()) + "\n";
  // By the uid whose socket directory each was found in: a user can leave sockets nobody serves,
  // or processes that answer badly, only in their own, so only their own counts are theirs.
  text +=
      "# HELP vramshim_processes_skipped Processes running under vramshim left out, by user and "
      "why.\n"
      "# TYPE vramshim_processes_skipped gauge\n";
  for (const auto& [owner, counts] : collection.skipped) {
    for (const live::Skipped reason : live::kSkippedReasons) {
      text += "vramshim_processes_skipped{uid=\"" + std::to_string(owner) + "\",reason=\"" +
              live::skipped_name(reason) + "\"} " +
              std::to_string(counts[static_cast<size_t>(reason)]) + "\n";
    }
  }
  // A user whose directories hold more names PID.sock than are looked at (stale sockets, files
  // made to look like them) may run processes that were not asked, and are in no count above.
  std::set<uid_t> owners = listings_cut;
  for (const auto& [owner, counts] : collection.skipped) owners.insert(owner);
  text += "# HELP vramshim_socket_listing_cut 1 when a user's socket directories hold more than " +
          std::to_string(SocketDirectory::kMaxListed) +
          " names PID.sock, past which processes are not asked.\n"
          "# TYPE vramshim_socket_listing_cut gauge\n";
  for (const uid_t owner : owners) {
    text += "vramshim_socket_listing_cut{uid=\"" + std::to_string(owner) + "\"} " +
            (listings_cut.count(owner) != 0 ? "1" : "0") + "\n";
  }
  text +=
      "# HELP vramshim_collection_duration_seconds How long asking the processes took.\n"
      "# TYPE vramshim_collection_duration_seconds gauge\n"
      "vramshim_collection_duration_seconds " +
      nlohmann::json(collection.seconds).dump() + "\n";
  // The exporter serves a collection again (to scrapes within --min-interval of it, or once a
  // scrape's wait ran out): time() minus this is how old the figures are.
  text +=
      "# HELP vramshim_collection_end_time_seconds When the collection ended, in seconds since "
      "the epoch.\n"
      "# TYPE vramshim_collection_end_time_seconds gauge\n"
      "vramshim_collection_end_time_seconds " +
      nlohmann::json(collection.ended_unix_seconds).dump() + "\n";
  return text;
}

}  // namespace vramshim::cli
