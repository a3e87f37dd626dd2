// Configuration from the environment: every variable, and bad values that warn once and fall back.
#include "shim/control/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "shim/attribution/event_trace.h"
#include "shim/attribution/site_history.h"
#include "shim/attribution/stack_capture.h"
#include "shim/control/size.h"

namespace vramshim::control {
namespace {

// The environment the parser sees in a test.
std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
  const auto found = g_env.find(name);
  return found == g_env.end() ? nullptr : found->second.c_str();
}

ConfigResult parse(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return parse_config(&fake_getenv);
}

TEST(SizeTest, AcceptsBytesAndBinarySuffixesInAnyCase) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("1k"), 1024u);
  EXPECT_EQ(parse_size("1KB"), 1024u);
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("3M"), 3u << 20);
  EXPECT_EQ(parse_size("3mib"), 3u << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_size("0.5K"), 512u);
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615ull);
}

TEST(SizeTest, RejectsEverythingElse) {
  for (const char* bad :
       {"", "12X", "K", "-1", "+1", "1 G", " 1G", "1G ", "1.5", "1.", ".5G", "1e3", "1GG", "1Gi",
        "18446744073709551616", "17179869184G", "0x10", "1iB"}) {
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
  }
}

TEST(ConfigTest, DefaultsWithAnEmptyEnvironment) {
  const ConfigResult result = parse({});
  const Config& config = result.config;
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_FALSE(config.disable);
  EXPECT_TRUE(config.pool);
  EXPECT_EQ(config.stacks, attribution::StackMode::kAll);
  EXPECT_EQ(config.stack_depth, 64u);
  EXPECT_EQ(config.stack_table_bytes, 256ull << 20);
  EXPECT_FALSE(config.limit_bytes);
  EXPECT_FALSE(config.max_cached_bytes);
  EXPECT_FALSE(config.idle_release_seconds);
  EXPECT_EQ(config.flush_signal, SIGUSR1);
  EXPECT_EQ(config.report_signal, SIGUSR2);
  EXPECT_TRUE(config.socket_enabled);
  EXPECT_EQ(config.socket_path, "");
  EXPECT_TRUE(config.report_enabled);
  EXPECT_EQ(config.report_pattern, "vramshim.%p.json");
  EXPECT_EQ(config.log_level, LogLevel::kWarn);
  // The configuration repeats these defaults so as not to depend on the attribution library.
  EXPECT_EQ(config.history_bytes, attribution::SiteHistory::kDefaultBudgetBytes);
  EXPECT_EQ(config.trace_events, attribution::EventTrace::kDefaultCapacity);
}

