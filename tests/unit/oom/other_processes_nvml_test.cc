// find_other_processes with and without NVML, in a probe process (other_processes_probe.cc) whose
// library path holds the NVML double (tests/nvml) or not, beside a shimmed process.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/oom/child_processes.h"

namespace vramshim::oom {
namespace {

using testing::ChildProcesses;
using testing::ProgramRun;
using testing::TemporaryDirectory;

// One call's output, as the probe prints it.
struct ProbeCall {
  double elapsed_ms = -1;
  std::vector<std::string> processes;  // "PID SOURCE IN_USE CACHED USED COMMAND"
  std::vector<std::string> notes;
  std::string own_used;  // NVML's figure for the probe itself, "-" when none
};

struct ProbeRun {
  std::vector<ProbeCall> calls;
  std::string nvml_initialized;
  std::string output;
};

ProbeRun parse_probe(const ProgramRun& run) {
  ProbeRun parsed;
  parsed.output = run.output;
  std::istringstream lines(run.output);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.find(' ');
    const std::string kind = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (kind == "call") {
      parsed.calls.emplace_back();
      parsed.calls.back().elapsed_ms = std::stod(rest.substr(rest.find(' ') + 1));
    } else if (kind == "process" && !parsed.calls.empty()) {
      parsed.calls.back().processes.push_back(rest);
    } else if (kind == "note" && !parsed.calls.empty()) {
      parsed.calls.back().notes.push_back(rest);
    } else if (kind == "own" && !parsed.calls.empty()) {
      parsed.calls.back().own_used = rest;
    } else if (kind == "nvml_initialized") {
      parsed.nvml_initialized = rest;
    }
  }
  return parsed;
}

// The start of this process's command line, arguments joined by spaces.
std::string own_command_start() {
  std::ifstream file("/proc/self/cmdline");
  std::string command((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::replace(command.begin(), command.end(), '\0', ' ');
  return command.substr(0, 100);
}

bool has_note_starting(const ProbeCall& call, const std::string& text) {
  for (const std::string& note : call.notes) {
    if (note.rfind(text, 0) == 0) return true;
  }
  return false;
}

class OtherProcessesNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temporary_.path().empty());
    sockets_ = temporary_.path() + "/sockets";
    no_libraries_ = temporary_.path() + "/no-libraries";
    ASSERT_EQ(::mkdir(sockets_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(no_libraries_.c_str(), 0700), 0);
    const std::string double_path = testing::runfile("tests/nvml/libnvidia-ml.so.1");
    nvml_double_dir_ = double_path.substr(0, double_path.rfind('/'));
    shimmed_ = children_.start_stats_server(sockets_, {"serve", "111", "222"});
    ASSERT_GT(shimmed_, 0);
  }

  // The probe's calls with `library_path` as LD_LIBRARY_PATH and the NVML double's variables.
  ProgramRun run_probe(const std::string& library_path,
                       std::vector<std::pair<std::string, std::string>> environment, int calls,
                       const std::string& bus_id, bool in_new_pid_namespace) {
    environment.emplace_back("LD_LIBRARY_PATH", library_path);
    return testing::run_program(testing::runfile("tests/unit/oom/other_processes_probe"),
                                {"0", std::to_string(calls), bus_id, sockets_}, environment,
                                in_new_pid_namespace);
  }

  ProbeRun probe(const std::string& library_path,
                 std::vector<std::pair<std::string, std::string>> environment, int calls = 1,
                 const std::string& bus_id = "-") {
    const ProgramRun run = run_probe(library_path, std::move(environment), calls, bus_id, false);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return parse_probe(run);
  }

  // The shimmed process's line, with NVML's figure `used`.
  std::string shimmed_process_line(const std::string& used) const {
    return std::to_string(shimmed_) + " vramshim 111 222 " + used + " stats_server " + sockets_ +
           "/" + std::to_string(shimmed_) + ".sock serve 111 222";
  }

  TemporaryDirectory temporary_;
  std::string sockets_, no_libraries_, nvml_double_dir_;
  ChildProcesses children_;
  pid_t shimmed_ = 0;
};

TEST_F(OtherProcessesNvmlTest, WithNvmlEveryProcessOnTheDeviceIsListed) {
  const pid_t gone = testing::dead_pid();
  const pid_t test = ::getpid();
  // NVML lists the shimmed process, the probe itself, one that has ended since and this test
  // (whose memory NVML may not say).
  const ProbeRun run = probe(
      nvml_double_dir_,
      {{"FAKE_NVML_PROCESSES", std::to_string(shimmed_) + ":5000,%self%:7000," +
                                   std::to_string(gone) + ":9000," + std::to_string(test) + ":-"}});
  ASSERT_EQ(run.calls.size(), 1u) << run.output;
  const ProbeCall& call = run.calls[0];
  ASSERT_EQ(call.processes.size(), 3u) << run.output;
  std::vector<std::pair<pid_t, std::string>> expected = {
      {shimmed_, shimmed_process_line("5000")},
      {gone, std::to_string(gone) + " nvml - - 9000 "},
      {test, std::to_string(test) + " nvml - - - " + own_command_start()},
  };
  std::sort(expected.begin(), expected.end());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(call.processes[i].rfind(expected[i].second, 0), 0u)
        << call.processes[i] << "\nexpected to start with\n"
        << expected[i].second;
  }
  EXPECT_TRUE(call.notes.empty()) << run.output;
  // Its own figure is not another process's: it counts its context, which no allocation made.
  EXPECT_EQ(call.own_used, "7000") << run.output;
  EXPECT_EQ(run.nvml_initialized, "0") << "every nvmlInit_v2 is shut down";
  EXPECT_LT(call.elapsed_ms, 200) << "NVML answered: nothing to wait for";
  std::printf("scan of 1 shimmed process with NVML listing 4: %.1f ms\n", call.elapsed_ms);
}

