// End to end with the real shim: `vramshim run` passes the exit status and SIGTERM
// through, `flush --all` empties three running processes at once, `ps` lists them and removes a
// stale socket, a process whose XDG_RUNTIME_DIR is unusable is still reachable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

std::string cli() { return runfile("analyzer/vramshim"); }
std::string program(const std::string& name) {
  return runfile("tests/integration/programs/" + name);
}

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

// Waits (at most 20 s) until process `pid` caches `bytes` in its pool, as `vramshim stats` says.
bool wait_for_cached(const std::string& runtime_dir, int pid, uint64_t bytes) {
  for (int i = 0; i < 200; ++i) {
    const ProgramRun stats =
        run_program({cli(), "stats", std::to_string(pid), "--json"}, cli_options(runtime_dir));
    if (stats.out.find("\"cached_bytes\":" + std::to_string(bytes)) != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
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
  // there, and matches the pattern.
  const ProgramRun aborted = run_under_cli(dir, {program("fatal_signal"), "abort"},
                                           {{"VRAMSHIM_REPORT", pattern}, {"RANK", "0"}});
  EXPECT_EQ(aborted.exit_code, 128 + SIGABRT) << aborted.err;
  EXPECT_NE(aborted.err.find("the program crashed before writing one?"), std::string::npos)
      << aborted.err;
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

TEST(Run, SaysWhereTheReportWillBeWrittenWhenItStarts) {
  const std::string dir = short_temp_dir();
  const ProgramRun run =
      run_under_cli(dir, {program("bad_frees")}, {{"VRAMSHIM_REPORT", dir + "/r.%p.json"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(run.err, match,
                                std::regex("vramshim: pid ([0-9]+) runs under the shim; its "
                                           "report: ([^\n]+)")))
      << run.err;
  EXPECT_EQ(match[2].str(), dir + "/r." + match[1].str() + ".json");
  EXPECT_TRUE(fs::exists(match[2].str()));
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
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);  // the command died of the forwarded SIGTERM
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
  ASSERT_TRUE(wait_for_cached(missing, process.pid(), 4u << 20));
  const ProgramRun flush =
      run_program({cli(), "flush", std::to_string(process.pid())}, cli_options(missing));
  ASSERT_EQ(flush.exit_code, 0) << flush.err;
  EXPECT_NE(flush.out.find("released 4.0 MiB"), std::string::npos) << flush.out;
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
                            "device=\"0\"\\} 4194304")))
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
  EXPECT_EQ(run_program({cli(), "run", "/bin/sh", "-c", "kill -TERM $$"}, options).exit_code,
            128 + SIGTERM);
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

}  // namespace
}  // namespace vramshim::testing
