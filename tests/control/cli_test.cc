// The process-control subcommands against real processes: `run` with a stand-in shim, and ps,
// flush, stats and snapshot against fake shimmed processes that serve the control socket.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;

std::string absolute(const char* runfile) {
  char resolved[PATH_MAX];
  return ::realpath(runfile, resolved) != nullptr ? resolved : runfile;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

struct Result {
  int code;
  std::string out;
  std::string err;
};

// Another local user (nobody), for the sockets and directories the CLI must not trust.
constexpr uid_t kOtherUid = 65534;

// A Unix socket bound at `path` (listening if asked), or -1.
int bound_socket(const std::string& path, bool listening) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      (listening && ::listen(fd, 8) != 0)) {
    return -1;
  }
  return fd;
}

// The pid of a process that has come and gone.
pid_t dead_pid() {
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  return dead;
}

// One request sent straight to a socket, bypassing the CLI and its checks; the answer line.
std::string ask_directly(const std::string& path, const std::string& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) answer.append(buffer, n);
  }
  ::close(fd);
  return answer;
}

// Whether anything, a dangling link included, is at `path`.
bool exists(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

// An impostor serving a control socket: what it was asked is written to `requests` (non-blocking
// read end), and it answers everything with made-up figures.
struct Impostor {
  pid_t pid;
  int requests;
  std::string socket;
};

// Everything the impostor was asked so far.
std::string requests_to(const Impostor& impostor) {
  std::string received;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(impostor.requests, buffer, sizeof(buffer))) > 0) received.append(buffer, n);
  return received;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = absolute("tests/control/control_cli");
    fake_process_ = absolute("tests/control/fake_shimmed_process");
    empty_preload_ = absolute("tests/control/libempty_preload.so");
    char pattern[] = "/tmp/vramshim-cli-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    socket_dir_ = dir_ + "/vramshim";
  }

  void TearDown() override {
    for (pid_t pid : fakes_) {
      ::kill(pid, SIGTERM);
      int status;
      ::waitpid(pid, &status, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }

  // Starts the CLI with `args` in dir_, the test's environment plus `env`; does not wait.
  pid_t spawn_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    const pid_t child = ::fork();
    if (child == 0) {
      if (::chdir(dir_.c_str()) != 0) _exit(120);
      ::unsetenv("LD_PRELOAD");
      ::setenv("VRAMSHIM_LIB", empty_preload_.c_str(), 1);
      ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
      for (const std::string& variable : env) ::putenv(const_cast<char*>(variable.c_str()));
      const int out = ::open((dir_ + "/cli.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open((dir_ + "/cli.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      std::vector<char*> argv{const_cast<char*>(cli_.c_str())};
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(cli_.c_str(), argv.data());
      _exit(121);
    }
    return child;
  }

  Result finish(pid_t child) {
    int status = 0;
    ::waitpid(child, &status, 0);
    return Result{exit_code(status), read_file(dir_ + "/cli.out"), read_file(dir_ + "/cli.err")};
  }

  Result cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return finish(spawn_cli(args, env));
  }

  // A process serving the control socket in dir_/vramshim, as a process under the shim would; or,
  // given `directory`, serving DIRECTORY/PID.sock with PID its own pid unless `named_pid` is set.
  pid_t start_fake_process(const std::string& directory = {}, pid_t named_pid = 0) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::dup2(ready[1], 1);
      ::close(ready[0]);
      ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
      ::unsetenv("VRAMSHIM_SOCKET");
      if (!directory.empty()) {
        const pid_t name = named_pid != 0 ? named_pid : ::getpid();
        ::setenv("VRAMSHIM_SOCKET", (directory + "/" + std::to_string(name) + ".sock").c_str(), 1);
      }
      ::execl(fake_process_.c_str(), "fake_shimmed_process", "--serve", nullptr);
      _exit(121);
    }
    ::close(ready[1]);
    char line[256] = {};
    EXPECT_GT(::read(ready[0], line, sizeof(line) - 1), 0);
    ::close(ready[0]);
    const std::string expected = directory.empty() ? socket_dir_ : directory;
    EXPECT_EQ(std::string(line).rfind("ready " + expected + "/", 0), 0u) << line;
    fakes_.push_back(child);
    return child;
  }

  // start_fake_process() with `env` ("NAME=VALUE") added to its environment.
  pid_t start_fake_process_with(const std::vector<std::string>& env) {
    for (const std::string& variable : env) ::putenv(const_cast<char*>(variable.c_str()));
    const pid_t pid = start_fake_process();
    for (const std::string& variable : env)
      ::unsetenv(variable.substr(0, variable.find('=')).c_str());
    return pid;
  }

  // A fake shimmed process running as `uid`, without XDG_RUNTIME_DIR (so its sockets are in
  // /tmp/vramshim-UID); *socket, if given, is where it says its socket is (empty: none).
  pid_t start_fake_process_as(uid_t uid, std::string* socket = nullptr) {
    // A copy the other user can run (the runfiles may lie under root's home).
    EXPECT_EQ(::chmod(dir_.c_str(), 0711), 0);
    const std::string copy = dir_ + "/fake_shimmed_process";
    EXPECT_EQ(std::system(("cp " + fake_process_ + " " + copy + " && chmod 755 " + copy).c_str()),
              0);
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::dup2(ready[1], 1);
      ::close(ready[0]);
      ::unsetenv("XDG_RUNTIME_DIR");
      ::unsetenv("VRAMSHIM_SOCKET");
      if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
          ::setresuid(uid, uid, uid) != 0) {
        _exit(122);
      }
      ::execl(copy.c_str(), "fake_shimmed_process", "--serve", nullptr);
      _exit(121);
    }
    ::close(ready[1]);
    char line[256] = {};
    EXPECT_GT(::read(ready[0], line, sizeof(line) - 1), 0) << "the fake process did not start";
    ::close(ready[0]);
    if (socket != nullptr) {
      const std::string said(line);
      *socket = said.substr(std::min(said.size(), sizeof("ready ") - 1));
      if (!socket->empty() && socket->back() == '\n') socket->pop_back();
    }
    fakes_.push_back(child);
    return child;
  }

  // The CLI run as `uid` (from a copy that user may run), without XDG_RUNTIME_DIR, as in a batch
  // job.
  Result cli_as(uid_t uid, const std::vector<std::string>& args) {
    EXPECT_EQ(::chmod(dir_.c_str(), 0711), 0);
    const std::string copy = dir_ + "/control_cli";
    EXPECT_EQ(std::system(("cp " + cli_ + " " + copy + " && chmod 755 " + copy).c_str()), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::unsetenv("XDG_RUNTIME_DIR");
      ::dup2(::open((dir_ + "/cli.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      ::dup2(::open((dir_ + "/cli.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
          ::setresuid(uid, uid, uid) != 0) {
        _exit(122);
      }
      std::vector<char*> argv{const_cast<char*>(copy.c_str())};
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(copy.c_str(), argv.data());
      _exit(121);
    }
    return finish(child);
  }

  // Stops fake process `pid` as its owner would (SIGTERM) and waits for it to end.
  void stop_fake_process(pid_t pid) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    fakes_.erase(std::remove(fakes_.begin(), fakes_.end(), pid), fakes_.end());
  }

  // A process of kOtherUid serving DIRECTORY/PID.sock under its own pid, as another local user
  // could plant one.
  Impostor start_impostor(const std::string& directory) {
    int ready[2], requests[2];
    EXPECT_EQ(::pipe(ready), 0);
    EXPECT_EQ(::pipe(requests), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(ready[0]);
      ::close(requests[0]);
      if (::setgroups(0, nullptr) != 0 || ::setresgid(kOtherUid, kOtherUid, kOtherUid) != 0 ||
          ::setresuid(kOtherUid, kOtherUid, kOtherUid) != 0) {
        _exit(122);
      }
      const int listener =
          bound_socket(directory + "/" + std::to_string(::getpid()) + ".sock", true);
      if (listener < 0) _exit(123);
      if (::write(ready[1], "r", 1) != 1) _exit(124);
      static const char kSpoofed[] =
          "{\"ok\":true,\"released_bytes\":4242,\"devices\":[{\"device\":0,\"in_use_bytes\":4242,"
          "\"cached_bytes\":4242,\"peak_in_use_bytes\":4242,\"limit_bytes\":null}]}\n";
      for (;;) {
        const int client = ::accept(listener, nullptr, nullptr);
        if (client < 0) continue;
        char request[4096];
        const ssize_t n = ::read(client, request, sizeof(request));
        if (n > 0 && ::write(requests[1], request, static_cast<size_t>(n)) == n) {
          ssize_t ignored = ::write(client, kSpoofed, sizeof(kSpoofed) - 1);
          (void)ignored;
        }
        ::close(client);
      }
    }
    ::close(ready[1]);
    ::close(requests[1]);
    char byte = 0;
    EXPECT_EQ(::read(ready[0], &byte, 1), 1) << "the impostor did not start";
    ::close(ready[0]);
    ::fcntl(requests[0], F_SETFL, O_NONBLOCK);
    fakes_.push_back(child);
    return {child, requests[0], directory + "/" + std::to_string(child) + ".sock"};
  }

  std::string cli_, fake_process_, empty_preload_, dir_, socket_dir_;
  std::vector<pid_t> fakes_;
};

