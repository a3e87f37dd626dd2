// Runs alloc_app.py under every CPython 3.10-3.15 found on this machine and checks what
// //shim/python captured there: Python frames with the right files, functions and lines, merged
// where the eval loop's native frames were; threads; interpreter exit; the deep flush.
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/python/installed_pythons.h"

namespace {

using nlohmann::json;

const char kApp[] = "tests/python/alloc_app.py";
const char kProbe[] = "tests/python/libpython_probe.so";

std::string absolute(const char* path) {
  char resolved[PATH_MAX];
  return realpath(path, resolved) != nullptr ? resolved : path;
}

// Line numbers of the "# line: NAME" markers in alloc_app.py.
std::map<std::string, int> marked_lines() {
  std::map<std::string, int> lines;
  std::ifstream source(kApp);
  std::string text;
  for (int number = 1; std::getline(source, text); ++number) {
    const size_t marker = text.find("# line: ");
    if (marker != std::string::npos) lines[text.substr(marker + 8)] = number;
  }
  return lines;
}

struct AppRun {
  int exit_status = -1;
  std::string output;
};

AppRun run_app(const std::string& python, const std::string& scenario) {
  const std::string command =
      "timeout 120 " + python + " " + absolute(kApp) + " " + absolute(kProbe) + " " + scenario;
  AppRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof(chunk), pipe)) > 0) run.output.append(chunk, got);
  const int status = pclose(pipe);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

json run_json(const std::string& python, const std::string& scenario) {
  const AppRun run = run_app(python, scenario);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  // The scenario's result is the last line of its output.
  const size_t end = run.output.find_last_not_of('\n');
  if (run.exit_status != 0 || end == std::string::npos) return json::object();
  const size_t start = run.output.rfind('\n', end);
  const size_t from = start == std::string::npos ? 0 : start + 1;
  return json::parse(run.output.substr(from, end + 1 - from), nullptr, false);
}

struct PythonFrame {
  std::string function;
  int line;
  bool operator==(const PythonFrame& other) const {
    return function == other.function && line == other.line;
  }
};

std::ostream& operator<<(std::ostream& out, const PythonFrame& frame) {
  return out << frame.function << ":" << frame.line;
}

// The innermost `count` Python frames of the hybrid stack (all when fewer): frames of alloc_app.py.
std::vector<PythonFrame> python_frames(const json& stack, size_t count) {
  std::vector<PythonFrame> frames;
  for (const json& frame : stack["hybrid"]) {
    if (!frame["python"].get<bool>()) continue;
    if (frames.size() == count) break;
    EXPECT_NE(frame["file"].get<std::string>().find("alloc_app.py"), std::string::npos) << frame;
    frames.push_back({frame["function"].get<std::string>(), frame["line"].get<int>()});
  }
  return frames;
}

// The stack's frames with each eval-loop frame (native) or each run of Python frames (hybrid)
// written as "<eval>": equal for both when the Python frames took the eval frames' places.
std::vector<std::string> with_eval_placeholders(const json& frames) {
  std::vector<std::string> names;
  for (const json& frame : frames) {
    const bool eval = frame["python"].get<bool>() || frame.value("eval", false);
    if (eval && !names.empty() && names.back() == "<eval>" && frame["python"].get<bool>()) {
      continue;
    }
    names.push_back(eval ? "<eval>" : frame["function"].get<std::string>());
  }
  return names;
}

class PythonStacksTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::map<std::string, int> lines_ = marked_lines();
  int line(const std::string& marker) const { return lines_.at(marker); }
};

