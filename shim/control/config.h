// The shim's configuration: every VRAMSHIM_* variable of README.md's table, read once when the shim
// loads.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/attribution/stack_mode.h"
#include "shim/attribution/stack_table_budget.h"
#include "shim/control/log.h"

namespace vramshim::control {

// Each field's variable, its values and its default are in config_variables().
struct Config {
  bool disable = false;  // every call passes straight through
  bool pool = true;
  bool thread_cache = true;  // threads allocate and free through caches of their own
  attribution::StackMode stacks = attribution::StackMode::kAll;
  std::uint64_t sample_bytes = 0;  // mean bytes between samples; > 0 only with kSample
  unsigned stack_depth = 64;       // 1..kMaxStackDepth
  // VRAMSHIM_STACK_TABLE: host memory for the interned stacks and frames, and as much again for
  // the Python frames.
  std::uint64_t stack_table_bytes = attribution::kDefaultStackTableBytes;
  std::optional<std::uint64_t> limit_bytes;       // nullopt: no cap
  std::optional<std::uint64_t> max_cached_bytes;  // nullopt: no cap
  std::optional<double> idle_release_seconds;     // nullopt: off
  int flush_signal = SIGUSR1;                     // 0: none
  int report_signal = SIGUSR2;                    // 0: none
  bool socket_enabled = true;
  // Empty: PID.sock in the first usable directory of socket_directories(), else in a directory of
  // the process's own (make_fallback_socket_directory).
  std::string socket_path;
  bool report_enabled = true;
  std::string report_pattern = "vramshim.%p.json";  // %p %h %r %t %n
  // VRAMSHIM_REPORT_NOTICES=FD:DEVICE:INODE (set by `vramshim run`): "PID REASON PATH" is written
  // to FD, one line per report written, while FD is still that pipe (a process the child starts
  // with its descriptors closed may have FD for a file of its own); -1: none.
  int report_notice_fd = -1;
  struct PipeIdentity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
  } report_notice_pipe;
  LogLevel log_level = LogLevel::kWarn;
  bool python = true;  // Python frames in stacks when the process runs Python
  // VRAMSHIM_HISTORY: host memory for every site's history; 0: off.
  std::uint64_t history_bytes = std::uint64_t{8} << 20;
  // VRAMSHIM_TRACE: recent allocation events kept; 0: off.
  std::uint64_t trace_events = 262144;
  std::string runtime_dir;  // XDG_RUNTIME_DIR, for the default socket path
};

// What one capture keeps (attribution::StackCapture::kMaxDepth): a deeper stack could not be kept,
// and the report would name a depth its stacks never have.
inline constexpr unsigned kMaxStackDepth = 256;
// VRAMSHIM_HISTORY's least budget (its slot times alone take 32 KiB).
inline constexpr std::uint64_t kMinHistoryBytes = std::uint64_t{64} << 10;
// VRAMSHIM_STACK_TABLE's least budget: a few hundred stacks.
inline constexpr std::uint64_t kMinStackTableBytes = std::uint64_t{64} << 10;
// VRAMSHIM_TRACE's most events (40 B each, per recording thread).
inline constexpr unsigned kMaxTraceEvents = 1u << 24;
// The control thread's tick, which is when the idle release looks at the pools:
// VRAMSHIM_IDLE_RELEASE's least period.
inline constexpr int kControlTickMs = 100;
inline constexpr double kMinIdleReleaseSeconds = kControlTickMs / 1000.0;

// One VRAMSHIM_* variable: how its value is read, and what a bad value's warning and README.md's
// environment table say of it.
struct ConfigVariable {
  const char* name;           // "VRAMSHIM_LIMIT"
  const char* accepted;       // what a good value is; a bad one "is not" this
  const char* default_value;  // as the warning ("using the default (none)") and README.md show it
  // Applies a set, non-empty value to `config`; false, with `config` unchanged, for a bad one.
  bool (*apply)(const std::string& value, Config& config);
};

// The table of every variable parse_config reads, in the order it reads them (and warns).
struct ConfigVariables {
  const ConfigVariable* first;
  const ConfigVariable* last;
  const ConfigVariable* begin() const { return first; }
  const ConfigVariable* end() const { return last; }
};
ConfigVariables config_variables();

// Looks up one environment variable; returns null when it is not set.
using EnvGetter = const char* (*)(const char* name);

struct ConfigResult {
  Config config;
  // One message per variable with a bad value, without the "vramshim: " prefix, e.g.
  // VRAMSHIM_LIMIT="12X" is not a size above 0 and at most 4 EiB (…); using the default (none)
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