TEST_F(CliTest, RunExitsWithTheCommandsStatus) {
  EXPECT_EQ(cli({"run", "--report", "off", "--", "sh", "-c", "exit 3"}).code, 3);
  EXPECT_EQ(cli({"run", "--report", "off", "--", "true"}).code, 0);
}

TEST_F(CliTest, RunExitsWith128PlusTheSignalThatKilledTheCommand) {
  EXPECT_EQ(cli({"run", "--report", "off", "--", "sh", "-c", "kill -KILL $$"}).code, 128 + SIGKILL);
}

TEST_F(CliTest, RunPassesTheShimAndTheOptionsInTheEnvironment) {
  const Result result = cli({"run", "--limit", "1G", "--stacks", "sample:1M", "--no-pool",
                             "--socket", "off", "--report", "off", "--", "sh", "-c",
                             "echo \"$LD_PRELOAD|$VRAMSHIM_LIMIT|$VRAMSHIM_STACKS|$VRAMSHIM_POOL|"
                             "$VRAMSHIM_SOCKET|$VRAMSHIM_REPORT\""},
                            {"LD_PRELOAD=" + empty_preload_});
  EXPECT_EQ(result.code, 0) << result.err;
  // The shim goes first, before what LD_PRELOAD already held.
  EXPECT_EQ(result.out, empty_preload_ + ":" + empty_preload_ + "|1G|sample:1M|off|off|off\n");
}

TEST_F(CliTest, RunRefusesBadOptionsAndMissingCommands) {
  const Result bad_limit = cli({"run", "--limit", "12X", "--", "true"});
  EXPECT_EQ(bad_limit.code, 2);  // a usage error
  EXPECT_EQ(
      bad_limit.err,
      "vramshim: run: --limit 12X is not a size (bytes, or a number with K/M/G/T, KB/MB/GB/TB or "
      "KiB/MiB/GiB/TiB)\n");
  // Sizes the shim would refuse, running the job without a cap.
  for (const char* limit : {"0", "5000000T"}) {
    const Result refused = cli({"run", "--limit", limit, "--", "true"});
    EXPECT_EQ(refused.code, 2) << limit;
    EXPECT_EQ(refused.err, std::string("vramshim: run: --limit ") + limit +
                               " is not a size above 0 and at most 4 EiB\n");
  }
  const Result missing = cli({"run", "--report", "off", "--", "/nonexistent/program"});
  EXPECT_EQ(missing.code, 127);
  EXPECT_EQ(missing.err,
            "vramshim: cannot run '/nonexistent/program': No such file or directory\n");
  const Result no_shim = cli({"run", "--", "true"}, {"VRAMSHIM_LIB=/nonexistent/libvramshim.so"});
  EXPECT_EQ(no_shim.code, 1);
  EXPECT_EQ(no_shim.err,
            "vramshim: VRAMSHIM_LIB=/nonexistent/libvramshim.so is not a readable file\n");
}

