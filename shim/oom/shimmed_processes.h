// The other processes of this user that run under vramshim on this node, found by their control
// sockets (README.md, "Control socket") and asked for their figures. A socket is trusted as the
// vramshim CLI trusts one: its directory a real directory (not a link) owned by our effective uid
// with no group or other permissions, the socket a socket of that uid named PID.sock, and the
// process listening on it (SO_PEERCRED) that PID, running as that uid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "shim/oom/detached_helper.h"
#include "shim/oom/stats_answer.h"

namespace vramshim::oom {

struct ShimmedProcess {
  pid_t pid = 0;
  ShimDeviceFigures figures;
};

// The device asked about: its ordinal in this process and its PCI bus id (empty when unknown).
struct DeviceIdentity {
  int ordinal = 0;
  std::string pci_bus_id;
};

struct ShimmedProcessScan {
  std::vector<ShimmedProcess> processes;  // ordered by pid
  std::vector<std::string> notes;         // one line per socket or directory not asked, and why
};

// Asks every trusted socket in `directories` but this process's own for "stats", all at once, and
// waits for their answers `answer_timeout` but not past `latest`, never longer: the sockets are
// non-blocking. Keeps the processes whose answer has figures for `device`, matched by bus id where
// the answer has one (read_stats_answer). A socket nobody listens on any more (its process is
// gone) is skipped without a note.
ShimmedProcessScan ask_shimmed_processes(const std::vector<std::string>& directories,
                                         const DeviceIdentity& device,
                                         std::chrono::milliseconds answer_timeout,
                                         Clock::time_point latest);

}  // namespace vramshim::oom
