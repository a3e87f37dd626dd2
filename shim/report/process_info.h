// Who the process is, for the report's "process" object and the report path pattern.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace vramshim::report {

struct ProcessInfo {
  int pid = 0;
  std::vector<std::string> cmdline;  // /proc/self/cmdline
  std::string exe;                   // /proc/self/exe
  std::string host;                  // gethostname
  std::optional<std::string> rank;   // rank_from_environment()
  double start_time = 0;             // seconds since the Unix epoch, from /proc/self/stat
};

// The first of RANK, LOCAL_RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK that is set and
// non-empty; nullopt if none is. Reads the environment: call it once at init.
std::optional<std::string> rank_from_environment();

// The job of a distributed run, from SLURM_JOB_ID or else TORCHELASTIC_RUN_ID (the first that is
// set and non-empty). A value longer than kMaxJobBytes or with a byte outside printable ASCII is
// not used: `problem` then says why, for one warning line.
inline constexpr size_t kMaxJobBytes = 128;
struct JobFromEnvironment {
  std::optional<std::string> job;
  std::string problem;
};
// Reads the environment: call it once at init.
JobFromEnvironment job_from_environment();

// Reads the pid, command line, executable, host name and start time of this process; `rank` is
// taken as given (the environment may have changed since init).
ProcessInfo read_process_info(std::optional<std::string> rank);

}  // namespace vramshim::report
