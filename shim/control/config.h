// The shim's configuration: every VRAMSHIM_* variable of README.md's table, read once when the shim
// loads.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/control/log.h"

namespace vramshim::control {

enum class StackMode { kAll, kOff, kSample };

struct Config {
  bool disable = false;                // VRAMSHIM_DISABLE=1: every call passes straight through
  bool pool = true;                    // VRAMSHIM_POOL=on|off
  StackMode stacks = StackMode::kAll;  // VRAMSHIM_STACKS=all|off|sample:SIZE
  std::uint64_t sample_bytes = 0;      // mean bytes between samples; > 0 only with kSample
  unsigned stack_depth = 64;           // VRAMSHIM_STACK_DEPTH=N, 1..kMaxStackDepth
  std::optional<std::uint64_t> limit_bytes;       // VRAMSHIM_LIMIT=SIZE; nullopt: no cap
  std::optional<std::uint64_t> max_cached_bytes;  // VRAMSHIM_MAX_CACHED=SIZE; nullopt: no cap
  std::optional<double> idle_release_seconds;     // VRAMSHIM_IDLE_RELEASE=SECONDS; nullopt: off
  int flush_signal = SIGUSR1;                     // VRAMSHIM_FLUSH_SIGNAL; 0: none
  int report_signal = SIGUSR2;                    // VRAMSHIM_REPORT_SIGNAL; 0: none
  bool socket_enabled = true;                     // VRAMSHIM_SOCKET=off disables the control socket
  std::string socket_path;     // VRAMSHIM_SOCKET=PATH; empty: default_socket_path()
  bool report_enabled = true;  // VRAMSHIM_REPORT=off: no report file is written
  std::string report_pattern = "vramshim.%p.json";  // VRAMSHIM_REPORT=PATTERN (%p %h %r %t %n)
  LogLevel log_level = LogLevel::kWarn;             // VRAMSHIM_LOG=error|warn|info|debug
  bool python =
      true;  // VRAMSHIM_PYTHON=auto|off: Python frames in stacks when the process runs Python
  std::string runtime_dir;  // XDG_RUNTIME_DIR, for the default socket path
};

inline constexpr unsigned kMaxStackDepth = 512;

// Looks up one environment variable; returns null when it is not set.
using EnvGetter = const char* (*)(const char* name);

struct ConfigResult {
  Config config;
  // One message per variable with a bad value, without the "vramshim: " prefix, e.g.
  // VRAMSHIM_LIMIT="12X" is not a size (bytes or K/M/G/KiB/MiB/GiB); using the default (none)
  std::vector<std::string> warnings;
};

// Pure: reads the variables through get_env. A variable set to the empty string counts as unset.
ConfigResult parse_config(EnvGetter get_env);

// What the shim calls once at load: parse_config(getenv), sets the log level, logs each warning.
Config load_config_from_environment();

// "USR1"/"SIGUSR1", "USR2"/"SIGUSR2", "none" (0), or the number of SIGUSR1, SIGUSR2 or a real-time
// signal from SIGRTMIN to SIGRTMAX. Every other signal is refused.
std::optional<int> parse_signal(const std::string& text);

}  // namespace vramshim::control