TEST_F(CliTest, RunForwardsSigterm) {
  const pid_t run = spawn_cli({"run", "--report", "off", "--", "sh", "-c",
                               "trap 'exit 42' TERM; touch ready; while :; do sleep 0.05; done"},
                              {});
  for (int i = 0; i < 1000 && ::access((dir_ + "/ready").c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(::access((dir_ + "/ready").c_str(), F_OK), 0);
  ::kill(run, SIGTERM);
  EXPECT_EQ(finish(run).code, 42);
}

TEST_F(CliTest, RunSummarizesTheReportTheProcessAnnounced) {
  const json report = {
      {"format", "vramshim-report"},
      {"version", 1},
      {"reason", "exit"},
      {"sequence", 0},
      {"process",
       {{"pid", 7},
        {"cmdline", {"app"}},
        {"exe", "/usr/bin/app"},
        {"host", "node"},
        {"rank", nullptr},
        {"start_time", 1.0},
        {"report_time", 2.0}}},
      {"config", {{"pool", true}, {"stacks", "all"}, {"sample_bytes", 0}, {"stack_depth", 64}}},
      {"devices", json::array()},
      {"timeline", {{"interval_ms", 100}, {"samples", json::array()}}},
      {"peak", {{"in_use_bytes", 1 << 30}, {"time", 1.5}}},
      {"modules", {{{"id", 0}, {"path", "/usr/bin/app"}, {"base", 4096}, {"build_id", ""}}}},
      {"frames",
       {{{"id", 0}, {"module", 0}, {"offset", 16}, {"function", "_Z17leak_three_blocksv"}},
        {{"id", 1}, {"module", 0}, {"offset", 32}, {"function", "main"}},
        {{"id", 2}, {"module", 0}, {"offset", 48}, {"function", nullptr}}}},
      {"stacks", {{{"id", 0}, {"frames", {0, 1, 2}}}, {{"id", 1}, {"frames", {1}}}}},
      {"sites",
       {{{"stack", 0},
         {"kind", "device"},
         {"live_bytes", 3 << 20},
         {"live_count", 3},
         {"total_bytes", 3 << 20},
         {"total_count", 3},
         {"peak_bytes", 3 << 20},
         {"bytes_at_peak", 3 << 20}},
        {{"stack", 1},
         {"kind", "async"},
         {"live_bytes", 0},
         {"live_count", 0},
         {"total_bytes", 1 << 30},
         {"total_count", 1},
         {"peak_bytes", 1 << 30},
         {"bytes_at_peak", 1 << 30}}}},
  };
  std::ofstream(dir_ + "/fixture.json") << report.dump();
  // The command announces its report as the shim does, on the pipe `run` gives it.
  const Result result =
      cli({"run", "--report", dir_ + "/reports/r.%p.%n.json", "--", "sh", "-c",
           "mkdir -p reports && cp fixture.json reports/r.$$.0.json && "
           "echo \"$$ exit $PWD/reports/r.$$.0.json\" >&${VRAMSHIM_REPORT_NOTICES%%:*} && exit 5"});
  EXPECT_EQ(result.code, 5);
  EXPECT_NE(result.err.find("vramshim: report " + dir_ + "/reports/r."), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("sites:    2 sites; live 3.0 MiB in 3 allocations"), std::string::npos)
      << result.err;
  // Largest at the peak first, names demangled; then what was still allocated at the end.
  const size_t held = result.err.find("held at the peak:");
  const size_t async_site = result.err.find("1.0 GiB  main", held);
  const size_t device_site = result.err.find("3.0 MiB  leak_three_blocks()", held);
  const size_t leaks = result.err.find("still allocated at the end");
  EXPECT_NE(async_site, std::string::npos) << result.err;
  EXPECT_NE(device_site, std::string::npos) << result.err;
  EXPECT_LT(async_site, device_site);
  EXPECT_LT(device_site, leaks);
}

TEST_F(CliTest, RunSaysSoWhenThereIsNoReport) {
  const Result result = cli({"run", "--", "true"});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.err.find("vramshim: no report from pid"), std::string::npos) << result.err;
}

TEST_F(CliTest, PsListsLiveProcessesAndRemovesStaleSockets) {
  const pid_t first = start_fake_process();
  const pid_t second = start_fake_process();
  // A socket left behind by a process that is gone.
  const pid_t dead = dead_pid();
  const std::string stale = socket_dir_ + "/" + std::to_string(dead) + ".sock";
  const int fd = bound_socket(stale, false);
  ASSERT_GE(fd, 0);
  ::close(fd);

  const Result result = cli({"ps", "--dir", socket_dir_});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("PID      IN USE      CACHED        PEAK  COMMAND"), std::string::npos);
  for (pid_t pid : {first, second}) {
    const std::string row = std::to_string(pid) +
                            "     3.0 MiB    64.0 MiB     5.0 MiB  fake_shimmed_process --serve\n";
    EXPECT_NE(result.out.find(row), std::string::npos) << result.out;
  }
  EXPECT_EQ(result.out.find(std::to_string(dead) + " "), std::string::npos) << result.out;
  EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "the stale socket is still there";
}

TEST_F(CliTest, FlushAllFlushesEveryProcess) {
  const std::vector<pid_t> pids = {start_fake_process(), start_fake_process(),
                                   start_fake_process()};
  const Result result = cli({"flush", "--all", "--dir", socket_dir_});
  EXPECT_EQ(result.code, 0) << result.err;
  for (pid_t pid : pids) {
    EXPECT_NE(result.out.find(std::to_string(pid) + ": released 64.0 MiB (67108864 bytes)\n"),
              std::string::npos)
        << result.out;
    const json stats = json::parse(cli({"stats", std::to_string(pid), "--json"}).out);
    EXPECT_EQ(stats["devices"][0]["cached_bytes"], 0);
  }
}

TEST_F(CliTest, FlushByPidFindsTheSocketThroughXdgRuntimeDir) {
  const pid_t pid = start_fake_process();
  const Result result = cli({"flush", std::to_string(pid)});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, std::to_string(pid) + ": released 64.0 MiB (67108864 bytes)\n");
}

