// Out of memory, explained: when the shim returns CUDA_ERROR_OUT_OF_MEMORY it prints one block on
// stderr (request, device, this process, verdict, the sites holding the most, the failing call, the
// report) and writes an "oom" report beside the exit report; storms print a bounded number of
// blocks and write one report; a program that retries goes on.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

std::string program() { return runfile("tests/integration/programs/out_of_memory"); }

struct Scenario {
  ProgramRun run;
  std::string report;  // the exit report's path; the oom report is beside it
};

Scenario run_scenario(const std::string& mode, std::map<std::string, std::string> env = {}) {
  const std::string directory = short_temp_dir();
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", directory + "/mem.json"},
                 {"VRAMSHIM_SOCKET", "off"},
                 {"FAKECUDA_CAPACITY", "1GiB"}};
  for (auto& [key, value] : env) options.env[key] = value;
  return {run_program({program(), mode}, options), directory + "/mem.json"};
}

// The lines of the out-of-memory blocks on stderr.
int blocks(const std::string& err) {
  int count = 0;
  for (size_t at = 0; (at = err.find("vramshim: out of memory: ", at)) != std::string::npos; ++at) {
    ++count;
  }
  return count;
}

std::string line_after(const std::string& err, const std::string& marker) {
  const size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  const size_t end = err.find('\n', at);
  return err.substr(at, end - at);
}

// The site lines under "the sites holding the most:".
std::vector<std::string> leading_site_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err.substr(err.find("the sites holding the most:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("vramshim:     ", 0) == 0) lines.push_back(line);
  return lines;
}

void expect_oom_report(const Scenario& s, const char* verdict, const char* kind) {
  const std::string oom_path = s.report.substr(0, s.report.size() - 5) + ".oom.json";
  ASSERT_TRUE(fs::exists(oom_path)) << s.run.err;
  const nlohmann::json report = read_report(oom_path);
  EXPECT_EQ(report["reason"], "oom");
  // It names other users' processes and their command lines: a root job's is its owner's to read.
  if (::geteuid() == 0) {
    EXPECT_EQ(fs::status(oom_path).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
  }
  const nlohmann::json& oom = report["oom"];
  EXPECT_EQ(oom["verdict"], verdict) << oom.dump();
  EXPECT_EQ(oom["request"]["kind"], kind);
  EXPECT_GE(oom["request"]["stack"].get<int64_t>(), 0);
  EXPECT_EQ(oom["device_total_bytes"], uint64_t{1} << 30);
  EXPECT_FALSE(oom["leading_sites"].empty());
  EXPECT_NE(s.run.err.find("vramshim:   report: " + oom_path), std::string::npos) << s.run.err;
  // The exit report is still written, and is a report of its own.
  EXPECT_EQ(read_report(s.report)["reason"], "exit");
}

TEST(OutOfMemory, ExhaustionByOneSiteNamesItAndWritesTheReport) {
  const Scenario s = run_scenario("exhaustion");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim: out of memory: cuMemAlloc of 64.0 MiB (device memory) on "
                           "device 0 failed"),
            std::string::npos)
      << s.run.err;
  EXPECT_NE(line_after(s.run.err, "verdict: ").find("exhaustion by this process"),
            std::string::npos)
      << s.run.err;
  const std::vector<std::string> sites = leading_site_lines(s.run.err);
  ASSERT_FALSE(sites.empty()) << s.run.err;
  EXPECT_NE(sites[0].find("1.0 GiB in 16 allocations  hold_everything"), std::string::npos)
      << sites[0];
  EXPECT_NE(s.run.err.find("the failing call:\nvramshim:     hold_everything"), std::string::npos)
      << s.run.err;
  expect_oom_report(s, "exhaustion", "device");
}

TEST(OutOfMemory, FragmentationIsToldFromExhaustion) {
  const Scenario s = run_scenario("fragmentation");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(line_after(s.run.err, "verdict: "),
            "verdict: fragmentation: the pool holds 512.0 MiB free, but no free block of 1.5 MiB "
            "(the largest is 1.0 MiB)")
      << s.run.err;
  EXPECT_NE(leading_site_lines(s.run.err)[0].find("fill_with_small_blocks"), std::string::npos);
  expect_oom_report(s, "fragmentation", "device");
  // The fragmentation picture: every segment with its free blocks.
  const nlohmann::json oom =
      read_report(s.report.substr(0, s.report.size() - 5) + ".oom.json")["oom"];
  uint64_t free_bytes = 0;
  for (const nlohmann::json& segment : oom["segments"]) {
    for (const nlohmann::json& block : segment["blocks"]) {
      if (block[2] == "free") free_bytes += block[1].get<uint64_t>();
    }
  }
  EXPECT_EQ(free_bytes, 512u << 20);
  EXPECT_EQ(oom["pool_largest_free_block"], 1u << 20);
}