TEST(ConfigTest, ReadsEveryVariable) {
  const ConfigResult result = parse({
      {"VRAMSHIM_DISABLE", "1"},
      {"VRAMSHIM_POOL", "off"},
      {"VRAMSHIM_STACKS", "sample:512K"},
      {"VRAMSHIM_STACK_DEPTH", "16"},
      {"VRAMSHIM_STACK_TABLE", "64KiB"},
      {"VRAMSHIM_LIMIT", "8GiB"},
      {"VRAMSHIM_MAX_CACHED", "1g"},
      {"VRAMSHIM_IDLE_RELEASE", "2.5"},
      {"VRAMSHIM_FLUSH_SIGNAL", "USR2"},
      {"VRAMSHIM_REPORT_SIGNAL", "none"},
      {"VRAMSHIM_SOCKET", "/run/me/job.sock"},
      {"VRAMSHIM_REPORT", "out/%h.%p.%n.json"},
      {"VRAMSHIM_LOG", "debug"},
      {"VRAMSHIM_PYTHON", "off"},
      {"XDG_RUNTIME_DIR", "/run/user/1000"},
  });
  const Config& config = result.config;
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_TRUE(config.disable);
  EXPECT_FALSE(config.pool);
  EXPECT_FALSE(config.python);
  EXPECT_EQ(config.stacks, attribution::StackMode::kSample);
  EXPECT_EQ(config.sample_bytes, 512u * 1024);
  EXPECT_EQ(config.stack_depth, 16u);
  EXPECT_EQ(config.stack_table_bytes, 64u << 10);
  EXPECT_EQ(config.limit_bytes, 8ull << 30);
  EXPECT_EQ(config.max_cached_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(config.idle_release_seconds.value_or(0), 2.5);
  EXPECT_EQ(config.flush_signal, SIGUSR2);
  EXPECT_EQ(config.report_signal, 0);
  EXPECT_EQ(config.socket_path, "/run/me/job.sock");
  EXPECT_EQ(config.report_pattern, "out/%h.%p.%n.json");
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
  EXPECT_EQ(config.runtime_dir, "/run/user/1000");
}

TEST(ConfigTest, OffValuesAndSignalNumbers) {
  const Config config = parse({{"VRAMSHIM_STACKS", "OFF"},
                               {"VRAMSHIM_SOCKET", "off"},
                               {"VRAMSHIM_REPORT", "off"},
                               {"VRAMSHIM_IDLE_RELEASE", "off"},
                               {"VRAMSHIM_FLUSH_SIGNAL", "40"},
                               {"VRAMSHIM_REPORT_SIGNAL", "SIGUSR1"}})
                            .config;
  EXPECT_EQ(config.stacks, attribution::StackMode::kOff);
  EXPECT_FALSE(config.socket_enabled);
  EXPECT_FALSE(config.report_enabled);
  EXPECT_FALSE(config.idle_release_seconds);
  EXPECT_EQ(config.flush_signal, 40);
  EXPECT_EQ(config.report_signal, SIGUSR1);
}

TEST(ConfigTest, EmptyValuesCountAsUnset) {
  const ConfigResult result = parse({{"VRAMSHIM_LIMIT", ""}, {"VRAMSHIM_POOL", ""}});
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_FALSE(result.config.limit_bytes);
  EXPECT_TRUE(result.config.pool);
}

TEST(ConfigTest, BadLimitWarnsOnceWithTheContractWording) {
  const ConfigResult result = parse({{"VRAMSHIM_LIMIT", "12X"}});
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0],
            "VRAMSHIM_LIMIT=\"12X\" is not a size above 0 and at most 4 EiB (bytes, or a number "
            "with K/M/G/T, KB/MB/GB/TB or KiB/MiB/GiB/TiB); using the default (none)");
  EXPECT_FALSE(result.config.limit_bytes);
}

TEST(ConfigTest, EveryBadValueWarnsOnceAndFallsBackToTheDefault) {
  const std::map<std::string, std::string> bad = {
      {"VRAMSHIM_DISABLE", "maybe"},     {"VRAMSHIM_POOL", "sometimes"},
      {"VRAMSHIM_STACKS", "sample:0"},   {"VRAMSHIM_STACK_DEPTH", "0"},
      {"VRAMSHIM_LIMIT", "lots"},        {"VRAMSHIM_MAX_CACHED", "-5"},
      {"VRAMSHIM_IDLE_RELEASE", "soon"}, {"VRAMSHIM_FLUSH_SIGNAL", "9"},
      {"VRAMSHIM_REPORT_SIGNAL", "HUP"}, {"VRAMSHIM_LOG", "loud"},
      {"VRAMSHIM_PYTHON", "sometimes"},  {"VRAMSHIM_SOCKET", std::string(200, 's')},
  };
  const ConfigResult result = parse(bad);
  EXPECT_EQ(result.warnings.size(), bad.size());
  for (const auto& [name, value] : bad) {
    int mentions = 0;
    for (const std::string& warning : result.warnings) {
      if (warning.rfind(name + "=\"", 0) == 0) ++mentions;
    }
    EXPECT_EQ(mentions, 1) << name;
  }
  const Config defaults;
  const Config& config = result.config;
  EXPECT_EQ(config.disable, defaults.disable);
  EXPECT_EQ(config.pool, defaults.pool);
  EXPECT_EQ(config.stacks, defaults.stacks);
  EXPECT_EQ(config.stack_depth, defaults.stack_depth);
  EXPECT_EQ(config.limit_bytes, defaults.limit_bytes);
  EXPECT_EQ(config.max_cached_bytes, defaults.max_cached_bytes);
  EXPECT_EQ(config.idle_release_seconds, defaults.idle_release_seconds);
  EXPECT_EQ(config.flush_signal, defaults.flush_signal);
  EXPECT_EQ(config.report_signal, defaults.report_signal);
  EXPECT_EQ(config.log_level, defaults.log_level);
  EXPECT_EQ(config.python, defaults.python);
  EXPECT_EQ(config.socket_path, defaults.socket_path);
  EXPECT_TRUE(config.socket_enabled);
}