TEST_F(CliTest, ClearErrorForAProcessWithoutSocket) {
  const std::string pid = std::to_string(::getpid());
  const Result result = cli({"flush", pid});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.err,
            "vramshim: no vramshim socket for pid " + pid + " (is it running under vramshim?)\n");
  EXPECT_EQ(cli({"stats", pid}).err, result.err);
  EXPECT_EQ(cli({"flush"}).err, "vramshim: flush needs PID… or --all\n");
}

TEST_F(CliTest, StatsForPeopleScriptsAndPrometheus) {
  const pid_t pid = start_fake_process();
  const std::string id = std::to_string(pid);
  const Result text = cli({"stats", id});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(
      text.out.find("device 0: in use 3.0 MiB, cached 64.0 MiB, reserved 67.0 MiB, peak 5.0 MiB, "
                    "limit none"),
      std::string::npos)
      << text.out;

  EXPECT_EQ(json::parse(cli({"stats", id, "--json"}).out)["devices"][0]["pool_hits"], 1000);

  const Result prometheus = cli({"stats", id, "--prometheus"});
  EXPECT_EQ(prometheus.code, 0) << prometheus.err;
  EXPECT_NE(prometheus.out.find("# TYPE vramshim_in_use_bytes gauge\n"
                                "vramshim_in_use_bytes{pid=\"" +
                                id + "\",uid=\"" + std::to_string(::geteuid()) +
                                "\",command=\"fake_shimmed_process --pretend\",host=\"fakehost\","
                                "device=\"0\"} 3145728\n"),
            std::string::npos)
      << prometheus.out;
  EXPECT_NE(prometheus.out.find("# TYPE vramshim_driver_alloc_calls_total counter\n"),
            std::string::npos);
  EXPECT_NE(prometheus.out.find("# HELP vramshim_cached_bytes "), std::string::npos);
  EXPECT_EQ(prometheus.out.find("limit_bytes"), std::string::npos);  // null: no sample
}