TEST(OutOfMemory, TheLimitRefusingIsSaidSo) {
  const Scenario s = run_scenario("limit", {{"VRAMSHIM_LIMIT", "300MiB"}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(line_after(s.run.err, "verdict: "),
            "verdict: limit: VRAMSHIM_LIMIT is 300.0 MiB and this process has 256.0 MiB in use")
      << s.run.err;
  expect_oom_report(s, "limit", "device");
}

TEST(OutOfMemory, AStreamOrderedRefusalIsExplainedToo) {
  const Scenario s = run_scenario("async");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.err.find("cuMemAllocAsync of 64.0 MiB (stream-ordered memory)"),
            std::string::npos)
      << s.run.err;
  EXPECT_NE(s.run.err.find("1.0 GiB served by the driver directly"), std::string::npos);
  EXPECT_NE(leading_site_lines(s.run.err)[0].find("hold_stream_ordered"), std::string::npos);
  expect_oom_report(s, "exhaustion", "async");
}

// Stream-ordered memory of another device than the current one runs out: the retry trims that
// device's driver pool (it trimmed the current device's: the first 800 MiB failed), and the
// explanation gives that device's figures (it gave the current device's, and blamed other
// processes for the difference).
TEST(OutOfMemory, AnotherDevicesRefusalIsRetriedAndExplainedForThatDevice) {
  const std::string directory = short_temp_dir();
  RunOptions options = reporting_to(directory + "/mem.json");
  options.env["FAKECUDA_DEVICES"] = "2";
  options.env["FAKECUDA_CAPACITY"] = "1GiB";
  const ProgramRun run =
      run_program({runfile("tests/integration/programs/other_device_out_of_memory")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "fits=0 does_not=2\n") << run.err;
  const nlohmann::json oom = read_report(directory + "/mem.oom.json")["oom"];
  EXPECT_EQ(oom["request"]["device"], 1) << oom.dump();
  EXPECT_EQ(oom["device_total_bytes"], uint64_t{1} << 30);
  EXPECT_EQ(oom["device_free_bytes"], uint64_t{224} << 20) << oom.dump();
  EXPECT_NE(oom["verdict"], "elsewhere") << oom.dump();
}

TEST(OutOfMemory, AProgramThatFreesAndRetriesGoesOnAfterOneBlock) {
  const Scenario s = run_scenario("retry");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.out.find("done"), std::string::npos);
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
}

TEST(OutOfMemory, AStormOfFailuresFromFourThreadsPrintsOneBlockAndOneReport) {
  const Scenario s = run_scenario("storm");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.out.find("failures=10001"), std::string::npos) << s.run.out;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim: 10000 more out-of-memory failures after the last "
                           "explanation"),
            std::string::npos)
      << s.run.err;
  int oom_reports = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(s.report).parent_path())) {
    if (entry.path().string().find(".oom") != std::string::npos) ++oom_reports;
  }
  EXPECT_EQ(oom_reports, 1);
}

// Other processes on the device. The simulated driver gives each process a device of its own, so
// FAKECUDA_OTHER_PROCESSES_BYTES stands for what the others use; their shims answer on their
// sockets, and the NVML test double (tests/nvml) lists what FAKE_NVML_PROCESSES says.

std::string nvml_double_directory() {
  const std::string library = runfile("tests/nvml/libnvidia-ml.so.1");
  return library.substr(0, library.rfind('/'));
}

std::string fake_driver_directory() {
  const std::string library = runfile("tests/fakecuda/libcuda.so.1");
  return library.substr(0, library.rfind('/'));
}