// A stack keeps at most what one capture can unwind (StackCapture::kMaxDepth frames), so the
// report's stack_depth is the depth the stacks have: a deeper request warns as any bad value does.
TEST(ConfigTest, StackDepthStopsAtWhatACaptureKeeps) {
  EXPECT_EQ(kMaxStackDepth, static_cast<unsigned>(attribution::StackCapture::kMaxDepth));
  const ConfigResult deepest = parse({{"VRAMSHIM_STACK_DEPTH", "256"}});
  EXPECT_TRUE(deepest.warnings.empty());
  EXPECT_EQ(deepest.config.stack_depth, 256u);
  const ConfigResult deeper = parse({{"VRAMSHIM_STACK_DEPTH", "512"}});
  ASSERT_EQ(deeper.warnings.size(), 1u);
  EXPECT_EQ(deeper.warnings[0],
            "VRAMSHIM_STACK_DEPTH=\"512\" is not a frame count from 1 to 256; using the default "
            "(64)");
  EXPECT_EQ(deeper.config.stack_depth, 64u);
}

TEST(ConfigTest, OtherBadForms) {
  for (const char* depth : {"257", "x", "-1", "99999999999"}) {
    EXPECT_EQ(parse({{"VRAMSHIM_STACK_DEPTH", depth}}).warnings.size(), 1u) << depth;
  }
  for (const char* stacks : {"sample:", "sample:big", "some"}) {
    EXPECT_EQ(parse({{"VRAMSHIM_STACKS", stacks}}).warnings.size(), 1u) << stacks;
  }
  EXPECT_EQ(parse({{"VRAMSHIM_LIMIT", "18446744073709551615"}}).warnings.size(), 1u);
  EXPECT_EQ(parse({{"VRAMSHIM_LIMIT", "4194304TiB"}}).config.limit_bytes, uint64_t{1} << 62);
  // FD:DEVICE:INODE: a descriptor above 2 and its pipe's device and inode, all three.
  for (const char* notices : {"4", "4:", "4:77", "4:12:", ":12:77", "2:12:77", "4:12:0", "4:x:77",
                              "4:12:77x", "4:12:-1", "4:12:77:1", "4::77"}) {
    EXPECT_EQ(parse({{"VRAMSHIM_REPORT_NOTICES", notices}}).warnings.size(), 1u) << notices;
  }
  const ConfigResult notices = parse({{"VRAMSHIM_REPORT_NOTICES", "4:15:18446744073709551615"}});
  EXPECT_TRUE(notices.warnings.empty());
  EXPECT_EQ(notices.config.report_notice_fd, 4);
  EXPECT_EQ(notices.config.report_notice_pipe.device, 15u);
  EXPECT_EQ(notices.config.report_notice_pipe.inode, 18446744073709551615u);
  for (const char* signal : {"0", "19", "65", "USR3"}) {
    EXPECT_EQ(parse({{"VRAMSHIM_FLUSH_SIGNAL", signal}}).warnings.size(), 1u) << signal;
  }
  // A second point, after so many fraction digits that their scale reached 0.
  const std::string zeros(400, '0');
  EXPECT_EQ(parse({{"VRAMSHIM_IDLE_RELEASE", "0." + zeros + ".5"}}).warnings.size(), 1u);
  // Its later digits are below a double's reach: it reads as 0, off, never as a whole number.
  const ConfigResult tiny = parse({{"VRAMSHIM_IDLE_RELEASE", "0." + zeros + "5"}});
  EXPECT_FALSE(tiny.config.idle_release_seconds);
}

