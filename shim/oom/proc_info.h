// What /proc says of processes: a process's command, and this process's pid outside PID namespaces.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace vramshim::oom {

// An out-of-memory explanation names processes, it does not archive their arguments.
inline constexpr size_t kMaxCommandBytes = 256;

// /proc/PID/cmdline's arguments joined by spaces, cut to kMaxCommandBytes (ending in "..."); for a
// process without arguments (a zombie, a kernel thread) its name in brackets, "[name]"; empty when
// neither can be read (the process is gone, or /proc hides it). The read waits for the process's
// memory map lock: call it where a wait cannot hang anything (a DetachedHelper).
std::string process_command(pid_t pid);

// This process's pid as the driver, and so NVML, knows it: the outermost pid of /proc/self/status's
// NSpid line. It is getpid() unless the process runs in a PID namespace (a container).
pid_t pid_known_to_driver();

}  // namespace vramshim::oom
