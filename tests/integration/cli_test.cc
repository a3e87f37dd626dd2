// End to end with the real shim: `vramshim run` passes the exit status and signals through (on a
// terminal and off one), `flush --all` empties three running processes at once, `ps` lists them and
// removes a stale socket, a process whose XDG_RUNTIME_DIR is unusable is still reachable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

std::string cli() { return runfile("analyzer/vramshim"); }
// The CLI itself runs without the shim; the processes it starts or talks to run under it, with
// their sockets in `runtime_dir`/vramshim.
RunOptions cli_options(const std::string& runtime_dir) {
  RunOptions options;
  options.preload_shim = false;
  options.env = {{"XDG_RUNTIME_DIR", runtime_dir}, {"VRAMSHIM_REPORT", "off"}};
  return options;
}

RunOptions shimmed(const std::string& runtime_dir) {
  RunOptions options;
  options.env = {{"XDG_RUNTIME_DIR", runtime_dir}, {"VRAMSHIM_REPORT", "off"}};
  return options;
}

// Waits (at most 20 s) until process `pid` answers `vramshim stats --json` with `expected` in it.
bool wait_for_stats_with(const std::string& runtime_dir, int pid, const std::string& expected) {
  for (int i = 0; i < 200; ++i) {
    const ProgramRun stats =
        run_program({cli(), "stats", std::to_string(pid), "--json"}, cli_options(runtime_dir));
    if (stats.exit_code == 0 && stats.out.find(expected) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Waits (at most 20 s) until process `pid` caches `bytes` in its pool.
bool wait_for_cached(const std::string& runtime_dir, int pid, uint64_t bytes) {
  return wait_for_stats_with(runtime_dir, pid, "\"cached_bytes\":" + std::to_string(bytes));
}

// Waits (at most 20 s) until process `pid` answers with its pool's figures at all.
bool wait_for_stats(const std::string& runtime_dir, int pid) {
  return wait_for_stats_with(runtime_dir, pid, "\"cached_bytes\":");
}

bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(Run, ExitsWithTheCommandsStatus) {
  const std::string dir = short_temp_dir();
  const ProgramRun run =
      run_program({cli(), "run", "--", "/bin/sh", "-c", "exit 3"}, cli_options(dir));
  EXPECT_EQ(run.exit_code, 3) << run.err;
}

// Root's jobs get only a library no other user could have planted or could swap: one that another
// user owns, or that sits in a directory others may write to, is refused with one line.
TEST(Run, AsRootPreloadsOnlyALibraryNoOtherUserControls) {
  if (::geteuid() != 0) GTEST_SKIP() << "a rule for root";
  const fs::path dir = short_temp_dir();
  const fs::path shim = runfile("shim/libvramshim.so");
  auto placed = [&](const std::string& name, fs::perms directory_mode) {
    const fs::path directory = dir / name;
    fs::create_directory(directory);
    fs::permissions(directory, directory_mode);
    const fs::path copy = directory / "libvramshim.so";
    fs::copy_file(shim, copy);
    fs::permissions(copy, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
    return copy.string();
  };
  const std::string in_shared = placed("shared", fs::perms::all);
  const std::string theirs = placed("theirs", fs::perms(0755));
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  for (const std::string& library : {in_shared, theirs}) {
    RunOptions options = cli_options(dir.string());
    options.env["VRAMSHIM_LIB"] = library;
    const ProgramRun run = run_program({cli(), "run", "--", "/bin/true"}, options);
    EXPECT_EQ(run.exit_code, 1) << library << run.err;
    EXPECT_NE(run.err.find(library + " is not a file that only root controls"), std::string::npos)
        << run.err;
  }
  RunOptions options = cli_options(dir.string());
  options.env["VRAMSHIM_LIB"] = placed("ours", fs::perms(0755));
  const ProgramRun run = run_program({cli(), "run", "--", "/bin/true"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

// `vramshim run` of a program that allocates and exits, with `env` added; returns the run.
ProgramRun run_under_cli(const std::string& dir, const std::vector<std::string>& command,
                         std::map<std::string, std::string> env = {}) {
  RunOptions options = cli_options(dir);
  options.env.erase("VRAMSHIM_REPORT");
  for (auto& [key, value] : env) options.env[key] = value;
  std::vector<std::string> argv = {cli(), "run", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return run_program(argv, options);
}

TEST(Run, SummarizesExactlyTheReportItsChildWrote) {
  const std::string dir = short_temp_dir();
  const std::string pattern = dir + "/mem.%r.json";
  // Two ranks at once with the README's pattern: each run summarizes its own rank's report.
  std::vector<ProgramRun> runs(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      runs[rank] = run_under_cli(dir, {program("bad_frees")},
                                 {{"VRAMSHIM_REPORT", pattern}, {"RANK", std::to_string(rank)}});
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(runs[rank].exit_code, 0) << runs[rank].err;
    EXPECT_NE(
        runs[rank].err.find("vramshim: report " + dir + "/mem." + std::to_string(rank) + ".json\n"),
        std::string::npos)
        << runs[rank].err;
  }
  // A rank that dies before writing its report gets no one else's: rank 0's report is still
  // there, and matches the pattern. Its own crash report is summarized instead, and run does not
  // say it wrote none.
  const ProgramRun aborted = run_under_cli(dir, {program("fatal_signal"), "abort"},
                                           {{"VRAMSHIM_REPORT", pattern}, {"RANK", "0"}});
  EXPECT_EQ(aborted.term_signal, SIGABRT) << aborted.err;
  EXPECT_NE(aborted.err.find("vramshim: crash report " + dir + "/mem.0.crash.json\n"),
            std::string::npos)
      << aborted.err;
  EXPECT_TRUE(std::regex_search(
      aborted.err, std::regex("\nvramshim: no exit report: pid ([0-9]+) was killed by SIGABRT; "
                              "pid \\1's crash report " +
                              dir +
                              "/mem\\.0\\.crash\\.json, summarized below\n"
                              "process:  pid \\1, rank 0")))
      << aborted.err;
  EXPECT_NE(aborted.err.find("\nreport:   written at crash"), std::string::npos) << aborted.err;
  EXPECT_EQ(aborted.err.find("no report from"), std::string::npos) << aborted.err;
  EXPECT_EQ(aborted.err.find("vramshim: report "), std::string::npos) << aborted.err;
}

// Any process of the job may announce a report: the path it names reaches root's terminal without
// the controls a terminal would act on (here a window title set by OSC 0).
TEST(Run, AnnouncedReportPathsReachTheTerminalWithoutControls) {
  const std::string dir = short_temp_dir();
  const ProgramRun run = run_under_cli(
      dir, {"/bin/sh", "-c",
            "for reason in oom exit; do printf '%s %s /nowhere\033]0;owned\007.json\n' $$ "
            "$reason >&${VRAMSHIM_REPORT_NOTICES%%:*}; done"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find('\033'), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\007'), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("out-of-memory report /nowhere?]0;owned?.json"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("cannot read the report /nowhere?]0;owned?.json"), std::string::npos)
      << run.err;
}

// A process of the job that has the notices' descriptor number for a file of its own (a launcher
// closed the pipe, the program opened a log): its shim writes no notice into that file.
TEST(Run, ANoticeGoesOnlyIntoRunsOwnPipe) {
  const std::string dir = short_temp_dir();
  const ProgramRun run =
      run_under_cli(dir,
                    {"/bin/sh", "-c",
                     "fd=${VRAMSHIM_REPORT_NOTICES%%:*}; eval \"exec $fd>$0/app.log\"; exec \"$1\"",
                     dir, program("bad_frees")},
                    {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream log(dir + "/app.log");
  ASSERT_TRUE(log.good());
  const std::string written((std::istreambuf_iterator<char>(log)),
                            std::istreambuf_iterator<char>());
  EXPECT_EQ(written, "");
}

// Where the reports will be written, when the job starts: a pattern with %p names the report of
// each process that writes one by its own pid, not by the pid of the command (a launcher may write
// none).
TEST(Run, SaysWhereTheReportWillBeWrittenWhenItStarts) {
  const std::string dir = short_temp_dir();
  const ProgramRun by_pid =
      run_under_cli(dir, {program("bad_frees")}, {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
  ASSERT_EQ(by_pid.exit_code, 0) << by_pid.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(by_pid.err, match,
                                std::regex("vramshim: pid ([0-9]+) runs under the shim; each of "
                                           "its processes that uses CUDA writes ([^\n]+) \\(%p: "
                                           "that process's pid\\)\n")))
      << by_pid.err;
  EXPECT_EQ(match[2].str(), dir + "/r.%p.json");
  EXPECT_TRUE(fs::exists(dir + "/r." + match[1].str() + ".json"));

  // A pattern of ranks (README's mem.%r.json) is a pattern still: each process expands it.
  const ProgramRun by_rank = run_under_cli(
      dir, {program("bad_frees")}, {{"VRAMSHIM_REPORT", dir + "/r.%r.json"}, {"RANK", "5"}});
  ASSERT_EQ(by_rank.exit_code, 0) << by_rank.err;
  EXPECT_NE(by_rank.err.find(" runs under the shim; each of its processes that uses CUDA writes " +
                             dir + "/r.%r.json (%r: that process's rank)\n"),
            std::string::npos)
      << by_rank.err;
  EXPECT_EQ(by_rank.err.find("its report: "), std::string::npos) << by_rank.err;
  EXPECT_TRUE(fs::exists(dir + "/r.5.json"));

  const ProgramRun named =
      run_under_cli(dir, {program("bad_frees")}, {{"VRAMSHIM_REPORT", dir + "/r.json"}});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(std::regex_search(named.err, std::regex("vramshim: pid [0-9]+ runs under the shim; "
                                                      "its report: " +
                                                      dir + "/r.json\n")))
      << named.err;
}

TEST(Run, TheReportsStartTimeHasTheClocksResolution) {
  const std::string dir = short_temp_dir();
  const auto before = std::chrono::system_clock::now();
  const ProgramRun run =
      run_under_cli(dir, {program("bad_frees")}, {{"VRAMSHIM_REPORT", dir + "/r.json"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const double started = std::chrono::duration<double>(before.time_since_epoch()).count();
  std::ifstream file(dir + "/r.json");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, std::regex("\"start_time\": ([0-9.]+)")));
  // The child starts just after `before`: /proc/stat's whole-second btime put it up to 1 s off.
  EXPECT_NEAR(std::stod(match[1].str()), started, 0.05);
}

TEST(Run, ForwardsSigtermToTheCommand) {
  const std::string dir = short_temp_dir();
  RunOptions options = cli_options(dir);
  BackgroundProgram run({cli(), "run", "--", program("cached_idle"), "cache", "4"}, options);
  ASSERT_TRUE(wait_for_file(dir + "/vramshim")) << "the command never started under the shim";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int status = run.stop(SIGTERM);
  // The command died of the forwarded SIGTERM, and so did run.
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(Flush, AllFlushesThreeProcessesAtOnceAndPsListsThem) {
  const std::string dir = short_temp_dir();
  std::vector<std::unique_ptr<BackgroundProgram>> processes;
  for (int i = 0; i < 3; ++i) {
    processes.push_back(std::make_unique<BackgroundProgram>(
        std::vector<std::string>{program("cached_idle"), "cache", "16"}, shimmed(dir)));
  }
  for (const auto& process : processes) {
    ASSERT_TRUE(wait_for_file(dir + "/vramshim/" + std::to_string(process->pid()) + ".sock"));
    ASSERT_TRUE(wait_for_cached(dir, process->pid(), 16u << 20));
  }

  // A socket left behind by a process that is gone.
  const std::string stale = dir + "/vramshim/999999.sock";
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", stale.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    close(fd);
  }

  const ProgramRun ps = run_program({cli(), "ps"}, cli_options(dir));
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  for (const auto& process : processes) {
    EXPECT_NE(ps.out.find(std::to_string(process->pid())), std::string::npos) << ps.out;
  }
  EXPECT_EQ(ps.out.find("999999"), std::string::npos) << ps.out;
  EXPECT_FALSE(fs::exists(stale)) << "ps leaves a stale socket behind";

  const ProgramRun flush = run_program({cli(), "flush", "--all"}, cli_options(dir));
  ASSERT_EQ(flush.exit_code, 0) << flush.err;
  for (const auto& process : processes) {
    // 16 blocks of 1 MiB, carved from 2 MiB segments: 16 MiB back to the driver.
    EXPECT_NE(flush.out.find(std::to_string(process->pid()) + ": released 16.0 MiB"),
              std::string::npos)
        << flush.out;
  }
}

// Containers and batch jobs often set XDG_RUNTIME_DIR to a folder that does not exist: the shim
// falls back to /tmp/vramshim-UID, where the CLI looks too.
TEST(Flush, FlushesEveryGoodPidAndReportsEachBadOne) {
  const std::string dir = short_temp_dir();
  BackgroundProgram process({program("cached_idle"), "cache", "4"}, shimmed(dir));
  ASSERT_TRUE(wait_for_file(dir + "/vramshim/" + std::to_string(process.pid()) + ".sock"));
  ASSERT_TRUE(wait_for_cached(dir, process.pid(), 4u << 20));
  const ProgramRun flush =
      run_program({cli(), "flush", "999999", std::to_string(process.pid())}, cli_options(dir));
  EXPECT_EQ(flush.exit_code, 1) << flush.err;
  EXPECT_NE(flush.out.find(std::to_string(process.pid()) + ": released 4.0 MiB"), std::string::npos)
      << flush.out << flush.err;
  EXPECT_NE(flush.err.find("no vramshim socket for pid 999999"), std::string::npos) << flush.err;
}

TEST(Flush, DeepFlushOfAProcessWithoutPythonFlushesThePoolAndSucceeds) {
  const std::string dir = short_temp_dir();
  BackgroundProgram process({program("cached_idle"), "cache", "4"}, shimmed(dir));
  ASSERT_TRUE(wait_for_file(dir + "/vramshim/" + std::to_string(process.pid()) + ".sock"));
  ASSERT_TRUE(wait_for_cached(dir, process.pid(), 4u << 20));
  const ProgramRun flush =
      run_program({cli(), "flush", "--deep", std::to_string(process.pid())}, cli_options(dir));
  EXPECT_EQ(flush.exit_code, 0) << flush.err;
  EXPECT_NE(flush.out.find("frameworks not flushed: the process does not run Python"),
            std::string::npos)
      << flush.out;
  EXPECT_NE(flush.out.find("released 4.0 MiB"), std::string::npos) << flush.out;
}

TEST(Flush, ReachesAProcessWhoseRuntimeDirIsUnusable) {
  const std::string missing = short_temp_dir() + "/missing";
  BackgroundProgram process({program("cached_idle"), "cache", "4"}, shimmed(missing));
  const std::string fallback = "/tmp/vramshim-" + std::to_string(::geteuid()) + "/" +
                               std::to_string(process.pid()) + ".sock";
  ASSERT_TRUE(wait_for_file(fallback)) << "no socket at " << fallback;
  // Reached through the fallback: its figures, then its flush. What the flush releases is not
  // checked: a socket there is every test's to find, and a root `flush --all` of another test
  // running at the same time may have emptied the pool first (seen with two runs at once).
  ASSERT_TRUE(wait_for_stats(missing, process.pid()));
  const ProgramRun flush =
      run_program({cli(), "flush", std::to_string(process.pid())}, cli_options(missing));
  ASSERT_EQ(flush.exit_code, 0) << flush.err;
  EXPECT_NE(flush.out.find("released "), std::string::npos) << flush.out;
}

TEST(Stats, PrometheusExpositionOfARunningProcess) {
  const std::string dir = short_temp_dir();
  BackgroundProgram process({program("cached_idle"), "cache", "4"}, shimmed(dir));
  ASSERT_TRUE(wait_for_file(dir + "/vramshim/" + std::to_string(process.pid()) + ".sock"));
  ASSERT_TRUE(wait_for_cached(dir, process.pid(), 4u << 20));
  const ProgramRun stats = run_program(
      {cli(), "stats", std::to_string(process.pid()), "--prometheus"}, cli_options(dir));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_TRUE(std::regex_search(
      stats.out, std::regex("vramshim_cached_bytes\\{pid=\"" + std::to_string(process.pid()) +
                            "\",uid=\"" + std::to_string(::geteuid()) +
                            "\",command=\"[^\"]*\",host=\"[^\"]+\","
                            "device=\"0\",pci_bus_id=\"00000000:18:00\\.0\"\\} 4194304")))
      << stats.out;
}

TEST(Signals, AnApplicationsOwnUsr1HandlerIsKeptAndTheSocketStillFlushes) {
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"}, {"VRAMSHIM_SOCKET", short_temp_dir() + "/own.sock"}};
  const ProgramRun run = run_program({program("cached_idle"), "own_handler"}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The 4 MiB block came from a 20 MiB segment, which the flush hands back whole.
  EXPECT_NE(run.out.find("own handler calls=1 socket released=20971520"), std::string::npos)
      << run.out;
}

TEST(Demo, RunsFlushesMidwayAndNamesTheLeak) {
  const std::string dir = short_temp_dir();
  RunOptions options = cli_options(dir);
  options.fake_driver = false;  // the demo finds the simulated driver itself when there is no GPU
  const ProgramRun demo = run_program({cli(), "demo", "-o", dir + "/out"}, options);
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  EXPECT_TRUE(std::regex_search(demo.out, std::regex(">> vramshim flush [0-9]+: released [1-9]")))
      << demo.out;
  const size_t leaks = demo.out.find("still allocated at the end");
  ASSERT_NE(leaks, std::string::npos) << demo.out;
  EXPECT_NE(demo.out.find("cache_activations_for_debugging", leaks), std::string::npos) << demo.out;
  EXPECT_NE(demo.out.find("demo_workload.cc:"), std::string::npos) << "no file:line: " << demo.out;
  EXPECT_TRUE(fs::exists(dir + "/out/demo.html"));
}

// The CLI alone, its conventions: help, version, errors and exit statuses.
ProgramRun vramshim(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {cli()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, cli_options(short_temp_dir()));
}

bool one_line(const std::string& text) {
  return !text.empty() && text.back() == '\n' && text.find('\n') == text.size() - 1;
}

TEST(Conventions, VersionNamesTheBuildAndTheReportFormats) {
  const ProgramRun flag = vramshim({"--version"});
  const ProgramRun command = vramshim({"version"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  ASSERT_EQ(command.exit_code, 0) << command.err;
  EXPECT_EQ(flag.out, command.out);
  EXPECT_TRUE(std::regex_match(
      flag.out, std::regex("vramshim [0-9]+\\.[0-9]+\\.[0-9]+\n"
                           "commit:  ([0-9a-f]{40}(-modified)?|unknown)\n"
                           "built:   [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC\n"
                           "reports: reads format versions 1 to 3, writes version 3 .*\n")))
      << flag.out;
}

TEST(Conventions, HelpOfASubcommandIsItsDashDashHelp) {
  const ProgramRun help = vramshim({"help", "report"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_EQ(help.out, vramshim({"report", "--help"}).out);
  EXPECT_NE(help.out.find("Usage: vramshim report"), std::string::npos) << help.out;
  EXPECT_EQ(vramshim({"help"}).out, vramshim({"--help"}).out);
  const ProgramRun unknown = vramshim({"help", "frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(one_line(unknown.err)) << unknown.err;
  EXPECT_NE(unknown.err.find("the subcommands are: run, ps, flush"), std::string::npos);
}

TEST(Conventions, UsageErrorsExit2WithOneLineNamingWhatIsValid) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"frobnicate"}, "vramshim: unknown subcommand 'frobnicate'; the subcommands are: run, ps, "},
      {{}, "vramshim: a subcommand is required: run, ps, "},
      {{"--frobnicate"}, "vramshim: unknown option --frobnicate; the options are: -h/--help, "},
      {{"report", "--frobnicate", "x.json"},
       "vramshim: report: the following argument was not expected: --frobnicate; its options "
       "are: -h/--help, --help-all, --top, --leaks, "},
      {{"report"}, "vramshim: report: file is required (vramshim help report)"},
      {{"report", "x.json", "--top", "many"}, "vramshim: report: --top: "},
      {{"run"}, "vramshim: run: a command to run is required"},
      {{"run", "--limit", "--", "echo", "hi"}, "vramshim: run: --limit -- is not a size"},
      {{"run", "--stacks", "some", "echo", "hi"}, "vramshim: run: --stacks must be all, off or "},
      {{"flush", "--frobnicate"}, "vramshim: flush: the following argument was not expected"},
  };
  for (const Case& c : cases) {
    const ProgramRun run = vramshim(c.args);
    EXPECT_EQ(run.exit_code, 2) << c.says << "\n" << run.err;
    EXPECT_TRUE(one_line(run.err)) << run.err;
    EXPECT_EQ(run.err.rfind(c.says, 0), 0u) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(Conventions, RuntimeErrorsExit1WithOneLine) {
  const ProgramRun missing = vramshim({"report", "/nonexistent/r.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(one_line(missing.err)) << missing.err;
  EXPECT_EQ(missing.err.rfind("vramshim: /nonexistent/r.json: ", 0), 0u) << missing.err;
}

TEST(Conventions, EveryExitStatusIsInTheHelp) {
  const ProgramRun help = vramshim({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (const char* status : {"  0 ", "  1 ", "  2 ", "126 ", "127 ", "128+N "}) {
    EXPECT_NE(help.out.find(status), std::string::npos) << status << "\n" << help.out;
  }
  for (const char* sub : {"run", "ps", "flush", "stats", "snapshot", "report", "diff", "merge",
                          "html", "replay", "demo", "version"}) {
    const ProgramRun sub_help = vramshim({sub, "--help"});
    EXPECT_EQ(sub_help.exit_code, 0) << sub;
    EXPECT_NE(sub_help.out.find("Exit status:\n"), std::string::npos) << sub_help.out;
    EXPECT_NE(sub_help.out.find("  2 "), std::string::npos) << sub_help.out;
  }
}

// run: the command starts at the first word that is not one of run's options, and its status
// comes back as the shell's would.
TEST(Run, TheCommandStartsAtItsFirstWordAndItsStatusComesBackExactly) {
  const std::string dir = short_temp_dir();
  RunOptions options = cli_options(dir);
  const ProgramRun echo =
      run_program({cli(), "run", "--report", "off", "/bin/echo", "--limit", "3"}, options);
  EXPECT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "--limit 3\n");
  const ProgramRun flags = run_program(
      {cli(), "run", "--no-pool", "--report", "off", "--socket=off", "/bin/echo", "-x"}, options);
  EXPECT_EQ(flags.out, "-x\n") << flags.err;
  EXPECT_EQ(run_program({cli(), "run", "/bin/sh", "-c", "exit 3"}, options).exit_code, 3);
  EXPECT_EQ(run_program({cli(), "run", "--", "/bin/sh", "-c", "exit 4"}, options).exit_code, 4);
  EXPECT_EQ(run_program({cli(), "run", "/bin/sh", "-c", "kill -TERM $$"}, options).term_signal,
            SIGTERM);
  const ProgramRun missing = run_program({cli(), "run", dir + "/no-such-program"}, options);
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_TRUE(one_line(missing.err)) << missing.err;
  const std::string script = dir + "/not-executable.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  fs::permissions(script, fs::perms::owner_read | fs::perms::owner_write);
  const ProgramRun denied = run_program({cli(), "run", script}, options);
  EXPECT_EQ(denied.exit_code, 126);
  EXPECT_NE(denied.err.find("vramshim: cannot run '" + script + "': Permission denied"),
            std::string::npos)
      << denied.err;
  // Under the shim, without "--": the program's own report is summarized.
  options.env["VRAMSHIM_REPORT"] = dir + "/r.json";
  const ProgramRun shimmed = run_program({cli(), "run", program("bad_frees")}, options);
  EXPECT_EQ(shimmed.exit_code, 0) << shimmed.err;
  EXPECT_NE(shimmed.err.find("vramshim: report " + dir + "/r.json\n"), std::string::npos)
      << shimmed.err;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// -o - writes to standard output for every command that writes an output; -o FILE replaces FILE.
TEST(Outputs, DashIsStandardOutputAndAnExistingFileIsReplaced) {
  const std::string dir = short_temp_dir();
  for (const char* name : {"a", "b"}) {
    ASSERT_EQ(run_under_cli(dir, {program("bad_frees")},
                            {{"VRAMSHIM_REPORT", dir + "/" + name + ".json"}})
                  .exit_code,
              0);
  }
  const RunOptions plain = cli_options(dir);
  const ProgramRun html = run_program({cli(), "html", dir + "/a.json", "-o", "-"}, plain);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.out.find("</html>"), std::string::npos);

  const ProgramRun merged =
      run_program({cli(), "merge", dir + "/a.json", dir + "/b.json", "-o", "-"}, plain);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const nlohmann::json doc = nlohmann::json::parse(merged.out);
  EXPECT_EQ(doc.at("format"), "vramshim-report");
  EXPECT_EQ(doc.at("merged_from").size(), 2u);
  EXPECT_NE(merged.err.find("merged 2 processes into standard output"), std::string::npos)
      << merged.err;

  // An existing file at the name is replaced, by html, merge and snapshot alike.
  for (const std::string command : {"html", "merge"}) {
    const std::string out = dir + "/out." + command;
    std::ofstream(out) << "old contents";
    std::vector<std::string> argv = {cli(), command, dir + "/a.json"};
    if (command == "merge") argv.push_back(dir + "/b.json");
    argv.insert(argv.end(), {"-o", out});
    const ProgramRun run = run_program(argv, plain);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(file_text(out).find("old contents"), std::string::npos) << command;
    EXPECT_GT(fs::file_size(out), 1000u) << command;
  }

  BackgroundProgram process({program("cached_idle"), "cache", "4"}, shimmed(dir));
  ASSERT_TRUE(wait_for_file(dir + "/vramshim/" + std::to_string(process.pid()) + ".sock"));
  ASSERT_TRUE(wait_for_cached(dir, process.pid(), 4u << 20));
  // The process writes its report into a private directory under TMPDIR, which is emptied after.
  const std::string tmp = dir + "/tmp";
  fs::create_directory(tmp);
  RunOptions with_tmp = plain;
  with_tmp.env["TMPDIR"] = tmp;
  const ProgramRun snapshot =
      run_program({cli(), "snapshot", std::to_string(process.pid()), "-o", "-"}, with_tmp);
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  const nlohmann::json now = nlohmann::json::parse(snapshot.out);
  EXPECT_EQ(now.at("process").at("pid"), process.pid());
  EXPECT_EQ(now.at("format"), "vramshim-report");
  EXPECT_TRUE(fs::is_empty(tmp));
  const std::string existing = dir + "/now.json";
  std::ofstream(existing) << "old contents";
  const ProgramRun replaced =
      run_program({cli(), "snapshot", std::to_string(process.pid()), "-o", existing}, plain);
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(nlohmann::json::parse(file_text(existing)).at("process").at("pid"), process.pid());
}

size_t occurrences(const std::string& text, const std::string& word) {
  size_t count = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++count;
  return count;
}

// 100 sites whose stacks differ only below leaf_alloc(int) (tests/integration/programs/
// many_callers.cc): one row wherever a view shows one line per site, the 100 under --stacks.
TEST(Views, SitesThatDifferOnlyBelowTheShownFrameAreOneRow) {
  const std::string dir = short_temp_dir();
  const std::string path = dir + "/many.json";
  const ProgramRun run = run_under_cli(dir, {program("many_callers")}, {{"VRAMSHIM_REPORT", path}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The summary: once held at the peak, once still allocated at the end, 100 x 4 KiB each.
  EXPECT_EQ(occurrences(run.err, "400.0 KiB  leaf_alloc(int)"), 2u) << run.err;
  EXPECT_EQ(occurrences(run.err, "leaf_alloc(int)"), 2u) << run.err;

  const RunOptions plain = cli_options(dir);
  const ProgramRun leaks = run_program({cli(), "report", path, "--leaks"}, plain);
  ASSERT_EQ(leaks.exit_code, 0) << leaks.err;
  EXPECT_NE(leaks.out.find("Top 1 of 1 site by live bytes"), std::string::npos) << leaks.out;
  EXPECT_EQ(occurrences(leaks.out, "leaf_alloc(int)"), 1u) << leaks.out;
  EXPECT_NE(leaks.out.find("live 400.0 KiB in 100 allocations"), std::string::npos) << leaks.out;
  EXPECT_NE(leaks.out.find("from 100 stacks (--stacks shows each)"), std::string::npos)
      << leaks.out;

  const ProgramRun stacks =
      run_program({cli(), "report", path, "--leaks", "--stacks", "--top", "0"}, plain);
  ASSERT_EQ(stacks.exit_code, 0) << stacks.err;
  EXPECT_NE(stacks.out.find("Top 100 of 100 sites by live bytes"), std::string::npos) << stacks.out;
  EXPECT_NE(stacks.out.find("\n#100  4.0 KiB live"), std::string::npos) << stacks.out;
  EXPECT_NE(stacks.out.find("void caller<99>()"), std::string::npos) << stacks.out;
  EXPECT_EQ(stacks.out.find("(--top 0 for all)"), std::string::npos) << stacks.out;

  const ProgramRun json =
      run_program({cli(), "report", path, "--leaks", "--format", "json"}, plain);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc.at("sites").size(), 1u) << json.out;
  EXPECT_EQ(doc["sites"][0]["stack_count"], 100);
  EXPECT_EQ(doc["sites"][0]["live_count"], 100);
  EXPECT_EQ(doc["sites"][0]["label"]["function"], "leaf_alloc(int)");
}

// The dynamic loader splits LD_PRELOAD at ':' and white space: root preloading a shim at
// "/opt/my tools/libvramshim.so" would preload "tools/libvramshim.so" from the job's working
// directory, which another user may control. run, jupyter and demo refuse such a path instead.
TEST(Run, RefusesAShimPathThatLdPreloadWouldSplit) {
  const fs::path dir = short_temp_dir();
  for (const std::string name : {"my tools", "my\ttools", "my\ntools", "my:tools"}) {
    const fs::path directory = dir / name;
    fs::create_directory(directory);
    fs::permissions(directory, fs::perms(0755));
    const fs::path shim = directory / "libvramshim.so";
    fs::copy_file(runfile("shim/libvramshim.so"), shim);
    fs::permissions(shim, fs::perms(0644));
    RunOptions options = cli_options(dir.string());
    options.env["VRAMSHIM_LIB"] = shim.string();
    options.working_directory = dir.string();
    const std::vector<std::string> commands[] = {
        {"run", "--", "/bin/echo", "ran"},
        {"jupyter", "install", "--prefix", (dir / "kernels").string(), "--python", "/bin/true"},
        {"demo", "-o", (dir / "demo").string()},
    };
    for (const std::vector<std::string>& command : commands) {
      std::vector<std::string> argv = {cli()};
      argv.insert(argv.end(), command.begin(), command.end());
      const ProgramRun run = run_program(argv, options);
      EXPECT_EQ(run.exit_code, 1) << command[0] << ": " << run.err;
      EXPECT_TRUE(one_line(run.err)) << run.err;
      EXPECT_NE(run.err.find("cannot be preloaded: LD_PRELOAD splits paths at ':' and white space"),
                std::string::npos)
          << run.err;
      EXPECT_EQ(run.out, "") << command[0];
    }
    EXPECT_FALSE(fs::exists(dir / "kernels")) << "a kernelspec preloading a split path";
  }
}

// Waits (at most 20 s) until `done` holds.
bool wait_until(const std::function<bool()>& done) {
  for (int i = 0; i < 400; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool wait_for_text(const std::string& path, const std::string& text) {
  return wait_until([&] { return file_text(path).find(text) != std::string::npos; });
}

// The pid a signal_counter wrote into its log ("ready PID"), or 0.
pid_t counter_pid(const std::string& log) {
  std::smatch match;
  const std::string text = file_text(log);
  if (!std::regex_search(text, match, std::regex("ready ([0-9]+)"))) return 0;
  return std::stoi(match[1].str());
}

// The fields of /proc/PID/stat after the command's name: state, parent, group, session, …
std::istringstream process_status(pid_t pid) {
  std::string text;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), text);
  const size_t name_end = text.rfind(')');
  return std::istringstream(name_end == std::string::npos ? "" : text.substr(name_end + 1));
}

// Whether process `pid` is gone, or a zombie.
bool has_ended(pid_t pid) {
  char state = 'Z';
  process_status(pid) >> state;
  return state == 'Z';
}

// Kills every process still in session `session` (a test's own, from setsid or a terminal), so that
// a failed test leaves none behind.
void kill_session(pid_t session) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    char state;
    pid_t parent, group, its_session;
    if (process_status(std::stoi(name)) >> state >> parent >> group >> its_session &&
        its_session == session) {
      ::kill(std::stoi(name), SIGKILL);
    }
  }
}

// A command that a signal ended: once it has summarized, run ends by the same signal, so that what
// waits for it sees what it would have seen of the command (a shell: 128+N); without a core dump
// of its own, though the command may have left one.
TEST(Run, EndsByTheSignalThatEndedTheCommandWithoutACoreDumpOfItsOwn) {
  const std::string dir = short_temp_dir();
  RunOptions options = cli_options(dir);
  options.working_directory = dir;
  options.core_dumps = true;
  const ProgramRun run =
      run_program({cli(), "run", "--", program("fatal_signal"), "abort"}, options);
  EXPECT_EQ(run.term_signal, SIGABRT) << run.exit_code << run.err;
  EXPECT_FALSE(run.core_dumped);
}

// bash ends a script's loop on SIGINT only when the command it waited for died of it (a command
// that exits handled the interrupt): a loop around `vramshim run` must end as one around the
// command itself does when its process group is interrupted.
TEST(Run, AnInterruptEndsAScriptsLoopAroundIt) {
  const std::string dir = short_temp_dir();
  // setsid: the script leads a process group of its own, as a job does.
  BackgroundProgram script({"/usr/bin/setsid", "/bin/bash", "-c",
                            "for i in 1 2 3; do \"$0\" run -- \"$1\" \"$2.$i\"; done", cli(),
                            program("signal_counter"), dir + "/loop"},
                           cli_options(dir));
  ASSERT_TRUE(wait_for_text(dir + "/loop.1", "ready"));
  ASSERT_EQ(::kill(-script.pid(), SIGINT), 0);  // as Ctrl-C does to a terminal's foreground job
  ASSERT_TRUE(wait_until([&] { return has_ended(script.pid()) || fs::exists(dir + "/loop.2"); }));
  EXPECT_FALSE(fs::exists(dir + "/loop.2")) << "the loop went on";
  kill_session(script.pid());
  const int status = script.stop(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
}

// Signals sent to the whole process group of `vramshim run` (kill -- -PGID, timeout, a job
// scheduler) reach the command once: not once directly and once more passed on by run.
TEST(Run, ASignalToItsProcessGroupReachesTheCommandOnce) {
  const std::string dir = short_temp_dir();
  const std::string log = dir + "/signals";
  BackgroundProgram run({"/usr/bin/setsid", cli(), "run", "--", program("signal_counter"), log},
                        cli_options(dir));
  ASSERT_TRUE(wait_for_text(log, "ready"));
  for (size_t sent = 1; sent <= 10; ++sent) {
    ASSERT_EQ(::kill(-run.pid(), SIGHUP), 0);
    ASSERT_TRUE(wait_until([&] { return occurrences(file_text(log), "hup") >= sent; }));
    // A second copy would come within microseconds: let it, rather than merge with the next one.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int status = run.stop(SIGTERM);  // passed on: the command exits 0, and so does run
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(occurrences(file_text(log), "hup"), 10u) << file_text(log);
}

// Nor does the command outlive a SIGKILL of the run's process group (timeout -k, kill -9 %1),
// though it is not in that group.
TEST(Run, ASigkillOfItsProcessGroupEndsTheCommandToo) {
  const std::string dir = short_temp_dir();
  const std::string log = dir + "/signals";
  BackgroundProgram run({"/usr/bin/setsid", cli(), "run", "--", program("signal_counter"), log},
                        cli_options(dir));
  ASSERT_TRUE(wait_for_text(log, "ready"));
  const pid_t command = counter_pid(log);
  ASSERT_GT(command, 0);
  ASSERT_EQ(::kill(-run.pid(), SIGKILL), 0);
  if (!wait_until([&] { return has_ended(command); })) {
    ADD_FAILURE() << "the command outlived the run";
    ::kill(command, SIGKILL);
  }
}

// An interactive bash on a terminal of its own, typed into as a user would. What the terminal shows
// is read all along: one whose output nobody reads blocks the programs writing to it.
class Terminal {
 public:
  explicit Terminal(const std::map<std::string, std::string>& variables) {
    std::map<std::string, std::string> environment = {
        {"PS1", "$ "}, {"HISTFILE", "/dev/null"}, {"TERM", "dumb"}, {"INPUTRC", "/dev/null"}};
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string variable = *entry;
      environment.emplace(variable.substr(0, variable.find('=')),
                          variable.substr(variable.find('=') + 1));
    }
    for (const auto& [name, value] : variables) environment[name] = value;
    std::vector<std::string> strings;
    for (const auto& [name, value] : environment) strings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& variable : strings) envp.push_back(variable.data());
    envp.push_back(nullptr);
    std::string bash = "/bin/bash", no_rc = "--norc", no_profile = "--noprofile",
                interactive = "-i";
    char* argv[] = {bash.data(), no_rc.data(), no_profile.data(), interactive.data(), nullptr};
    pid_ = ::forkpty(&terminal_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      ::execve(argv[0], argv, envp.data());
      ::_exit(127);
    }
    reader_ = std::thread([this] {
      while (!stopping_) {
        pollfd ready = {terminal_, POLLIN, 0};
        if (::poll(&ready, 1, 100) <= 0) continue;
        char buffer[4096];
        const ssize_t got = ::read(terminal_, buffer, sizeof(buffer));
        if (got <= 0 && errno != EINTR) break;  // EIO: every process on the terminal is gone
        const std::lock_guard<std::mutex> lock(mutex_);
        if (got > 0) shown_.append(buffer, static_cast<size_t>(got));
      }
    });
  }

  ~Terminal() {
    kill_session(pid_);  // bash leads the terminal's session
    int status;
    ::waitpid(pid_, &status, 0);
    stopping_ = true;
    reader_.join();
    ::close(terminal_);
  }

  void type(const std::string& keys) {
    ASSERT_EQ(::write(terminal_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // Waits (at most 20 s) until the terminal has shown `text`.
  bool shows(const std::string& text) {
    return wait_until([&] { return screen().find(text) != std::string::npos; });
  }

  std::string screen() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return shown_;
  }

  // The process group that has the terminal.
  pid_t foreground() const { return ::tcgetpgrp(terminal_); }

 private:
  int terminal_ = -1;
  pid_t pid_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread reader_;
  std::mutex mutex_;
  std::string shown_;
};

std::map<std::string, std::string> terminal_variables(const std::string& dir) {
  return {{"CLI", cli()},
          {"COUNTER", program("signal_counter")},
          {"DIR", dir},
          {"XDG_RUNTIME_DIR", dir},
          {"VRAMSHIM_REPORT", "off"}};
}

// On a terminal, job control works as for any command the shell starts: Ctrl-Z stops the job and
// fg continues it, Ctrl-C ends it with the status of a command that Ctrl-C ended, and so ends a
// loop around it.
TEST(Run, OnATerminalCtrlZStopsTheJobAndCtrlCEndsALoopAroundIt) {
  const std::string dir = short_temp_dir();
  Terminal terminal(terminal_variables(dir));
  const std::string log = dir + "/job";
  terminal.type("\"$CLI\" run -- \"$COUNTER\" \"$DIR/job\"\n");
  ASSERT_TRUE(wait_for_text(log, "ready")) << terminal.screen();
  terminal.type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(terminal.shows("Stopped")) << terminal.screen();
  terminal.type("fg\n");
  ::kill(counter_pid(log), SIGHUP);  // counted once the command runs again
  ASSERT_TRUE(wait_for_text(log, "hup")) << terminal.screen();
  terminal.type("\x03");  // Ctrl-C
  terminal.type("echo \"job status $?\"\n");
  EXPECT_TRUE(terminal.shows("job status 130")) << terminal.screen();

  terminal.type("for i in 1 2 3; do \"$CLI\" run -- \"$COUNTER\" \"$DIR/loop.$i\"; done\n");
  ASSERT_TRUE(wait_for_text(dir + "/loop.1", "ready")) << terminal.screen();
  terminal.type("\x03");
  terminal.type("echo \"loop status $?\"\n");
  EXPECT_TRUE(terminal.shows("loop status 130")) << terminal.screen();
  EXPECT_FALSE(fs::exists(dir + "/loop.2")) << "the loop went on after Ctrl-C";
}

// A script that runs `vramshim run` (bash loop.sh at the prompt) stops at Ctrl-Z as one that runs
// the program itself does: the program had the terminal, so the keyboard's SIGTSTP reached it
// alone, and run stops its whole process group, the script with it, for the shell to see the job
// stop. fg continues all of it, the program with the terminal again.
TEST(Run, OnATerminalCtrlZStopsAScriptThatRunsIt) {
  const std::string dir = short_temp_dir();
  Terminal terminal(terminal_variables(dir));
  const std::string log = dir + "/job";
  terminal.type(
      "bash -c '\"$CLI\" run -- \"$COUNTER\" \"$DIR/job\"; echo \"script went $((1 + 1))\"'\n");
  ASSERT_TRUE(wait_for_text(log, "ready")) << terminal.screen();
  const pid_t command = counter_pid(log);
  ASSERT_TRUE(wait_until([&] { return terminal.foreground() == command; })) << terminal.screen();
  terminal.type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(terminal.shows("Stopped")) << terminal.screen();
  terminal.type("fg\n");
  EXPECT_TRUE(wait_until([&] { return terminal.foreground() == command; })) << terminal.screen();
  ::kill(command, SIGHUP);  // counted once the command runs again
  ASSERT_TRUE(wait_for_text(log, "hup")) << terminal.screen();
  ::kill(command, SIGTERM);  // the command exits 0, and the script goes on
  EXPECT_TRUE(terminal.shows("script went 2")) << terminal.screen();
}

// Ctrl-C ends a script's loop around `vramshim run` as one around the program itself: the program
// had the terminal, so the keyboard's SIGINT reached it alone; run, ending by it, sends it to its
// own process group, the script's, and bash ends a loop when it got the SIGINT that ended the
// command it waited for.
TEST(Run, OnATerminalCtrlCEndsAScriptsLoopAroundIt) {
  const std::string dir = short_temp_dir();
  Terminal terminal(terminal_variables(dir));
  terminal.type(
      "bash -c 'for i in 1 2 3; do \"$CLI\" run -- \"$COUNTER\" \"$DIR/loop.$i\"; done; echo "
      "\"script went $((1 + 1))\"'\n");
  ASSERT_TRUE(wait_for_text(dir + "/loop.1", "ready")) << terminal.screen();
  const pid_t command = counter_pid(dir + "/loop.1");
  ASSERT_TRUE(wait_until([&] { return terminal.foreground() == command; })) << terminal.screen();
  terminal.type("\x03");  // Ctrl-C
  terminal.type("echo \"script status $?\"\n");
  ASSERT_TRUE(wait_until([&] {
    return terminal.screen().find("script status 130") != std::string::npos ||
           fs::exists(dir + "/loop.2");
  })) << terminal.screen();
  EXPECT_FALSE(fs::exists(dir + "/loop.2")) << "the loop went on after Ctrl-C";
  EXPECT_TRUE(terminal.shows("script status 130")) << terminal.screen();
  EXPECT_EQ(terminal.screen().find("script went 2"), std::string::npos) << terminal.screen();
}

// The terminal goes to whoever uses it: to a command that reads it (from the start when its input
// and output are the terminal, else when it first reads), to the other end of a pipeline that reads
// it while the command does not, and back to the shell's job when the command ends.
TEST(Run, OnATerminalTheTerminalGoesToWhoeverReadsIt) {
  const std::string dir = short_temp_dir();
  Terminal terminal(terminal_variables(dir));
  terminal.type("\"$CLI\" run -- sh -c 'read -r line && echo \"command read $line\"'\n");
  terminal.type("one\n");
  EXPECT_TRUE(terminal.shows("command read one")) << terminal.screen();

  terminal.type(
      "\"$CLI\" run -- sh -c 'read -r line && echo \"piped command read $line\"' | cat\n");
  terminal.type("two\n");
  EXPECT_TRUE(terminal.shows("piped command read two")) << terminal.screen();

  // The other end reads the terminal, as less does, once the command runs: the command, which does
  // not read it, leaves it there.
  terminal.type(
      "\"$CLI\" run -- \"$COUNTER\" \"$DIR/piped\" | { until grep -q ready \"$DIR/piped\"; do "
      "sleep 0.1; done; read -r line </dev/tty && echo \"less read $line\"; } 2>/dev/null\n");
  ASSERT_TRUE(wait_for_text(dir + "/piped", "ready")) << terminal.screen();
  terminal.type("three\n");
  EXPECT_TRUE(terminal.shows("less read three")) << terminal.screen();
  terminal.type("\x03");

  // A script without job control reads the terminal after the run.
  terminal.type("bash -c '\"$CLI\" run -- true && read -r line && echo \"script read $line\"'\n");
  terminal.type("four\n");
  EXPECT_TRUE(terminal.shows("script read four")) << terminal.screen();
}

// A run inside a run (a launcher that itself uses vramshim run) summarizes its own command's
// report: the notices of each run go to its own pipe, not to the outer run's.
TEST(Run, ANestedRunSummarizesItsOwnCommandsReport) {
  const std::string dir = short_temp_dir();
  const ProgramRun run = run_under_cli(dir, {cli(), "run", "--", program("bad_frees")},
                                       {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The outer run's command (the inner run) and the inner run's, in the order their notices came.
  std::vector<std::string> started;
  const std::regex starts("vramshim: pid ([0-9]+) runs under the shim");
  for (std::sregex_iterator it(run.err.begin(), run.err.end(), starts), end; it != end; ++it) {
    started.push_back((*it)[1].str());
  }
  ASSERT_EQ(started.size(), 2u) << run.err;
  // The inner run's command is the one the summary names as bad_frees.
  std::smatch summary;
  ASSERT_TRUE(std::regex_search(run.err, summary,
                                std::regex("process: +pid ([0-9]+), host [^\n]*bad_frees\n")))
      << run.err;
  const std::string inner = summary[1].str();
  EXPECT_TRUE(inner == started[0] || inner == started[1]) << run.err;
  const std::string inner_report = "vramshim: report " + dir + "/r." + inner + ".json\n";
  EXPECT_NE(run.err.find(inner_report), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("no report from pid " + inner + " "), std::string::npos) << run.err;
}

// The shim announces each report it writes on a pipe that holds 64 KiB, and never waits for it:
// run reads it while the command runs, so the exit report of a command that wrote many reports
// before it is still found.
TEST(Run, FindsTheExitReportAfterManyReportsWithLongPaths) {
  const std::string dir = short_temp_dir();
  std::string deep = dir;  // 2.5 KiB: 40 notices fill the pipe well before the exit report's
  for (int i = 0; i < 10; ++i) deep += "/" + std::string(250, 'd');
  fs::create_directories(deep);
  const ProgramRun run = run_under_cli(
      dir, {program("report_series"), "signal", "40"},
      {{"VRAMSHIM_REPORT", deep + "/r.%n.json"}, {"VRAMSHIM_TRACE", "1024"}});  // 41 small reports
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("no report from pid"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("vramshim: report " + deep + "/r.40.json\n"), std::string::npos)
      << run.err;
}

// A signal for a job is passed on by run whatever it is, as long as its default action would end
// run: a batch system's warnings (SIGXCPU, SIGUSR1), timers, SIGPWR, the real-time signals. The
// command, which catches each, exits 7, and so does run.
TEST(Run, PassesOnEverySignalThatWouldEndIt) {
  const std::string dir = short_temp_dir();
  for (const int signal_number :
       {SIGALRM, SIGXCPU, SIGPWR, SIGVTALRM, SIGPROF, SIGUSR1, SIGRTMIN, SIGRTMAX}) {
    const std::string log = dir + "/signal." + std::to_string(signal_number);
    BackgroundProgram run({cli(), "run", "--", "/bin/sh", "-c",
                           "trap 'exit 7' " + std::to_string(signal_number) +
                               "; echo ready >\"$0\"; while :; do sleep 0.1; done",
                           log},
                          cli_options(dir));
    ASSERT_TRUE(wait_for_text(log, "ready")) << signal_number;
    const int status = run.stop(signal_number);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7)
        << "signal " << signal_number << ": status " << status;
  }
}

// Nor does what the command started outlive a SIGKILL of run: its whole process group ends.
TEST(Run, ASigkillOfItEndsTheCommandsWholeProcessGroup) {
  const std::string dir = short_temp_dir();
  const std::string log = dir + "/signals";
  BackgroundProgram run(
      {cli(), "run", "--", "/bin/sh", "-c", "sleep 60 & echo $! >\"$0.child\"; exec \"$1\" \"$0\"",
       log, program("signal_counter")},
      cli_options(dir));
  ASSERT_TRUE(wait_for_text(log, "ready"));
  ASSERT_TRUE(wait_until([&] { return !file_text(log + ".child").empty(); }));
  const pid_t child = std::stoi(file_text(log + ".child"));
  run.stop(SIGKILL);
  if (!wait_until([&] { return has_ended(child); })) {
    ADD_FAILURE() << "the command's child outlived the run";
    ::kill(child, SIGKILL);
  }
}

// Once the command has ended, a signal ends run at once (by that signal), though the summary may
// take a while: here its standard error is a pipe nobody reads until then, full of the job's
// out-of-memory notices.
TEST(Run, ASignalWhileItSummarizesEndsIt) {
  const std::string dir = short_temp_dir();
  const std::string fifo = dir + "/stderr";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  const int capacity = ::fcntl(reader, F_GETPIPE_SZ);
  // 100 notices of 1 KiB: 100 lines of run's, more than the pipe holds.
  const std::string job =
      "fd=${VRAMSHIM_REPORT_NOTICES%%:*}; name=$(printf '%01000d' 0); i=0; "
      "while [ $i -lt 100 ]; do echo \"$$ oom /$name\" >&$fd; i=$((i + 1)); done";
  BackgroundProgram run(
      {"/bin/sh", "-c", "exec \"$0\" run --report \"$1\" -- /bin/sh -c \"$2\" 2>\"$3\"", cli(),
       dir + "/r.%p.json", job, fifo},
      cli_options(dir));
  // Full: more than half of it queued, and no more coming (a write fills a page of the pipe only
  // when it fits whole).
  int queued = 0, unchanged = 0;
  const bool full = wait_until([&] {
    int now = 0;
    if (::ioctl(reader, FIONREAD, &now) != 0) return false;
    unchanged = now == queued ? unchanged + 1 : 0;
    queued = now;
    return queued > capacity / 2 && unchanged >= 6;
  });
  EXPECT_TRUE(full) << "the summary never filled the pipe";
  ::kill(run.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Read to the end, so that a run that went on can finish.
  for (;;) {
    pollfd ready = {reader, POLLIN, 0};
    ::poll(&ready, 1, 100);
    char buffer[65536];
    if (::read(reader, buffer, sizeof(buffer)) == 0) break;
  }
  ::close(reader);
  const int status = run.stop(SIGKILL);  // already ended: its own status
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

// The command line of the CLI run by another user than root: as root, a copy of the CLI in `dir`
// run by nobody (the rules tested hold for every other user; root's own are stricter); else the
// CLI itself. Empty when that cannot be.
std::vector<std::string> cli_as_a_user(const fs::path& dir) {
  if (::geteuid() != 0) return {cli()};
  if (!fs::exists("/usr/bin/setpriv")) return {};
  fs::permissions(dir, fs::perms(0755));
  fs::copy_file(cli(), dir / "vramshim");
  fs::permissions(dir / "vramshim", fs::perms(0755));
  fs::copy_file(runfile("shim/libvramshim.so"), dir / "libvramshim.so");  // found next to it
  fs::permissions(dir / "libvramshim.so", fs::perms(0644));
  return {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
          (dir / "vramshim").string()};
}

// A report that could not be written would be found missing only once the job is over: run
// refuses to start the job instead, naming the directory and the option that names another.
TEST(Run, RefusesToStartWhenTheReportsDirectoryCannotBeWritten) {
  const fs::path dir = short_temp_dir();
  std::vector<std::string> user = cli_as_a_user(dir);
  if (user.empty()) GTEST_SKIP() << "no setpriv to run the CLI as another user than root";
  const fs::path read_only = dir / "read-only";
  fs::create_directory(read_only);
  fs::permissions(read_only, fs::perms(0555));
  struct Case {
    std::string pattern;
    fs::path working_directory;
    std::string says;
  };
  const Case cases[] = {
      {(read_only / "r.%p.json").string(), dir,
       "vramshim: cannot write reports into " + read_only.string() +
           ": Permission denied (name a directory you may write to with --report PATH, or "
           "--report off)\n"},
      {"r.%p.json", read_only,
       "vramshim: cannot write reports into .: Permission denied (name a directory you may "
       "write to with --report PATH, or --report off)\n"},
  };
  for (const Case& c : cases) {
    RunOptions options = cli_options(dir.string());
    options.env["VRAMSHIM_REPORT"] = c.pattern;
    options.working_directory = c.working_directory.string();
    std::vector<std::string> argv = user;
    argv.insert(argv.end(), {"run", "--", "/bin/sh", "-c", "echo ran"});
    const ProgramRun run = run_program(argv, options);
    EXPECT_EQ(run.exit_code, 1) << c.pattern << ": " << run.err;
    EXPECT_EQ(run.err, c.says);
    EXPECT_EQ(run.out, "") << "the job ran";
    // Nothing refused with reports off.
    argv.insert(argv.begin() + static_cast<long>(user.size()) + 1, {"--report", "off"});
    const ProgramRun off = run_program(argv, options);
    EXPECT_EQ(off.exit_code, 0) << off.err;
    EXPECT_EQ(off.out, "ran\n");
  }
}

// VRAMSHIM_LIB as a name or a relative path: the loader would look a name up in the library path,
// and a relative path up from wherever the job has gone since; the job gets the library's absolute
// path, and every program it runs the shim.
TEST(Run, ARelativeShimPathReachesEveryProgramOfTheJob) {
  const fs::path dir = short_temp_dir();
  std::vector<std::string> user = cli_as_a_user(dir);
  if (user.empty()) GTEST_SKIP() << "no setpriv to run the CLI as another user than root";
  fs::create_directory(dir / "lib");
  fs::permissions(dir / "lib", fs::perms(0755));
  for (const fs::path& copy : {dir / "libvramshim.so", dir / "lib/libvramshim.so"}) {
    if (fs::exists(copy)) continue;  // cli_as_a_user's
    fs::copy_file(runfile("shim/libvramshim.so"), copy);
    fs::permissions(copy, fs::perms(0644));
  }
  for (const std::string library : {"libvramshim.so", "lib/libvramshim.so"}) {
    RunOptions options = cli_options(dir.string());
    options.env["VRAMSHIM_LIB"] = library;
    options.working_directory = dir.string();
    std::vector<std::string> argv = user;
    argv.insert(argv.end(),
                {"run", "--report", "off", "--socket", "off", "--", "/bin/sh", "-c",
                 "cd / && echo \"VRAMSHIM_LIB=$VRAMSHIM_LIB\" && exec cat /proc/self/maps"});
    const ProgramRun run = run_program(argv, options);
    EXPECT_EQ(run.exit_code, 0) << library << ": " << run.err;
    EXPECT_NE(run.out.find(" " + (dir / library).string() + "\n"), std::string::npos)
        << library << " is not loaded: " << run.err;
    // So that a `vramshim run` of the job's, from another directory, finds the same shim.
    EXPECT_EQ(run.out.substr(0, run.out.find('\n')), "VRAMSHIM_LIB=" + (dir / library).string());
  }
}

// Without a report from the command, run says how it ended, not that it crashed.
TEST(Run, SaysHowTheCommandEndedWhenItWroteNoReport) {
  const std::string dir = short_temp_dir();
  struct Case {
    std::string script;
    std::string ended;
  };
  const Case cases[] = {
      {"exit 3", "exited with status 3 (it may not have used CUDA)\n"},
      {"exit 0", "exited with status 0 (it may not have used CUDA)\n"},
      {"kill -TERM $$",
       "was killed by SIGTERM (it may not have used CUDA, or was killed before it could write "
       "one)\n"},
  };
  for (const Case& c : cases) {
    const ProgramRun run =
        run_under_cli(dir, {"/bin/sh", "-c", c.script}, {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
    EXPECT_TRUE(std::regex_search(run.err, std::regex("\nvramshim: no report from pid [0-9]+, ")))
        << run.err;
    EXPECT_NE(run.err.find(", which " + c.ended), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("crash"), std::string::npos) << run.err;
  }
}

// A launcher that starts several programs under the shim: run summarizes one report, says whose,
// and lists the others, for `vramshim merge`.
TEST(Run, ListsEveryReportALaunchersProgramsWrote) {
  const std::string dir = short_temp_dir();
  const ProgramRun run =
      run_under_cli(dir, {"/bin/sh", "-c", "\"$0\" & \"$0\" & \"$0\" & wait", program("bad_frees")},
                    {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> written;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") written.push_back(entry.path().string());
  }
  ASSERT_EQ(written.size(), 3u) << run.err;
  std::smatch summarized;
  ASSERT_TRUE(std::regex_search(
      run.err, summarized,
      std::regex("\nvramshim: report ([^ ]+) \\(pid ([0-9]+)'s, summarized below; 2 more of the "
                 "job's processes wrote one\\)\n")))
      << run.err;
  EXPECT_EQ(summarized[1].str(), dir + "/r." + summarized[2].str() + ".json");
  for (const std::string& path : written) {
    if (path == summarized[1].str()) continue;
    EXPECT_NE(run.err.find("\nvramshim: also report " + path + " (pid "), std::string::npos)
        << path << "\n"
        << run.err;
  }
  EXPECT_NE(run.err.find("\nvramshim: one report of the whole job: vramshim merge FILE... -o "
                         "job.json (FILE: each report above)\n"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace vramshim::testing
