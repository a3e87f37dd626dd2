// Where a process that ran under the shim left its reports: the shim announces each one it writes
// on the pipe `vramshim run` gives it (VRAMSHIM_REPORT_NOTICES), one line "PID REASON PATH".
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace vramshim::cli {

struct ReportNotice {
  pid_t pid;
  std::string reason;
  std::string path;
};

// Every notice readable now on `fd` (read without waiting: the writers may still be running),
// in the order written; malformed lines are skipped.
std::vector<ReportNotice> read_report_notices(int fd);

// What the report pattern names for `pid` as far as it can be known before the process runs: %p
// and %h filled in, %r %t %n left as written.
std::string expand_for_pid(const std::string& pattern, pid_t pid);

// The directory the pattern's reports go into ("." for a plain name), %h filled in; empty when
// codes only the process knows (%p %r %t %n, or any other) name it.
std::string report_directory(const std::string& pattern);

}  // namespace vramshim::cli
