#include "shim/control/config.h"

#include <strings.h>

#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "shim/control/size.h"

namespace vramshim::control {
namespace {

using attribution::StackMode;

constexpr const char* kSignalWhat =
    "USR1, USR2, none or a real-time signal number (SIGRTMIN..SIGRTMAX, 34..64 with glibc)";

bool is(const std::string& text, const char* word) { return strcasecmp(text.c_str(), word) == 0; }

std::optional<bool> parse_switch(const std::string& text) {
  if (is(text, "1") || is(text, "on") || is(text, "true") || is(text, "yes")) return true;
  if (is(text, "0") || is(text, "off") || is(text, "false") || is(text, "no")) return false;
  return std::nullopt;
}

std::optional<unsigned> parse_count(const std::string& text, unsigned max) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > max) return std::nullopt;
  return value;
}

// Non-negative decimal seconds ("30", "0.5"); no exponent, no sign. Locale-independent.
std::optional<double> parse_seconds(const std::string& text) {
  double value = 0;
  bool in_fraction = false;
  double scale =
      0.1;  // of the next fraction digit (reaches 0 after ~320 of them: they add nothing)
  bool any_digit = false;
  for (char c : text) {
    if (c == '.' && !in_fraction) {
      in_fraction = true;
    } else if (c >= '0' && c <= '9') {
      any_digit = true;
      if (!in_fraction) {
        value = value * 10 + (c - '0');
      } else {
        value += (c - '0') * scale;
        scale /= 10;
      }
    } else {
      return std::nullopt;
    }
  }
  if (!any_digit || value > 1e9) return std::nullopt;
  return value;
}

std::optional<LogLevel> parse_log_level(const std::string& text) {
  if (is(text, "error")) return LogLevel::kError;
  if (is(text, "warn") || is(text, "warning")) return LogLevel::kWarn;
  if (is(text, "info")) return LogLevel::kInfo;
  if (is(text, "debug")) return LogLevel::kDebug;
  return std::nullopt;
}

// Stores what `parse` makes of the value in `field`; a value it refuses leaves `field` as it was.
template <auto field, auto parse>
bool store(const std::string& value, Config& config) {
  const auto parsed = parse(value);
  if (parsed) config.*field = *parsed;
  return parsed.has_value();
}

std::optional<unsigned> parse_stack_depth(const std::string& text) {
  return parse_count(text, kMaxStackDepth);
}

bool apply_python(const std::string& value, Config& config) {
  if (is(value, "auto") || is(value, "on")) {
    config.python = true;
  } else if (is(value, "off")) {
    config.python = false;
  } else {
    return false;
  }
  return true;
}

bool apply_stacks(const std::string& value, Config& config) {
  static constexpr char kSample[] = "sample:";
  if (is(value, "all")) {
    config.stacks = StackMode::kAll;
    return true;
  }
  if (is(value, "off")) {
    config.stacks = StackMode::kOff;
    return true;
  }
  if (strncasecmp(value.c_str(), kSample, sizeof(kSample) - 1) != 0) return false;
  const std::optional<std::uint64_t> sample_bytes =
      parse_size(std::string_view(value).substr(sizeof(kSample) - 1));
  if (sample_bytes.value_or(0) == 0) return false;
  config.stacks = StackMode::kSample;
  config.sample_bytes = *sample_bytes;
  return true;
}

bool apply_idle_release(const std::string& value, Config& config) {
  if (is(value, "off")) {
    config.idle_release_seconds.reset();
    return true;
  }
  const std::optional<double> seconds = parse_seconds(value);
  if (!seconds) return false;
  // Zero seconds would release on every tick; it reads as "off". The control thread looks at the
  // pool every tick, so a shorter period would silently mean the tick.
  if (*seconds == 0) {
    config.idle_release_seconds.reset();
    return true;
  }
  if (*seconds < kMinIdleReleaseSeconds) return false;
  config.idle_release_seconds = *seconds;
  return true;
}

bool apply_limit(const std::string& value, Config& config) {
  // A cap of 0 bytes would fail every allocation of the job from its first; one past 2^62 bytes
  // (4 EiB) is no cap, and a reader of the figures takes it for no figure.
  const std::optional<std::uint64_t> bytes = parse_size(value);
  if (bytes.value_or(0) == 0 || *bytes > kMaxLimitBytes) return false;
  config.limit_bytes = *bytes;
  return true;
}

bool apply_max_cached(const std::string& value, Config& config) {
  // Past 2^62 bytes a reader of the figures takes it for no figure, as for the limit.
  const std::optional<std::uint64_t> bytes = parse_size(value);
  if (!bytes || *bytes > kMaxLimitBytes) return false;
  config.max_cached_bytes = *bytes;
  return true;
}

