#include "shim/control/config.h"

#include <strings.h>
#include <csignal>
#include <cstdlib>

#include "shim/control/size.h"

namespace vramshim::control {
namespace {

constexpr const char* kSizeWhat = "a size (bytes or K/M/G/KiB/MiB/GiB)";
constexpr const char* kSignalWhat =
    "USR1, USR2, none or a real-time signal number (SIGRTMIN..SIGRTMAX, 34..64 with glibc)";

bool is(const std::string& text, const char* word) { return strcasecmp(text.c_str(), word) == 0; }

class Reader {
 public:
  explicit Reader(EnvGetter get_env) : get_env_(get_env) {}

  // The variable's value, or nullopt if unset or empty.
  std::optional<std::string> get(const char* name) const {
    const char* value = get_env_(name);
    if (value == nullptr || value[0] == '\0') return std::nullopt;
    return std::string(value);
  }

  void warn(const char* name, const std::string& value, const char* what, const char* fallback) {
    // Long or binary values are cut so the warning stays one readable line.
    std::string shown = value.substr(0, 64);
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    }
    warnings_.push_back(std::string(name) + "=\"" + shown + "\" is not " + what +
                        "; using the default (" + fallback + ")");
  }

  std::vector<std::string> take_warnings() { return std::move(warnings_); }

 private:
  EnvGetter get_env_;
  std::vector<std::string> warnings_;
};

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
  double scale = 0;  // 0 while in the integer part
  bool any_digit = false;
  for (char c : text) {
    if (c == '.' && scale == 0) {
      scale = 0.1;
    } else if (c >= '0' && c <= '9') {
      any_digit = true;
      if (scale == 0) {
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

ConfigResult parse_config(EnvGetter get_env) {
  Reader env(get_env);
  Config config;

  if (auto value = env.get("VRAMSHIM_LOG")) {
    if (auto level = parse_log_level(*value)) {
      config.log_level = *level;
    } else {
      env.warn("VRAMSHIM_LOG", *value, "error|warn|info|debug", "warn");
    }
  }
  if (auto value = env.get("VRAMSHIM_DISABLE")) {
    if (auto on = parse_switch(*value)) {
      config.disable = *on;
    } else {
      env.warn("VRAMSHIM_DISABLE", *value, "1 or 0", "0");
    }
  }
  if (auto value = env.get("VRAMSHIM_PYTHON")) {
    if (is(*value, "auto") || is(*value, "on")) {
      config.python = true;
    } else if (is(*value, "off")) {
      config.python = false;
    } else {
      env.warn("VRAMSHIM_PYTHON", *value, "auto or off", "auto");
    }
  }
  if (auto value = env.get("VRAMSHIM_POOL")) {
    if (auto on = parse_switch(*value)) {
      config.pool = *on;
    } else {
      env.warn("VRAMSHIM_POOL", *value, "on or off", "on");
    }
  }
  if (auto value = env.get("VRAMSHIM_STACKS")) {
    static constexpr char kSample[] = "sample:";
    const bool sample = strncasecmp(value->c_str(), kSample, sizeof(kSample) - 1) == 0;
    const std::optional<std::uint64_t> sample_bytes =
        sample ? parse_size(std::string_view(*value).substr(sizeof(kSample) - 1)) : std::nullopt;
    if (is(*value, "all")) {
      config.stacks = StackMode::kAll;
    } else if (is(*value, "off")) {
      config.stacks = StackMode::kOff;
    } else if (sample_bytes.value_or(0) > 0) {
      config.stacks = StackMode::kSample;
      config.sample_bytes = *sample_bytes;
    } else {
      env.warn("VRAMSHIM_STACKS", *value, "all, off or sample:SIZE (SIZE > 0)", "all");
    }
  }
  if (auto value = env.get("VRAMSHIM_STACK_DEPTH")) {
    if (auto depth = parse_count(*value, kMaxStackDepth)) {
      config.stack_depth = *depth;
    } else {
      env.warn("VRAMSHIM_STACK_DEPTH", *value, "a frame count from 1 to 512", "64");
    }
  }
  if (auto value = env.get("VRAMSHIM_LIMIT")) {
    if (auto bytes = parse_size(*value)) {
      config.limit_bytes = *bytes;
    } else {
      env.warn("VRAMSHIM_LIMIT", *value, kSizeWhat, "none");
    }
  }
  if (auto value = env.get("VRAMSHIM_MAX_CACHED")) {
    if (auto bytes = parse_size(*value)) {
      config.max_cached_bytes = *bytes;
    } else {
      env.warn("VRAMSHIM_MAX_CACHED", *value, kSizeWhat, "none");
    }
  }
  if (auto value = env.get("VRAMSHIM_IDLE_RELEASE")) {
    if (is(*value, "off")) {
      config.idle_release_seconds.reset();
    } else if (auto seconds = parse_seconds(*value)) {
      // Zero seconds would release on every tick; it reads as "off".
      if (*seconds > 0) config.idle_release_seconds = *seconds;
    } else {
      env.warn("VRAMSHIM_IDLE_RELEASE", *value, "a number of seconds or off", "off");
    }
  }
  if (auto value = env.get("VRAMSHIM_FLUSH_SIGNAL")) {
    if (auto signal = parse_signal(*value)) {
      config.flush_signal = *signal;
    } else {
      env.warn("VRAMSHIM_FLUSH_SIGNAL", *value, kSignalWhat, "USR1");
    }
  }
  if (auto value = env.get("VRAMSHIM_REPORT_SIGNAL")) {
    if (auto signal = parse_signal(*value)) {
      config.report_signal = *signal;
    } else {
      env.warn("VRAMSHIM_REPORT_SIGNAL", *value, kSignalWhat, "USR2");
    }
  }
  if (auto value = env.get("VRAMSHIM_SOCKET")) {
    if (is(*value, "off")) {
      config.socket_enabled = false;
    } else if (value->size() >= 108) {  // sizeof(sockaddr_un::sun_path), NUL included
      env.warn("VRAMSHIM_SOCKET", *value, "a socket path shorter than 108 bytes",
               "per-process path");
    } else {
      config.socket_path = *value;
    }
  }
  if (auto value = env.get("VRAMSHIM_REPORT")) {
    if (is(*value, "off")) {
      config.report_enabled = false;
    } else {
      config.report_pattern = *value;
    }
  }
  if (auto value = env.get("XDG_RUNTIME_DIR")) config.runtime_dir = *value;

  return ConfigResult{std::move(config), env.take_warnings()};
}

Config load_config_from_environment() {
  ConfigResult result =
      parse_config([](const char* name) -> const char* { return std::getenv(name); });
  set_log_level(result.config.log_level);
  for (const std::string& warning : result.warnings) log(LogLevel::kWarn, "%s", warning.c_str());
  return std::move(result.config);
}

}  // namespace vramshim::control