TEST_F(OtherProcessesNvmlTest, InAPidNamespaceNvmlsHostPidsAreNotMatchedWithLocalOnes) {
  // The probe runs as pid 1 of its own PID namespace; NVML lists the probe and the shimmed process
  // by their pids here, outside.
  const ProgramRun run = run_probe(
      nvml_double_dir_,
      {{"FAKE_NVML_PROCESSES", "%self%:7000," + std::to_string(shimmed_) + ":5000"}}, 1, "-", true);
  if (run.exit_code == testing::kNoPidNamespace) GTEST_SKIP() << "cannot create a PID namespace";
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const ProbeRun parsed = parse_probe(run);
  ASSERT_EQ(parsed.calls.size(), 1u) << run.output;
  const ProbeCall& call = parsed.calls[0];
  // Only the shimmed process is listed, by NVML alone, without a command: its socket's server is
  // outside the namespace, where SO_PEERCRED cannot name it.
  EXPECT_EQ(call.processes, std::vector<std::string>{std::to_string(shimmed_) + " nvml - - 5000 "})
      << run.output;
  EXPECT_TRUE(has_note_starting(call, "this process runs in a PID namespace")) << run.output;
  EXPECT_TRUE(has_note_starting(
      call, sockets_ + "/" + std::to_string(shimmed_) + ".sock is served by pid 0"))
      << run.output;
}

TEST_F(OtherProcessesNvmlTest, WithoutNvmlANoteSaysSo) {
  void* installed = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (installed != nullptr) GTEST_SKIP() << "this machine has an NVML of its own";
  const ProbeRun run = probe(no_libraries_, {{"FAKE_NVML_PROCESSES", "1:5000"}});
  ASSERT_EQ(run.calls.size(), 1u) << run.output;
  const ProbeCall& call = run.calls[0];
  EXPECT_EQ(call.processes, std::vector<std::string>{shimmed_process_line("-")}) << run.output;
  EXPECT_TRUE(has_note_starting(call, "no NVML: libnvidia-ml.so.1: cannot open shared object file"))
      << run.output;
  EXPECT_EQ(run.nvml_initialized, "-");
}

TEST_F(OtherProcessesNvmlTest, NvmlIsAskedForTheDeviceAtTheBusIdOfTheCudaDevice) {
  const std::vector<std::pair<std::string, std::string>> elsewhere = {
      {"FAKE_NVML_PROCESSES", std::to_string(shimmed_) + ":5000"},
      {"FAKE_NVML_BUS_ID", "00000000:2A:00.0"}};
  // CUDA device 0 of the simulated driver is at 0000:18:00.0; NVML's one device is not.
  ProbeRun run = probe(nvml_double_dir_, elsewhere);
  ASSERT_EQ(run.calls.size(), 1u) << run.output;
  EXPECT_EQ(run.calls[0].processes, std::vector<std::string>{shimmed_process_line("-")})
      << run.output;
  EXPECT_TRUE(has_note_starting(run.calls[0],
                                "NVML has no device at PCI bus id 0000:18:00.0: Not Found (6)"))
      << run.output;
  EXPECT_EQ(run.nvml_initialized, "0");
  // A bus id the caller gives is used as it is.
  run = probe(nvml_double_dir_, elsewhere, 1, "0000:2A:00.0");
  ASSERT_EQ(run.calls.size(), 1u) << run.output;
  EXPECT_EQ(run.calls[0].processes, std::vector<std::string>{shimmed_process_line("5000")})
      << run.output;
}

TEST_F(OtherProcessesNvmlTest, AStuckNvmlIsGivenUpWithinTheBudgetAndNotAskedAgain) {
  const ProbeRun run = probe(
      nvml_double_dir_,
      {{"FAKE_NVML_PROCESSES", std::to_string(shimmed_) + ":5000"}, {"FAKE_NVML_DELAY_MS", "5000"}},
      2);
  ASSERT_EQ(run.calls.size(), 2u) << run.output;
  const ProbeCall& first = run.calls[0];
  EXPECT_EQ(first.processes, std::vector<std::string>{shimmed_process_line("-")}) << run.output;
  EXPECT_TRUE(has_note_starting(first, "NVML did not answer within 200 ms")) << run.output;
  EXPECT_GE(first.elapsed_ms, 200);
  EXPECT_LT(first.elapsed_ms, 300);
  // The first query still hangs: the second call does without NVML, and waits for nothing.
  const ProbeCall& second = run.calls[1];
  EXPECT_EQ(second.processes, std::vector<std::string>{shimmed_process_line("-")}) << run.output;
  EXPECT_TRUE(has_note_starting(second, "NVML not asked: an earlier NVML query has not returned"))
      << run.output;
  EXPECT_LT(second.elapsed_ms, 100);
  std::printf("scan with a stuck NVML: %.1f ms, then %.1f ms\n", first.elapsed_ms,
              second.elapsed_ms);
}

}  // namespace
}  // namespace vramshim::oom