bool apply_socket(const std::string& value, Config& config) {
  if (is(value, "off")) {
    config.socket_enabled = false;
    return true;
  }
  if (value.size() >= 108) return false;  // sizeof(sockaddr_un::sun_path), NUL included
  // A blank at either end is a quoting mistake (VRAMSHIM_SOCKET=" "), not a name anyone means.
  if (std::isspace(static_cast<unsigned char>(value.front())) ||
      std::isspace(static_cast<unsigned char>(value.back()))) {
    return false;
  }
  config.socket_path = value;
  return true;
}

bool apply_report(const std::string& value, Config& config) {
  if (is(value, "off")) {
    config.report_enabled = false;
  } else {
    config.report_pattern = value;
  }
  return true;
}

// Decimal digits making a whole uint64_t, from `first` to the first `end` character (or the end).
std::optional<std::uint64_t> parse_number(const char*& first, const char* last, char end) {
  std::uint64_t value = 0;
  const std::from_chars_result parsed = std::from_chars(first, last, value);
  if (parsed.ec != std::errc() || parsed.ptr == first) return std::nullopt;
  if (parsed.ptr != last && *parsed.ptr != end) return std::nullopt;
  first = parsed.ptr == last ? last : parsed.ptr + 1;
  return value;
}

bool apply_report_notices(const std::string& value, Config& config) {
  // FD:DEVICE:INODE
  const char* at = value.data();
  const char* last = value.data() + value.size();
  const std::optional<std::uint64_t> fd = parse_number(at, last, ':');
  if (!fd || at == last) return false;
  const std::optional<std::uint64_t> device = parse_number(at, last, ':');
  if (!device || at == last) return false;
  const std::optional<std::uint64_t> inode = parse_number(at, last, '\0');
  if (!inode || at != last || *fd <= 2 || *fd > (1u << 20) || *inode == 0) return false;
  config.report_notice_fd = static_cast<int>(*fd);
  config.report_notice_pipe = {*device, *inode};
  return true;
}

bool apply_history(const std::string& value, Config& config) {
  if (is(value, "off")) {
    config.history_bytes = 0;
    return true;
  }
  const std::optional<std::uint64_t> bytes = parse_size(value);
  if (!bytes || *bytes < kMinHistoryBytes) return false;
  config.history_bytes = *bytes;
  return true;
}

bool apply_stack_table(const std::string& value, Config& config) {
  const std::optional<std::uint64_t> bytes = parse_size(value);
  if (!bytes || *bytes < kMinStackTableBytes) return false;
  config.stack_table_bytes = *bytes;
  return true;
}

bool apply_trace(const std::string& value, Config& config) {
  if (is(value, "off")) {
    config.trace_events = 0;
    return true;
  }
  const std::optional<unsigned> events = parse_count(value, kMaxTraceEvents);
  if (!events) return false;
  config.trace_events = *events;
  return true;
}

// Constant-initialized: a hook may read the configuration before the shim's constructors have run.
constexpr ConfigVariable kVariables[] = {
    {"VRAMSHIM_LOG", "error|warn|info|debug", "warn", &store<&Config::log_level, &parse_log_level>},
    {"VRAMSHIM_DISABLE", "1 or 0", "0", &store<&Config::disable, &parse_switch>},
    {"VRAMSHIM_PYTHON", "auto or off", "auto", &apply_python},
    {"VRAMSHIM_POOL", "on or off", "on", &store<&Config::pool, &parse_switch>},
    {"VRAMSHIM_THREAD_CACHE", "on or off", "on", &store<&Config::thread_cache, &parse_switch>},
    {"VRAMSHIM_STACKS", "all, off or sample:SIZE (SIZE > 0)", "all", &apply_stacks},
    {"VRAMSHIM_STACK_DEPTH", "a frame count from 1 to 256", "64",
     &store<&Config::stack_depth, &parse_stack_depth>},
    {"VRAMSHIM_STACK_TABLE",
     "a size of at least 64 KiB (bytes, or a number with K/M/G/T, KB/MB/GB/TB or KiB/MiB/GiB/TiB)",
     "256MiB", &apply_stack_table},
    {"VRAMSHIM_LIMIT",
     "a size above 0 and at most 4 EiB (bytes, or a number with K/M/G/T, KB/MB/GB/TB or "
     "KiB/MiB/GiB/TiB)",
     "none", &apply_limit},
    {"VRAMSHIM_MAX_CACHED",
     "a size of at most 4 EiB (bytes, or a number with K/M/G/T, KB/MB/GB/TB or KiB/MiB/GiB/TiB)",
     "none", &apply_max_cached},
    {"VRAMSHIM_IDLE_RELEASE",
     "a number of seconds of at least 0.1 (the control thread's tick), 0 or off", "off",
     &apply_idle_release},
    {"VRAMSHIM_FLUSH_SIGNAL", kSignalWhat, "USR1", &store<&Config::flush_signal, &parse_signal>},
    {"VRAMSHIM_REPORT_SIGNAL", kSignalWhat, "USR2", &store<&Config::report_signal, &parse_signal>},
    {"VRAMSHIM_SOCKET", "a socket path shorter than 108 bytes, without blanks at its ends",
     "per-process path", &apply_socket},
    {"VRAMSHIM_REPORT", "a report file pattern or off", "vramshim.%p.json", &apply_report},
    {"VRAMSHIM_REPORT_NOTICES", "FD:DEVICE:INODE, a file descriptor above 2 and its pipe's", "none",
     &apply_report_notices},
    {"VRAMSHIM_HISTORY", "a size of at least 64 KiB or off", "8MiB", &apply_history},
    {"VRAMSHIM_TRACE", "an event count from 1 to 16777216 or off", "262144", &apply_trace},
};