// Values that parse but that the shim cannot honour, which a user would otherwise never notice:
// a period shorter than the tick that looks at the pools, a cap that fails every allocation.
TEST(ConfigTest, RefusesAnIdlePeriodBelowTheTickAndALimitOfZero) {
  for (const char* seconds : {"0.05", "0.0999", "1e-3"}) {
    const ConfigResult result = parse({{"VRAMSHIM_IDLE_RELEASE", seconds}});
    ASSERT_EQ(result.warnings.size(), 1u) << seconds;
    EXPECT_NE(result.warnings[0].find("at least 0.1"), std::string::npos) << result.warnings[0];
    EXPECT_FALSE(result.config.idle_release_seconds) << seconds;
  }
  EXPECT_EQ(parse({{"VRAMSHIM_IDLE_RELEASE", "0.1"}}).config.idle_release_seconds, 0.1);
  EXPECT_FALSE(parse({{"VRAMSHIM_IDLE_RELEASE", "0"}}).config.idle_release_seconds);
  EXPECT_TRUE(parse({{"VRAMSHIM_IDLE_RELEASE", "0"}}).warnings.empty());
  for (const char* zero : {"0", "0GiB", "0K"}) {
    const ConfigResult result = parse({{"VRAMSHIM_LIMIT", zero}});
    ASSERT_EQ(result.warnings.size(), 1u) << zero;
    EXPECT_NE(result.warnings[0].find("a size above 0"), std::string::npos) << result.warnings[0];
    EXPECT_FALSE(result.config.limit_bytes) << zero;
  }
  EXPECT_EQ(parse({{"VRAMSHIM_LIMIT", "1"}}).config.limit_bytes, 1u);
}

// Past 2^62 bytes (4 EiB) a figure reads as unknown: the cap on cached bytes is refused there, as
// the limit is.
TEST(ConfigTest, RefusesACapOnCachedBytesPast4EiB) {
  ConfigResult result = parse({{"VRAMSHIM_MAX_CACHED", "16000000T"}});
  EXPECT_FALSE(result.config.max_cached_bytes.has_value());
  EXPECT_EQ(result.warnings.size(), 1u);
  result = parse({{"VRAMSHIM_MAX_CACHED", "4194304T"}});  // 2^62 bytes
  EXPECT_EQ(result.config.max_cached_bytes, uint64_t{1} << 62);
  EXPECT_TRUE(result.warnings.empty());
  result = parse({{"VRAMSHIM_MAX_CACHED", "0"}});  // keep nothing cached
  EXPECT_EQ(result.config.max_cached_bytes, 0u);
}

// A stack table too small for a few hundred stacks, or not a size, keeps the default.
TEST(ConfigTest, RefusesAStackTableBelow64KiB) {
  for (const char* bad : {"65535", "0", "lots", "-1M"}) {
    const ConfigResult result = parse({{"VRAMSHIM_STACK_TABLE", bad}});
    EXPECT_EQ(result.config.stack_table_bytes, 256ull << 20) << bad;
    ASSERT_EQ(result.warnings.size(), 1u) << bad;
    EXPECT_NE(result.warnings[0].find("VRAMSHIM_STACK_TABLE"), std::string::npos);
  }
  EXPECT_EQ(parse({{"VRAMSHIM_STACK_TABLE", "2G"}}).config.stack_table_bytes, 2ull << 30);
}

// VRAMSHIM_SOCKET=" " made a socket named " " in the working directory.
TEST(ConfigTest, RefusesASocketPathWithBlanksAtItsEnds) {
  for (const char* path : {" ", " /tmp/a.sock", "/tmp/a.sock ", "\t"}) {
    const ConfigResult result = parse({{"VRAMSHIM_SOCKET", path}});
    EXPECT_TRUE(result.config.socket_path.empty()) << '"' << path << '"';
    EXPECT_EQ(result.warnings.size(), 1u) << '"' << path << '"';
  }
  EXPECT_EQ(parse({{"VRAMSHIM_SOCKET", "/tmp/my jobs/a.sock"}}).config.socket_path,
            "/tmp/my jobs/a.sock");
}

