#include "shim/report/process_info.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace vramshim::report {
namespace {

std::string read_whole_file(const char* path) {
  std::string content;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return content;
  char chunk[4096];
  ssize_t got;
  while ((got = ::read(fd, chunk, sizeof(chunk))) > 0)
    content.append(chunk, static_cast<size_t>(got));
  ::close(fd);
  return content;
}

double seconds_of(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// starttime (field 22 of /proc/self/stat: clock ticks after boot, 10 ms resolution) plus the boot
// time. /proc/stat's btime is whole seconds, up to 1 s off; the real-time clock minus the time
// since boot (the clock starttime is counted in) has the clocks' resolution.
double read_start_time() {
  const std::string stat = read_whole_file("/proc/self/stat");
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (comm_end == std::string::npos) return 0;
  const char* field = stat.c_str() + comm_end + 1;
  for (int index = 3; index < 22 && *field != '\0'; ++index) {
    field = std::strchr(field + 1, ' ');
    if (field == nullptr) return 0;
  }
  const double ticks = std::strtod(field, nullptr);
  const double boot_time = seconds_of(CLOCK_REALTIME) - seconds_of(CLOCK_BOOTTIME);
  return boot_time + ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

std::optional<std::string> rank_from_environment() {
  for (const char* name :
       {"RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    const char* value = getenv(name);
    if (value != nullptr && *value != '\0') return std::string(value);
  }
  return std::nullopt;
}

JobFromEnvironment job_from_environment() {
  JobFromEnvironment found;
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string_view text(value);
    if (text.size() > kMaxJobBytes) {
      found.problem = std::string(name) + " is longer than " + std::to_string(kMaxJobBytes) +
                      " bytes; no job is named in the stats answer";
      return found;
    }
    for (const char c : text) {
      if (c < 0x20 || c > 0x7e) {
        found.problem =
            std::string(name) +
            " holds a byte outside printable ASCII; no job is named in the stats answer";
        return found;
      }
    }
    found.job = std::string(text);
    return found;
  }
  return found;
}

ProcessInfo read_process_info(std::optional<std::string> rank) {
  ProcessInfo info;
  info.pid = static_cast<int>(getpid());
  const std::string cmdline = read_whole_file("/proc/self/cmdline");
  for (size_t start = 0; start < cmdline.size();) {
    const size_t end = cmdline.find('\0', start);
    const size_t stop = end == std::string::npos ? cmdline.size() : end;
    info.cmdline.emplace_back(cmdline, start, stop - start);
    start = stop + 1;
  }
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path));
  if (length > 0) info.exe.assign(path, static_cast<size_t>(length));
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) info.host = host;
  info.rank = std::move(rank);
  info.start_time = read_start_time();
  return info;
}

}  // namespace vramshim::report