// The variable's value, or nullopt if unset or empty.
std::optional<std::string> read(EnvGetter get_env, const char* name) {
  const char* value = get_env(name);
  if (value == nullptr || value[0] == '\0') return std::nullopt;
  return std::string(value);
}

std::string bad_value_warning(const ConfigVariable& variable, const std::string& value) {
  // Long or binary values are cut so the warning stays one readable line.
  std::string shown = value.substr(0, 64);
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return std::string(variable.name) + "=\"" + shown + "\" is not " + variable.accepted +
         "; using the default (" + variable.default_value + ")";
}

}  // namespace

std::optional<int> parse_signal(const std::string& text) {
  if (is(text, "none")) return 0;
  if (is(text, "USR1") || is(text, "SIGUSR1")) return SIGUSR1;
  if (is(text, "USR2") || is(text, "SIGUSR2")) return SIGUSR2;
  const std::optional<unsigned> number = parse_count(text, 64);
  if (!number) return std::nullopt;
  // Every other signal means something to the kernel, the C runtime or a JVM: faults (a handler
  // that returns from SIGSEGV retries the faulting instruction forever), termination, job control,
  // timers, and the real-time signals below SIGRTMIN, which glibc keeps for its threads.
  const int signal_number = static_cast<int>(*number);
  const bool user_signal = signal_number == SIGUSR1 || signal_number == SIGUSR2;
  const bool real_time = signal_number >= SIGRTMIN && signal_number <= SIGRTMAX;
  if (!user_signal && !real_time) return std::nullopt;
  return signal_number;
}

ConfigVariables config_variables() { return {std::begin(kVariables), std::end(kVariables)}; }

ConfigResult parse_config(EnvGetter get_env) {
  ConfigResult result;
  for (const ConfigVariable& variable : kVariables) {
    const std::optional<std::string> value = read(get_env, variable.name);
    if (value && !variable.apply(*value, result.config)) {
      result.warnings.push_back(bad_value_warning(variable, *value));
    }
  }
  if (auto runtime_dir = read(get_env, "XDG_RUNTIME_DIR")) result.config.runtime_dir = *runtime_dir;
  // One signal cannot both flush and write a report: the one whose variable was set keeps it (the
  // flush when both were).
  Config& config = result.config;
  if (config.flush_signal != 0 && config.flush_signal == config.report_signal) {
    const bool report_chosen =
        read(get_env, "VRAMSHIM_REPORT_SIGNAL") && !read(get_env, "VRAMSHIM_FLUSH_SIGNAL");
    result.warnings.push_back("VRAMSHIM_FLUSH_SIGNAL and VRAMSHIM_REPORT_SIGNAL name one signal (" +
                              std::to_string(config.flush_signal) + "); it " +
                              (report_chosen ? "writes reports, and no signal flushes"
                                             : "flushes, and no signal writes reports"));
    (report_chosen ? config.flush_signal : config.report_signal) = 0;
  }
  return result;
}

Config load_config_from_environment() {
  ConfigResult result =
      parse_config([](const char* name) -> const char* { return std::getenv(name); });
  // The level first: VRAMSHIM_LOG=error silences the warnings about the other variables.
  set_log_level(result.config.log_level);
  for (const std::string& warning : result.warnings) log(LogLevel::kWarn, "%s", warning.c_str());
  return std::move(result.config);
}

}  // namespace vramshim::control