// A program under the shim with 16 MiB cached in its pool, its socket in `runtime_dir`/vramshim.
class CachingNeighbour {
 public:
  explicit CachingNeighbour(const std::string& runtime_dir)
      : program_({runfile("tests/integration/programs/cached_idle"), "cache", "16"},
                 neighbour_options(runtime_dir)) {
    socket_ = runtime_dir + "/vramshim/" + std::to_string(program_.pid()) + ".sock";
  }
  int pid() const { return program_.pid(); }
  // Waits (at most 20 s) until its shim says it caches 16 MiB.
  bool ready() const {
    ::setenv("VRAMSHIM_SOCKET", socket_.c_str(), 1);  // for control_request; unset after
    bool cached = false;
    for (int i = 0; i < 200 && !cached; ++i) {
      cached = json_number(control_request("stats"), "cached_bytes") == 16 << 20;
      if (!cached) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::unsetenv("VRAMSHIM_SOCKET");
    return cached;
  }

 private:
  static RunOptions neighbour_options(const std::string& runtime_dir) {
    RunOptions options;
    options.env = {{"XDG_RUNTIME_DIR", runtime_dir}, {"VRAMSHIM_REPORT", "off"}};
    return options;
  }
  BackgroundProgram program_;
  std::string socket_;
};

TEST(OutOfMemory, MemoryHeldElsewhereNamesTheOtherProcessesFromTheirShimsAndNvml) {
  const std::string runtime_dir = short_temp_dir();
  CachingNeighbour neighbour(runtime_dir);
  ASSERT_TRUE(neighbour.ready());
  const std::string others = std::to_string(neighbour.pid()) + ":20971520,1:314572800";
  const Scenario s = run_scenario(
      "exhaustion", {{"XDG_RUNTIME_DIR", runtime_dir},
                     {"FAKECUDA_OTHER_PROCESSES_BYTES", "900MiB"},
                     {"LD_LIBRARY_PATH", fake_driver_directory() + ":" + nvml_double_directory()},
                     {"FAKE_NVML_PROCESSES", others}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(line_after(s.run.err, "verdict: "),
            "verdict: memory held elsewhere: the device's used memory exceeds this process's by "
            "900.0 MiB")
      << s.run.err;
  const std::string listed = s.run.err.substr(s.run.err.find("other processes on device 0:"));
  // The neighbour, from its shim (and NVML's figure beside it); init, from NVML alone.
  const std::regex neighbour_line("vramshim:     pid " + std::to_string(neighbour.pid()) +
                                  " [^\n]*cached_idle cache 16: 0 B in use, 16.0 MiB cached, "
                                  "20.0 MiB used \\(vramshim\\)\n");
  EXPECT_TRUE(std::regex_search(listed, neighbour_line)) << listed;
  EXPECT_NE(listed.find("vramshim:     pid 1 "), std::string::npos) << listed;
  EXPECT_NE(listed.find(": 300.0 MiB used (nvml)"), std::string::npos) << listed;
  expect_oom_report(s, "held_elsewhere", "device");
  const nlohmann::json oom =
      read_report(s.report.substr(0, s.report.size() - 5) + ".oom.json")["oom"];
  // Other programs under the shim on this machine (other tests, a real job) answer from the shared
  // default directory too; besides them, exactly NVML's init and the neighbour.
  const nlohmann::json* init = nullptr;
  const nlohmann::json* cached = nullptr;
  for (const nlohmann::json& process : oom["other_processes"]) {
    if (process["pid"] == 1) {
      init = &process;
    } else if (process["pid"] == neighbour.pid()) {
      cached = &process;
    } else {
      EXPECT_EQ(process["source"], "vramshim") << oom.dump();
    }
  }
  ASSERT_NE(init, nullptr) << oom.dump();
  ASSERT_NE(cached, nullptr) << oom.dump();
  EXPECT_EQ((*init)["source"], "nvml");
  EXPECT_EQ((*init)["used_bytes"], 300 << 20);
  EXPECT_EQ((*cached)["source"], "vramshim");
  EXPECT_EQ((*cached)["cached_bytes"], 16 << 20);
  EXPECT_EQ((*cached)["used_bytes"], 20 << 20);
}

TEST(OutOfMemory, WithoutNvmlTheBlockSaysSoAndStillListsTheShimmedProcesses) {
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has NVML";
  }
  const std::string runtime_dir = short_temp_dir();
  CachingNeighbour neighbour(runtime_dir);
  ASSERT_TRUE(neighbour.ready());
  const Scenario s = run_scenario("exhaustion", {{"XDG_RUNTIME_DIR", runtime_dir},
                                                 {"FAKECUDA_OTHER_PROCESSES_BYTES", "900MiB"}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim:   (no NVML: "), std::string::npos) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim:     pid " + std::to_string(neighbour.pid()) + " "),
            std::string::npos)
      << s.run.err;
  expect_oom_report(s, "held_elsewhere", "device");
}

TEST(OutOfMemory, AStuckNvmlDelaysTheExplanationByItsBoundOnly) {
  const std::string runtime_dir = short_temp_dir();
  const auto start = std::chrono::steady_clock::now();
  const Scenario s = run_scenario(
      "exhaustion", {{"XDG_RUNTIME_DIR", runtime_dir},
                     {"LD_LIBRARY_PATH", fake_driver_directory() + ":" + nvml_double_directory()},
                     {"FAKE_NVML_PROCESSES", "1:314572800"},
                     {"FAKE_NVML_DELAY_MS", "30000"}});
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim:   (NVML did not answer within 200 ms;"), std::string::npos)
      << s.run.err;
  EXPECT_EQ(blocks(s.run.err), 1);
  // The program was not held until NVML answered (30 s).
  EXPECT_LT(seconds.count(), 20.0);
}

// Ranks failing together are what the list of other processes is for: each asks the others'
// sockets while they explain their own failure, and each must answer. NVML is stuck, so every
// explanation lasts its 200 ms bound; the processes stay until both have written their report.
TEST(OutOfMemory, ProcessesFailingTogetherListEachOther) {
  const std::string runtime_dir = short_temp_dir();
  const std::string meeting = short_temp_dir();
  RunOptions options;
  options.env = {{"XDG_RUNTIME_DIR", runtime_dir},
                 {"FAKECUDA_CAPACITY", "1GiB"},
                 {"LD_LIBRARY_PATH", fake_driver_directory() + ":" + nvml_double_directory()},
                 {"FAKE_NVML_PROCESSES", "1:314572800"},
                 {"FAKE_NVML_DELAY_MS", "30000"}};
  ProgramRun runs[2];
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    RunOptions rank_options = options;
    rank_options.env["VRAMSHIM_REPORT"] = meeting + "/rank" + std::to_string(rank) + ".json";
    ranks.emplace_back([&runs, rank, rank_options, &meeting] {
      runs[rank] = run_program({program(), "together", meeting}, rank_options);
    });
  }
  auto count_files = [&meeting](const std::string& prefix, const std::string& suffix) {
    int count = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(meeting)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        ++count;
      }
    }
    return count;
  };
  auto wait_for_files = [&count_files](const std::string& prefix, const std::string& suffix) {
    for (int i = 0; i < 400 && count_files(prefix, suffix) < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  wait_for_files("ready.", "");
  std::ofstream(meeting + "/start").close();
  wait_for_files("rank", ".oom.json");
  std::ofstream(meeting + "/stop").close();
  for (std::thread& rank : ranks) rank.join();

  int pids[2] = {};
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(runs[rank].exit_code, 0) << runs[rank].err;
    const size_t at = runs[rank].out.find("pid=");
    ASSERT_NE(at, std::string::npos) << runs[rank].out;
    pids[rank] = std::stoi(runs[rank].out.substr(at + 4));
  }
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& err = runs[rank].err;
    const int other = pids[1 - rank];
    EXPECT_EQ(blocks(err), 1) << err;
    // The other rank answered (another test's process on the node may not, under load).
    EXPECT_EQ(err.find("(pid " + std::to_string(other) + " ("), std::string::npos) << err;
    const size_t listed = err.find("other processes on device 0:");
    ASSERT_NE(listed, std::string::npos) << err;
    EXPECT_NE(err.find("vramshim:     pid " + std::to_string(other) + " ", listed),
              std::string::npos)
        << err;
    const nlohmann::json oom =
        read_report(meeting + "/rank" + std::to_string(rank) + ".oom.json")["oom"];
    bool lists_other = false;
    for (const nlohmann::json& process : oom["other_processes"]) {
      if (process["pid"] == other) lists_other = process["source"] == "vramshim";
    }
    EXPECT_TRUE(lists_other) << oom.dump();
  }
}

TEST(OutOfMemory, FailuresWhileAnExplanationIsWrittenAreOnlyCounted) {
  // The explanation waits out NVML's 200 ms bound; meanwhile the program fails every 10 ms. None
  // of those failures may start an explanation of its own.
  const Scenario s = run_scenario(
      "persistent", {{"XDG_RUNTIME_DIR", short_temp_dir()},
                     {"LD_LIBRARY_PATH", fake_driver_directory() + ":" + nvml_double_directory()},
                     {"FAKE_NVML_PROCESSES", "1:314572800"},
                     {"FAKE_NVML_DELAY_MS", "30000"}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.out.find("failures=101"), std::string::npos) << s.run.out;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim: 100 more out-of-memory failures after the last explanation"),
            std::string::npos)
      << s.run.err;
}

TEST(OutOfMemory, AnExitWhileTheFailureIsExplainedWaitsForItsReport) {
  // The control thread explains within 100 ms and waits out NVML's 200 ms bound; the program exits
  // 150 ms after its failure, meanwhile. The explanation still ends with its report, before the
  // exit report.
  const Scenario s = run_scenario(
      "brief", {{"XDG_RUNTIME_DIR", short_temp_dir()},
                {"LD_LIBRARY_PATH", fake_driver_directory() + ":" + nvml_double_directory()},
                {"FAKE_NVML_PROCESSES", "1:314572800"},
                {"FAKE_NVML_DELAY_MS", "30000"},
                {"VRAMSHIM_LOG", "info"}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  expect_oom_report(s, "exhaustion", "device");
  EXPECT_LT(s.run.err.find("vramshim: out of memory: "), s.run.err.find("report written to"))
      << s.run.err;
}

}  // namespace
}  // namespace vramshim::testing