// `promtool check metrics` of `text`: its exit status and what it printed (lint warnings included).
Result promtool_check(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/metrics.prom";
  std::ofstream(path) << text;
  const std::string output = dir + "/promtool.out";
  const int status =
      std::system(("promtool check metrics < " + path + " > " + output + " 2>&1").c_str());
  return Result{exit_code(status), read_file(output), ""};
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST_F(CliTest, StatsAllPrintsEveryProcessOnceForPrometheusAndSkipsASilentOne) {
  const pid_t first = start_fake_process();
  const pid_t second = start_fake_process();
  const pid_t stopped = start_fake_process();
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  // A socket nobody listens on, and one served by another process than its name says.
  const int stale = bound_socket(socket_dir_ + "/" + std::to_string(dead_pid()) + ".sock", false);
  ASSERT_GE(stale, 0);
  ::close(stale);
  start_fake_process(socket_dir_, dead_pid());
  const auto start = std::chrono::steady_clock::now();
  const Result result =
      cli({"stats", "--all", "--prometheus", "--dir", socket_dir_, "--budget", "500"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::kill(stopped, SIGCONT);
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_LT(seconds, 5.0) << "the collection waited for the stopped process";
  EXPECT_NE(result.err.find("vramshim: pid " + std::to_string(stopped) +
                            " did not answer stats within 500 ms; skipped\n"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(occurrences(result.out, "# HELP vramshim_in_use_bytes "), 1u) << result.out;
  EXPECT_EQ(occurrences(result.out, "# TYPE vramshim_in_use_bytes gauge\n"), 1u);
  for (const pid_t pid : {first, second}) {
    const std::string labels = "{pid=\"" + std::to_string(pid) + "\",uid=\"" +
                               std::to_string(::geteuid()) +
                               "\",command=\"fake_shimmed_process --pretend\",host=\"fakehost\"";
    EXPECT_NE(result.out.find("vramshim_in_use_bytes" + labels + ",device=\"0\"} 3145728\n"),
              std::string::npos)
        << result.out;
    EXPECT_NE(
        result.out.find("vramshim_out_of_memory_failures_total" + labels + ",device=\"0\"} 2\n"),
        std::string::npos);
    // Two sites named by the same frame are one series.
    EXPECT_NE(result.out.find("vramshim_site_live_bytes" + labels +
                              ",kind=\"device\",site=\"train.py:57 forward\"} 3145728\n"),
              std::string::npos);
    EXPECT_NE(result.out.find("vramshim_site_live_bytes" + labels +
                              ",kind=\"device\",site=\"load \\\"weights\\\"\\\\n\"} 524288\n"),
              std::string::npos);
  }
  EXPECT_EQ(result.out.find("pid=\"" + std::to_string(stopped) + "\""), std::string::npos);
  EXPECT_NE(result.out.find("vramshim_processes_answered 2\n"), std::string::npos);
  const std::string uid = "{uid=\"" + std::to_string(::geteuid()) + "\",";
  EXPECT_NE(result.out.find("vramshim_processes_skipped" + uid + "reason=\"silent\"} 1\n" +
                            "vramshim_processes_skipped" + uid + "reason=\"gone\"} 1\n" +
                            "vramshim_processes_skipped" + uid + "reason=\"untrusted\"} 1\n" +
                            "vramshim_processes_skipped" + uid + "reason=\"failed\"} 0\n" +
                            "vramshim_processes_skipped" + uid + "reason=\"oversized\"} 0\n"),
            std::string::npos)
      << result.out;
  const Result lint = promtool_check(dir_, result.out);
  EXPECT_EQ(lint.code, 0) << lint.out;
  EXPECT_EQ(lint.out, "") << "promtool lint warnings";

  // --top-sites bounds the sites of each process.
  const Result one_site =
      cli({"stats", "--all", "--prometheus", "--dir", socket_dir_, "--top-sites", "1"});
  EXPECT_EQ(occurrences(one_site.out, "vramshim_site_live_bytes{"), 3u) << one_site.out;
  EXPECT_NE(one_site.out.find("site=\"train.py:57 forward\"} 2097152\n"), std::string::npos);
}

TEST_F(CliTest, StatsAllNamesTheJobAndRankTheProcessesReport) {
  const pid_t pid = start_fake_process_with({"RANK=3", "SLURM_JOB_ID=4711"});
  const Result result = cli({"stats", "--all", "--prometheus", "--dir", socket_dir_});
  EXPECT_NE(result.out.find("vramshim_in_use_bytes{pid=\"" + std::to_string(pid) + "\",uid=\"" +
                            std::to_string(::geteuid()) +
                            "\",command=\"fake_shimmed_process --pretend\",host=\"fakehost\","
                            "rank=\"3\",job_id=\"4711\",device=\"0\"} 3145728\n"),
            std::string::npos)
      << result.out;
}

TEST_F(CliTest, StatsAllWritesATextfileAtomically) {
  start_fake_process();
  const std::string textfiles = dir_ + "/textfiles";
  ASSERT_EQ(::mkdir(textfiles.c_str(), 0755), 0);
  // A link at the name is replaced, never written through.
  ASSERT_EQ(::symlink((dir_ + "/elsewhere").c_str(), (textfiles + "/vramshim.prom").c_str()), 0);
  const Result result = cli({"stats", "--all", "--dir", socket_dir_, "--textfile", textfiles});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(exists(dir_ + "/elsewhere"));
  const std::string text = read_file(textfiles + "/vramshim.prom");
  EXPECT_EQ(text.rfind("# HELP vramshim_in_use_bytes ", 0), 0u) << text;
  EXPECT_NE(text.find("vramshim_processes_answered 1\n"), std::string::npos);
  EXPECT_EQ(promtool_check(dir_, text).out, "");
}

TEST_F(CliTest, StatsAllAsksEveryUsersProcessesWhenRunAsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  // A process of another user under the shim, with its sockets where the shim of that user puts
  // them when XDG_RUNTIME_DIR is unset.
  const pid_t other = start_fake_process_as(kOtherUid);
  const Result result = cli({"stats", "--all", "--json"});
  EXPECT_EQ(result.code, 0) << result.err;
  bool found = false;
  const json answers = json::parse(result.out);
  for (const json& process : answers["processes"]) {
    if (process["pid"] == other) {
      found = true;
      EXPECT_EQ(process["stats"]["devices"][0]["in_use_bytes"], 3 << 20);
      EXPECT_EQ(process["sites"].size(), 3u);
    }
  }
  EXPECT_TRUE(found) << other << ": " << result.out;
}

// Root sees every user's processes: each one's uid is shown with it, so that a process is never
// taken for another user's.
TEST_F(CliTest, StatsAllShowsTheUidOfEachProcess) {
  const pid_t pid = start_fake_process();
  const std::string uid = std::to_string(::geteuid());
  const Result text = cli({"stats", "--all", "--dir", socket_dir_});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(
      text.out.rfind(
          "pid " + std::to_string(pid) + "  uid " + uid + "  fake_shimmed_process --pretend\n", 0),
      0u)
      << text.out;
  const Result as_json = cli({"stats", "--all", "--dir", socket_dir_, "--format", "json"});
  EXPECT_EQ(as_json.code, 0) << as_json.err;
  const json doc = json::parse(as_json.out);
  ASSERT_EQ(doc["processes"].size(), 1u) << as_json.out;
  EXPECT_EQ(doc["processes"][0]["pid"], pid);
  EXPECT_EQ(doc["processes"][0].value("uid", json()), ::geteuid());
}

// More names PID.sock than are looked at: the JSON names the user, so that a script reading it
// does not take the processes not asked for none running.
TEST_F(CliTest, StatsAllJsonNamesAUserWhoseListingWasCut) {
  ASSERT_EQ(::mkdir(socket_dir_.c_str(), 0700), 0);
  const Result whole = cli({"stats", "--all", "--dir", socket_dir_, "--format", "json"});
  EXPECT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(json::parse(whole.out)["listings_cut"], json::array()) << whole.out;
  for (int pid = 1; pid <= 4097; ++pid) {
    const std::string path = socket_dir_ + "/" + std::to_string(pid) + ".sock";
    ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0) << path;
  }
  const Result cut = cli({"stats", "--all", "--dir", socket_dir_, "--format", "json"});
  EXPECT_EQ(cut.code, 0) << cut.err;
  EXPECT_EQ(json::parse(cut.out)["listings_cut"], json::array({::geteuid()})) << cut.out;
}

// Another user made /tmp/vramshim-UID before any process of that user did (a batch job, without
// XDG_RUNTIME_DIR), and a sticky /tmp lets the user neither remove nor use it: the user's processes
// still have their control sockets, in directories of their own that nobody can make first or
// guess, where the CLI finds them, for the user and for root; each goes when its process ends.
TEST_F(CliTest, ASocketDirectoryTakenByAnotherUserDisablesNoSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as other users";
  const uid_t user = 420000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string taken = "/tmp/vramshim-" + std::to_string(user);
  ASSERT_EQ(::mkdir(taken.c_str(), 0700), 0);
  ASSERT_EQ(::chown(taken.c_str(), kOtherUid, kOtherUid), 0);
  std::string socket;
  const pid_t pid = start_fake_process_as(user, &socket);
  const std::string own = socket.substr(0, socket.rfind('/'));
  EXPECT_EQ(own.rfind(taken + ".", 0), 0u)
      << "no socket, or not in a directory of its own: " << socket;

  const Result all = cli({"stats", "--all", "--format", "json"});
  EXPECT_EQ(all.code, 0) << all.err;
  bool found = false;
  const json answers = json::parse(all.out);
  for (const json& process : answers["processes"]) {
    if (process["pid"] == pid) {
      found = true;
      EXPECT_EQ(process.value("uid", json()), user);
      EXPECT_EQ(process["stats"]["devices"][0]["in_use_bytes"], 3 << 20);
    }
  }
  EXPECT_TRUE(found) << "root did not find pid " << pid << ": " << all.out;
  EXPECT_NE(all.err.find(taken + " is owned by uid 65534, not " + std::to_string(user)),
            std::string::npos)
      << all.err;

  const Result own_stats = cli_as(user, {"stats", std::to_string(pid), "--format", "json"});
  EXPECT_EQ(own_stats.code, 0) << own_stats.err;
  if (own_stats.code == 0) {
    EXPECT_EQ(json::parse(own_stats.out)["devices"][0]["in_use_bytes"], 3 << 20);
  }

  stop_fake_process(pid);
  EXPECT_FALSE(exists(socket)) << socket;
  EXPECT_FALSE(exists(own)) << own;
  std::system(("rm -rf " + taken + " " + taken + ".*").c_str());
}

TEST_F(CliTest, SnapshotWritesTheReportWhereAsked) {
  const pid_t pid = start_fake_process();
  const Result result = cli({"snapshot", std::to_string(pid), "-o", "snap.json"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "wrote " + dir_ + "/snap.json\n");
  EXPECT_EQ(json::parse(read_file(dir_ + "/snap.json"))["reason"], "socket");
  const Result failure = cli({"snapshot", std::to_string(pid), "-o", "/nonexistent/snap.json"});
  EXPECT_EQ(failure.code, 1);
  EXPECT_EQ(failure.err,
            "vramshim: pid " + std::to_string(pid) + ": cannot write /nonexistent/snap.json\n");
}

// Another user made the socket directory before any of our processes did (here the XDG one; the
// same goes for /tmp/vramshim-0) and serves a socket in it: nothing in it is asked or believed.
TEST_F(CliTest, RefusesASocketDirectoryOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  ASSERT_EQ(::chmod(dir_.c_str(), 0711), 0);  // the other user must reach its directory
  ASSERT_EQ(::mkdir(socket_dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(socket_dir_.c_str(), kOtherUid, kOtherUid), 0);
  const Impostor impostor = start_impostor(socket_dir_);
  const std::string pid = std::to_string(impostor.pid);
  const std::string why = socket_dir_ + " is owned by uid 65534, not 0";

  for (const std::vector<std::string>& listing :
       {std::vector<std::string>{"ps", "--dir", socket_dir_},
        std::vector<std::string>{"flush", "--all", "--dir", socket_dir_}}) {
    const Result result = cli(listing);
    EXPECT_EQ(result.code, 0) << listing[0] << ": " << result.err;
    EXPECT_EQ(result.out.find(pid), std::string::npos) << listing[0] << ": " << result.out;
    EXPECT_NE(result.err.find("vramshim: " + why + "; its sockets are ignored\n"),
              std::string::npos)
        << listing[0] << ": " << result.err;
  }
  for (const std::vector<std::string>& by_pid :
       {std::vector<std::string>{"flush", pid}, std::vector<std::string>{"stats", pid},
        std::vector<std::string>{"snapshot", pid, "-o", "snap.json"}}) {
    const Result result = cli(by_pid);
    EXPECT_EQ(result.code, 1) << by_pid[0] << ": " << result.out;
    EXPECT_EQ(result.out, "") << by_pid[0];
    EXPECT_EQ(
        result.err.rfind("vramshim: no trusted vramshim socket for pid " + pid + ": " + why, 0), 0u)
        << by_pid[0] << ": " << result.err;
  }
  EXPECT_EQ(requests_to(impostor), "");
  EXPECT_TRUE(exists(impostor.socket));
}

// The runtime directory comes from the environment (a job's, for root): refusals quote it without
// the controls a terminal would act on (here OSC 0, a window title).
TEST_F(CliTest, RefusalsQuoteTheirDirectoryWithoutControls) {
  const std::string runtime = dir_ + "/run\x1b]0;owned\x07";
  ASSERT_EQ(::mkdir(runtime.c_str(), 0700), 0);
  const std::string sockets = runtime + "/vramshim";
  ASSERT_EQ(::mkdir(sockets.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(sockets.c_str(), 0777), 0);  // others may write in it: refused
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"ps"}, std::vector<std::string>{"flush", "--all"},
        std::vector<std::string>{"stats", "--all"}}) {
    const Result result = cli(args, {"XDG_RUNTIME_DIR=" + runtime});
    EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << args[0] << ": " << result.err;
    EXPECT_EQ(result.err.find('\x07'), std::string::npos) << args[0] << ": " << result.err;
    EXPECT_NE(result.err.find("run?]0;owned?/vramshim"), std::string::npos)
        << args[0] << ": " << result.err;
  }
}

// The socket directory is a link to a directory of ours: nothing in it is asked or removed.
TEST_F(CliTest, RefusesASymlinkedSocketDirectoryAndRemovesNothingThrough) {
  const std::string target = dir_ + "/elsewhere";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), socket_dir_.c_str()), 0);
  const std::string regular = target + "/123.sock";
  std::ofstream(regular) << "not a socket";
  const std::string stale = target + "/" + std::to_string(dead_pid()) + ".sock";
  const int fd = bound_socket(stale, false);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const pid_t live = start_fake_process(target);
  const std::string why = socket_dir_ + " is a symbolic link";

  for (const std::vector<std::string>& listing :
       {std::vector<std::string>{"ps", "--dir", socket_dir_},
        std::vector<std::string>{"flush", "--all", "--dir", socket_dir_}}) {
    const Result result = cli(listing);
    EXPECT_EQ(result.code, 0) << listing[0] << ": " << result.err;
    EXPECT_EQ(result.out.find(std::to_string(live)), std::string::npos)
        << listing[0] << ": " << result.out;
    EXPECT_NE(result.err.find("vramshim: " + why + "; its sockets are ignored\n"),
              std::string::npos)
        << listing[0] << ": " << result.err;
    EXPECT_TRUE(exists(regular)) << listing[0];
    EXPECT_TRUE(exists(stale)) << listing[0];
  }
  const Result stats = cli({"stats", std::to_string(live)});
  EXPECT_EQ(stats.code, 1);
  EXPECT_NE(stats.err.find(why), std::string::npos) << stats.err;
  EXPECT_EQ(json::parse(ask_directly(target + "/" + std::to_string(live) + ".sock",
                                     "stats\n"))["devices"][0]["cached_bytes"],
            64 << 20)
      << "flushed through the link";
}

// In a directory of ours, only sockets of ours named PID.sock count: a file, a link or a socket
// another user owns is neither asked nor removed, and the others are still served.
TEST_F(CliTest, RefusesWhatIsNotASocketOfOursAndGoesOnWithTheOthers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a socket away";
  const pid_t trusted = start_fake_process();
  const std::string regular = socket_dir_ + "/" + std::to_string(dead_pid()) + ".sock";
  std::ofstream(regular) << "not a socket";
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep";
  const std::string link = socket_dir_ + "/" + std::to_string(dead_pid()) + ".sock";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  // Served by a process of ours with the pid of its name, but the file is another user's.
  const pid_t given_away = start_fake_process(socket_dir_);
  const std::string given_away_socket = socket_dir_ + "/" + std::to_string(given_away) + ".sock";
  ASSERT_EQ(::chown(given_away_socket.c_str(), kOtherUid, kOtherUid), 0);

  const Result ps = cli({"ps", "--dir", socket_dir_});
  EXPECT_EQ(ps.code, 0) << ps.err;
  EXPECT_NE(ps.out.find(std::to_string(trusted) + "     3.0 MiB"), std::string::npos) << ps.out;
  EXPECT_EQ(ps.out.find(std::to_string(given_away)), std::string::npos) << ps.out;
  for (const std::string& refusal :
       {regular + " is not a socket; ignored\n", link + " is not a socket; ignored\n",
        given_away_socket + " is owned by uid 65534, not 0; ignored\n"}) {
    EXPECT_NE(ps.err.find("vramshim: " + refusal), std::string::npos) << ps.err;
  }
  const Result flush = cli({"flush", "--all", "--dir", socket_dir_});
  EXPECT_EQ(flush.code, 0) << flush.err;
  EXPECT_EQ(flush.out, std::to_string(trusted) + ": released 64.0 MiB (67108864 bytes)\n");
  EXPECT_NE(flush.err.find(given_away_socket + " is owned by uid 65534"), std::string::npos)
      << flush.err;
  const Result stats = cli({"stats", std::to_string(given_away)});
  EXPECT_EQ(stats.code, 1);
  EXPECT_EQ(stats.err, "vramshim: no trusted vramshim socket for pid " +
                           std::to_string(given_away) + ": " + given_away_socket +
                           " is owned by uid 65534, not 0\n");
  for (const std::string& kept : {regular, link, given_away_socket}) {
    EXPECT_TRUE(exists(kept)) << kept;
  }
  EXPECT_EQ(read_file(victim), "keep");
}

// A socket named after one process but served by another is not believed.
TEST_F(CliTest, RefusesASocketServedByAnotherPidThanItsName) {
  ASSERT_EQ(::mkdir(socket_dir_.c_str(), 0700), 0);
  const pid_t named = ::getpid();  // alive, so the socket is not stale
  const pid_t server = start_fake_process(socket_dir_, named);
  const std::string socket = socket_dir_ + "/" + std::to_string(named) + ".sock";
  const std::string uid = std::to_string(::geteuid());
  const std::string why = socket + " is served by pid " + std::to_string(server) + " of uid " +
                          uid + ", not by pid " + std::to_string(named) + " of uid " + uid;

  for (const char* command : {"stats", "flush"}) {
    const Result result = cli({command, std::to_string(named)});
    EXPECT_EQ(result.code, 1) << command << ": " << result.out;
    EXPECT_EQ(result.out, "") << command;
    EXPECT_EQ(result.err, "vramshim: " + why + "; not trusted\n") << command;
  }
  const Result ps = cli({"ps", "--dir", socket_dir_});
  EXPECT_EQ(ps.out.find(std::to_string(named)), std::string::npos) << ps.out;
  EXPECT_NE(ps.err.find(why), std::string::npos) << ps.err;
  const Result flush_all = cli({"flush", "--all", "--dir", socket_dir_});
  EXPECT_EQ(flush_all.code, 1);
  EXPECT_EQ(flush_all.out, "");
  EXPECT_NE(flush_all.err.find(why), std::string::npos) << flush_all.err;
  EXPECT_EQ(json::parse(ask_directly(socket, "stats\n"))["devices"][0]["cached_bytes"], 64 << 20);
}

// --format json (docs/cli-json.md): one document per command, with the figures the text gives.
TEST_F(CliTest, PsAsJsonHasTheFiguresOfTheTable) {
  const pid_t first = start_fake_process();
  const pid_t second = start_fake_process();
  const Result text = cli({"ps", "--dir", socket_dir_});
  const Result result = cli({"ps", "--dir", socket_dir_, "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["command"], "ps");
  ASSERT_EQ(doc["processes"].size(), 2u) << result.out;
  for (size_t i = 0; i < 2; ++i) {
    const json& process = doc["processes"][i];
    EXPECT_EQ(process["pid"], i == 0 ? first : second);
    EXPECT_EQ(process["command"], "fake_shimmed_process --serve");
    EXPECT_EQ(process["in_use_bytes"], 3 << 20);
    EXPECT_EQ(process["cached_bytes"], 64 << 20);
    EXPECT_EQ(process["peak_in_use_bytes"], 5 << 20);
    EXPECT_EQ(process["devices"][0]["pool_hits"], 1000);
    EXPECT_TRUE(process["error"].is_null());
    EXPECT_NE(text.out.find(std::to_string(process["pid"].get<pid_t>()) +
                            "     3.0 MiB    64.0 MiB     5.0 MiB  fake_shimmed_process --serve\n"),
              std::string::npos)
        << text.out;
  }
  const Result none = cli({"ps", "--dir", dir_ + "/empty", "--format", "json"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(json::parse(none.out)["processes"], json::array());
}

TEST_F(CliTest, FlushAsJsonListsEveryProcessAndEachFailure) {
  const pid_t pid = start_fake_process();
  const pid_t missing = dead_pid();
  const Result result =
      cli({"flush", std::to_string(pid), std::to_string(missing), "--format", "json"});
  EXPECT_EQ(result.code, 1);
  const std::string why =
      "no vramshim socket for pid " + std::to_string(missing) + " (is it running under vramshim?)";
  EXPECT_EQ(result.err, "vramshim: " + why + "\n");
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["command"], "flush");
  EXPECT_EQ(doc["deep"], false);
  ASSERT_EQ(doc["processes"].size(), 2u) << result.out;
  EXPECT_EQ(doc["processes"][0]["pid"], pid) << "in the order asked";
  for (const json& process : doc["processes"]) {
    if (process["pid"] == pid) {
      EXPECT_EQ(process["flushed"], true);
      EXPECT_EQ(process["released_bytes"], 64 << 20);
      EXPECT_TRUE(process["error"].is_null());
    } else {
      EXPECT_EQ(process["pid"], missing);
      EXPECT_EQ(process["flushed"], false);
      EXPECT_TRUE(process["released_bytes"].is_null());
      EXPECT_EQ(process["error"], why);
    }
    EXPECT_FALSE(process.contains("frameworks")) << "not asked for without --deep";
  }
  const Result deep = cli({"flush", "--deep", std::to_string(pid), "--format", "json"});
  EXPECT_EQ(deep.code, 0) << deep.err;
  const json deep_doc = json::parse(deep.out);
  EXPECT_EQ(deep_doc["deep"], true);
  EXPECT_EQ(deep_doc["processes"][0]["released_bytes"], 0) << "flushed already";
  EXPECT_TRUE(deep_doc["processes"][0].contains("frameworks"));
  EXPECT_TRUE(deep_doc["processes"][0].contains("frameworks_error"));
}

TEST_F(CliTest, StatsFormatsAreOneOptionAndTheOldFlagsStillWork) {
  const pid_t pid = start_fake_process();
  const std::string id = std::to_string(pid);
  const Result result = cli({"stats", id, "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["command"], "stats");
  EXPECT_EQ(doc["pid"], pid);
  EXPECT_EQ(doc["devices"][0]["in_use_bytes"], 3 << 20);
  EXPECT_EQ(doc["process"]["command"], "fake_shimmed_process --pretend");
  EXPECT_FALSE(doc.contains("ok"));
  EXPECT_EQ(cli({"stats", id, "--json"}).out, result.out);
  // The same metrics but for how long the collection took.
  auto without_duration = [](const std::string& text) {
    return text.substr(0, text.rfind("vramshim_collection_duration_seconds "));
  };
  const std::string prometheus = cli({"stats", id, "--format", "prometheus"}).out;
  EXPECT_NE(prometheus.find("vramshim_in_use_bytes{pid=\"" + id), std::string::npos) << prometheus;
  EXPECT_EQ(without_duration(prometheus), without_duration(cli({"stats", id, "--prometheus"}).out));
  EXPECT_EQ(cli({"stats", id, "--format", "text"}).out, cli({"stats", id}).out);
  const Result both = cli({"stats", id, "--json", "--format", "prometheus"});
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.out, "");

  const Result all = cli({"stats", "--all", "--dir", socket_dir_, "--format", "json"});
  ASSERT_EQ(all.code, 0) << all.err;
  const json collection = json::parse(all.out);
  EXPECT_EQ(collection["schema_version"], 1);
  EXPECT_EQ(collection["command"], "stats");
  ASSERT_EQ(collection["processes"].size(), 1u);
  EXPECT_EQ(collection["processes"][0]["pid"], pid);
  EXPECT_EQ(collection["processes"][0]["stats"]["devices"][0]["cached_bytes"], 64 << 20);
  EXPECT_EQ(collection["processes"][0]["sites"].size(), 3u);
  EXPECT_EQ(collection["processes"][0]["omitted_rows"], 0);
  EXPECT_EQ(collection["sites_asked"], 10);
  // Fewer sites asked than the process holds: the document says how many it left out.
  const Result cut =
      cli({"stats", "--all", "--dir", socket_dir_, "--format", "json", "--top-sites", "2"});
  ASSERT_EQ(cut.code, 0) << cut.err;
  const json cut_doc = json::parse(cut.out);
  EXPECT_EQ(cut_doc["processes"][0]["sites"].size(), 2u);
  EXPECT_EQ(cut_doc["processes"][0]["omitted_rows"], 1);
  EXPECT_EQ(collection["skipped"]["silent"], 0);
  EXPECT_TRUE(collection["collection_seconds"].is_number());
}

TEST_F(CliTest, SnapshotAsJsonSaysWhereAndHowLarge) {
  const pid_t pid = start_fake_process();
  const Result result =
      cli({"snapshot", std::to_string(pid), "-o", "snap.json", "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["command"], "snapshot");
  EXPECT_EQ(doc["pid"], pid);
  EXPECT_EQ(doc["path"], dir_ + "/snap.json");
  EXPECT_EQ(doc["size_bytes"], read_file(dir_ + "/snap.json").size());
  const Result to_stdout = cli({"snapshot", std::to_string(pid), "-o", "-", "--format", "json"});
  EXPECT_EQ(to_stdout.code, 2);
  EXPECT_EQ(to_stdout.out, "");
  EXPECT_EQ(to_stdout.err.rfind("vramshim: snapshot: --format json needs -o FILE", 0), 0u)
      << to_stdout.err;
}

// A command that fails in JSON mode says why on standard error, in one line, and leaves standard
// output empty.
TEST_F(CliTest, AFailureAsJsonLeavesStandardOutputEmpty) {
  const pid_t pid = start_fake_process();
  const std::string none = std::to_string(::getpid());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"stats", none, "--format", "json"},
        std::vector<std::string>{"snapshot", none, "-o", "snap.json", "--format", "json"},
        std::vector<std::string>{"snapshot", std::to_string(pid), "-o", "/nonexistent/snap.json",
                                 "--format", "json"},
        std::vector<std::string>{"stats", std::to_string(pid), "--format", "yaml"}}) {
    const Result result = cli(args);
    EXPECT_NE(result.code, 0) << args[0];
    EXPECT_EQ(result.out, "") << args[0];
    EXPECT_EQ(result.err.rfind("vramshim: ", 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

TEST_F(CliTest, EverySubcommandHasHelp) {
  for (const char* subcommand : {"run", "ps", "flush", "stats", "snapshot"}) {
    const Result result = cli({subcommand, "--help"});
    EXPECT_EQ(result.code, 0) << subcommand;
    EXPECT_NE(result.out.find("Usage"), std::string::npos) << subcommand << result.out;
  }
}

}  // namespace