// The same signal for both roles: kill -USR2 flushed and wrote a report, silently.
TEST(ConfigTest, OneSignalForBothRolesKeepsTheRoleItWasSetFor) {
  ConfigResult result = parse({{"VRAMSHIM_FLUSH_SIGNAL", "USR2"}});  // the report's default
  EXPECT_EQ(result.config.flush_signal, SIGUSR2);
  EXPECT_EQ(result.config.report_signal, 0);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("flushes, and no signal writes reports"), std::string::npos);
  result = parse({{"VRAMSHIM_REPORT_SIGNAL", "USR1"}});  // the flush's default
  EXPECT_EQ(result.config.flush_signal, 0);
  EXPECT_EQ(result.config.report_signal, SIGUSR1);
  EXPECT_EQ(result.warnings.size(), 1u);
  result = parse({{"VRAMSHIM_FLUSH_SIGNAL", "40"}, {"VRAMSHIM_REPORT_SIGNAL", "40"}});
  EXPECT_EQ(result.config.flush_signal, 40);
  EXPECT_EQ(result.config.report_signal, 0);
  result = parse({{"VRAMSHIM_FLUSH_SIGNAL", "none"}, {"VRAMSHIM_REPORT_SIGNAL", "none"}});
  EXPECT_TRUE(result.warnings.empty());
}

TEST(ConfigTest, RefusesEverySignalTheKernelTheCRuntimeOrAJvmUses) {
  // Faults (a handler that returns retries the fault forever), abort, the unstoppable ones,
  // termination and job control, timers and profilers, and glibc's own real-time signals.
  for (int signal_number :
       {SIGSEGV, SIGBUS,    SIGFPE,  SIGILL,  SIGABRT,  SIGKILL, SIGSTOP, SIGTRAP, SIGSYS,  SIGHUP,
        SIGINT,  SIGQUIT,   SIGTERM, SIGPIPE, SIGALRM,  SIGCHLD, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU,
        SIGPROF, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG,  SIGIO,   32,      33}) {
    const std::string text = std::to_string(signal_number);
    for (const char* name : {"VRAMSHIM_FLUSH_SIGNAL", "VRAMSHIM_REPORT_SIGNAL"}) {
      const ConfigResult result = parse({{name, text}});
      ASSERT_EQ(result.warnings.size(), 1u) << name << "=" << text;
      EXPECT_NE(result.warnings[0].find("real-time signal"), std::string::npos);
    }
    const Config config = parse({{"VRAMSHIM_FLUSH_SIGNAL", text}}).config;
    EXPECT_EQ(config.flush_signal, SIGUSR1) << text;
  }
  for (int signal_number : {SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMIN + 5, SIGRTMAX}) {
    const ConfigResult result = parse({{"VRAMSHIM_FLUSH_SIGNAL", std::to_string(signal_number)},
                                       {"VRAMSHIM_REPORT_SIGNAL", "none"}});
    EXPECT_TRUE(result.warnings.empty()) << signal_number;
    EXPECT_EQ(result.config.flush_signal, signal_number);
  }
}

TEST(ConfigTest, WarningsShowControlCharactersSafely) {
  const ConfigResult result = parse({{"VRAMSHIM_LIMIT", "1\n2"}});
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0].find('\n'), std::string::npos);
}

TEST(ConfigTest, LoadingFromTheEnvironmentPrintsOneLinePerBadValue) {
  ::setenv("VRAMSHIM_LIMIT", "12X", 1);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const int saved_stderr = ::dup(2);
  ::dup2(pipe_fds[1], 2);
  const Config config = load_config_from_environment();
  ::dup2(saved_stderr, 2);
  ::close(saved_stderr);
  ::close(pipe_fds[1]);
  ::unsetenv("VRAMSHIM_LIMIT");
  char printed[512] = {};
  const ssize_t length = ::read(pipe_fds[0], printed, sizeof(printed) - 1);
  ::close(pipe_fds[0]);
  EXPECT_GT(length, 0);
  EXPECT_EQ(std::string(printed),
            "vramshim: VRAMSHIM_LIMIT=\"12X\" is not a size above 0 and at most 4 EiB (bytes, or a "
            "number with K/M/G/T, KB/MB/GB/TB or KiB/MiB/GiB/TiB); using the default (none)\n");
  EXPECT_FALSE(config.limit_bytes);
}

}  // namespace
}  // namespace vramshim::control