TEST_P(PythonStacksTest, StacksNameTheAppsFunctionsAndLinesWhereTheEvalFramesWere) {
  const json result = run_json(GetParam(), "stacks");
  const std::map<std::string, std::vector<PythonFrame>> expected = {
      {"cdll_leak",
       {{"call_json", line("probe_call")},
        {"leak_from_python", line("leak")},
        {"scenario_stacks", line("stacks_cdll")},
        {"<module>", line("main")}}},
      {"pydll_leak",
       {{"call_json", line("probe_call")},
        {"leak_from_python", line("leak")},
        {"scenario_stacks", line("stacks_pydll")},
        {"<module>", line("main")}}},
      {"cdll_churn",
       {{"call_json", line("probe_call")},
        {"churn_from_python", line("churn")},
        {"scenario_stacks", line("stacks_cdll_churn")},
        {"<module>", line("main")}}},
      {"pydll_churn",
       {{"call_json", line("probe_call")},
        {"churn_from_python", line("churn")},
        {"scenario_stacks", line("stacks_pydll_churn")},
        {"<module>", line("main")}}},
  };
  for (const auto& [name, frames] : expected) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(result.contains(name)) << result;
    const json& stack = result[name];
    ASSERT_TRUE(stack["python_support"].get<bool>());
    EXPECT_EQ(python_frames(stack, SIZE_MAX), frames);

    // Python frames sit below the ctypes call that reached the probe, and replace exactly the
    // eval loop's frames: everything else stays in place.
    const json& hybrid = stack["hybrid"];
    size_t ffi_call = hybrid.size();
    size_t first_python = hybrid.size();
    for (size_t i = 0; i < hybrid.size(); ++i) {
      if (hybrid[i]["python"].get<bool>() && first_python == hybrid.size()) first_python = i;
      if (!hybrid[i]["python"].get<bool>() && hybrid[i]["function"] == "ffi_call") ffi_call = i;
    }
    EXPECT_LT(ffi_call, first_python) << hybrid;
    EXPECT_EQ(with_eval_placeholders(hybrid), with_eval_placeholders(stack["native"]));
    for (const json& frame : hybrid) EXPECT_FALSE(frame.value("eval", false)) << frame;
  }
}

TEST_P(PythonStacksTest, FourThreadsCapturingAtOnceEachSeeTheirOwnFrames) {
  const json result = run_json(GetParam(), "threads");
  ASSERT_EQ(result["threads"].size(), 4u) << result;
  for (const json& seen : result["threads"]) {
    ASSERT_EQ(seen.size(), 1u) << seen;
    EXPECT_EQ(json::parse(seen[0].get<std::string>()),
              json::array({json::array({"call_json", line("probe_call")}),
                           json::array({"churn_from_python", line("churn")})}));
  }
}

TEST_P(PythonStacksTest, CapturesWhileAnotherThreadHoldsTheGil) {
  const json result = run_json(GetParam(), "busy");
  const json& capture = result["capture"];
  ASSERT_TRUE(capture.contains("captures")) << result;
  EXPECT_GT(capture["captures"].get<int64_t>(), 0);
  const std::vector<PythonFrame> frames = python_frames(capture["last"], 2);
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0], (PythonFrame{"call_json", line("probe_call")}));
  EXPECT_EQ(frames[1], (PythonFrame{"capture_while_gil_is_held", line("busy")}));
}

TEST_P(PythonStacksTest, InterpreterExitsWhileDaemonThreadsCapture) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const AppRun run = run_app(GetParam(), "exit");
    EXPECT_EQ(run.exit_status, 0) << run.output;
    EXPECT_NE(run.output.find("\"exiting\": true"), std::string::npos) << run.output;
  }
}

TEST_P(PythonStacksTest, DeepFlushRunsTheFrameworksCachesReleaseWithTheGil) {
  const json result = run_json(GetParam(), "deep_flush");
  ASSERT_TRUE(result.contains("released")) << result;

  const json& released = result["released"];
  EXPECT_TRUE(released["ok"].get<bool>()) << released;
  ASSERT_EQ(released["steps"].size(), 2u) << released;
  EXPECT_EQ(released["steps"][0]["name"], "torch.cuda.empty_cache");
  EXPECT_EQ(released["steps"][0]["outcome"], "ran");
  EXPECT_EQ(released["steps"][1]["outcome"], "failed");
  EXPECT_EQ(released["steps"][1]["detail"], "RuntimeError: simulated pool failure");
  EXPECT_EQ(released["observed"],
            json({"torch.cuda.empty_cache", "cupy.get_default_memory_pool().free_all_blocks"}));
  EXPECT_EQ(result["empty_cache_calls_after_flush"], 1);

  EXPECT_TRUE(result["with_busy_thread"]["ok"].get<bool>()) << result["with_busy_thread"];
  EXPECT_EQ(result["empty_cache_calls_after_busy"], 2);

  const json& gil_held = result["gil_held"];
  EXPECT_FALSE(gil_held["ok"].get<bool>());
  EXPECT_EQ(gil_held["error"], "could not take the Python GIL within 300 ms");
  EXPECT_EQ(result["empty_cache_calls_after_timeout"], 2) << "the abandoned flush ran anyway";

  const json& not_initialized = result["cuda_not_initialized"];
  EXPECT_TRUE(not_initialized["ok"].get<bool>());
  EXPECT_EQ(not_initialized["steps"][0]["outcome"], "skipped");
  EXPECT_EQ(not_initialized["steps"][0]["detail"], "torch.cuda is not initialized");
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonStacksTest,
                         ::testing::ValuesIn(vramshim::testing::installed_pythons()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return vramshim::testing::test_name_of_python(info.param);
                         });

}  // namespace
