#include "shim/oom/other_processes.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "shim/oom/cuda_bus_id.h"
#include "shim/oom/detached_helper.h"
#include "shim/oom/nvml_processes.h"
#include "shim/oom/proc_info.h"
#include "shim/oom/shimmed_processes.h"

namespace vramshim::oom {
namespace {

// Process-wide: a hung NVML, or a hung /proc read, holds its lane, and later calls do without.
HelperLane& nvml_lane() {
  static HelperLane lane;
  return lane;
}

HelperLane& command_lane() {
  static HelperLane lane;
  return lane;
}

long milliseconds(Clock::duration duration) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(duration).count());
}

// What the calling thread learned, by pid of this process's namespace, and NVML's processes that
// cannot be matched to those pids (inside a PID namespace).
struct Found {
  std::map<pid_t, OtherProcess> by_pid;
  std::vector<OtherProcess> nvml_host_pids;
  std::optional<uint64_t> own_used_bytes;  // NVML's figure for this process
};

void add_nvml_listing(const NvmlListing& listing, Found& found, std::vector<std::string>& notes) {
  if (!listing.problem.empty()) {
    notes.push_back(listing.problem);
    return;
  }
  const pid_t own = pid_known_to_driver();
  const bool in_pid_namespace = own != ::getpid();
  for (const NvmlProcess& listed : listing.processes) {
    if (listed.pid == own) {
      found.own_used_bytes = listed.used_bytes;
      continue;
    }
    OtherProcess& process =
        in_pid_namespace ? found.nvml_host_pids.emplace_back() : found.by_pid[listed.pid];
    if (process.source.empty()) {
      process.pid = listed.pid;
      process.source = "nvml";
    }
    process.used_bytes = listed.used_bytes;
  }
  if (!found.nvml_host_pids.empty()) {
    notes.push_back(
        "this process runs in a PID namespace: NVML's pids are the host's, so they are not "
        "matched with vramshim's and their commands are not read");
  }
}

// The NVML listing on a helper, awaited until `deadline`.
void ask_nvml(DetachedHelper& helper, const NvmlListing& listing, Clock::time_point started,
              Clock::time_point deadline, Found& found, std::vector<std::string>& notes) {
  switch (helper.wait_until(deadline)) {
    case HelperOutcome::kFinished:
      add_nvml_listing(listing, found, notes);
      return;
    case HelperOutcome::kTimedOut:
      notes.push_back("NVML did not answer within " +
                      std::to_string(milliseconds(deadline - started)) +
                      " ms; it is left to finish on its own thread");
      return;
    case HelperOutcome::kBusy:
      notes.push_back("NVML not asked: an earlier NVML query has not returned");
      return;
    case HelperOutcome::kNoThread:
      notes.push_back("NVML not asked: no thread for it (" + helper.start_error() + ")");
      return;
  }
}

// Commands as far as they were read when the helper was given up.
struct CommandReads {
  std::vector<pid_t> pids;  // not changed once the helper runs
  std::mutex mutex;
  std::vector<std::string> commands;  // of pids[0], pids[1], … as far as read
};

// Fills in the commands of found.by_pid on a helper, until `deadline`.
void read_commands(Found& found, Clock::time_point deadline, std::vector<std::string>& notes) {
  if (found.by_pid.empty()) return;
  auto reads = std::make_shared<CommandReads>();
  for (const auto& entry : found.by_pid) reads->pids.push_back(entry.first);
  DetachedHelper helper(command_lane(), [reads] {
    for (const pid_t pid : reads->pids) {
      std::string command = process_command(pid);
      std::lock_guard<std::mutex> lock(reads->mutex);
      reads->commands.push_back(std::move(command));
    }
  });
  const HelperOutcome outcome = helper.wait_until(deadline);
  std::vector<std::string> commands;
  {
    std::lock_guard<std::mutex> lock(reads->mutex);
    commands = reads->commands;
  }
  for (size_t i = 0; i < commands.size(); ++i) found.by_pid[reads->pids[i]].command = commands[i];
  if (outcome == HelperOutcome::kTimedOut) {
    const size_t unread = reads->pids.size() - commands.size();
    notes.push_back("/proc/" + std::to_string(reads->pids[commands.size()]) +
                    "/cmdline was not read in time; " + std::to_string(unread) +
                    " command(s) unknown");
  } else if (outcome == HelperOutcome::kBusy) {
    notes.push_back("commands not read: an earlier read of /proc has not returned");
  } else if (outcome == HelperOutcome::kNoThread) {
    notes.push_back("commands not read: no thread for it (" + helper.start_error() + ")");
  }
}

}  // namespace

OtherProcesses find_other_processes(const OtherProcessesQuery& query) {
  const Clock::time_point started = Clock::now();
  const Clock::time_point end = started + query.total_timeout;
  OtherProcesses result;
  Found found;

  DeviceIdentity device{query.device, query.pci_bus_id};
  if (device.pci_bus_id.empty()) {
    // Without it, NVML says why; the sockets are matched on the ordinal.
    std::string unknown;
    device.pci_bus_id = cuda_pci_bus_id(query.device, &unknown);
  }

  // NVML runs beside the socket scan.
  auto listing = std::make_shared<NvmlListing>();
  DetachedHelper nvml_helper(nvml_lane(), [listing, device] {
    *listing = list_nvml_processes(device.ordinal, device.pci_bus_id);
  });

  ShimmedProcessScan scan =
      ask_shimmed_processes(query.socket_directories, device, query.socket_timeout, end);
  result.unasked = std::move(scan.notes);
  for (const ShimmedProcess& shimmed : scan.processes) {
    OtherProcess& process = found.by_pid[shimmed.pid];
    process.pid = shimmed.pid;
    process.source = "vramshim";
    process.in_use_bytes = shimmed.figures.in_use_bytes;
    process.cached_bytes = shimmed.figures.cached_bytes;
  }

  ask_nvml(nvml_helper, *listing, started, std::min(started + query.nvml_timeout, end), found,
           result.unasked);
  read_commands(found, end, result.unasked);

  result.own_used_bytes = found.own_used_bytes;
  for (auto& entry : found.by_pid) result.processes.push_back(std::move(entry.second));
  for (OtherProcess& process : found.nvml_host_pids) result.processes.push_back(std::move(process));
  return result;
}

}  // namespace vramshim::oom
