// Through the hooks, under every installed CPython (tests/python/installed_pythons.h): a
// Python program allocating through ctypes gets its own file, function and line in the report's
// stacks, in order with the native frames; threads, a GIL held elsewhere and interpreter exit
// neither deadlock nor crash; `vramshim flush --deep` empties a framework's cache, and one that
// arrives while the interpreter finalizes leaves the exit alone.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <tuple>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"
#include "tests/python/installed_pythons.h"

namespace vramshim::testing {
namespace {

const char kSystemPython[] = "/usr/bin/python3";

std::string app() { return runfile("tests/integration/python/alloc_app.py"); }

// The line of alloc_app.py marked "# line: NAME".
int marked_line(const std::string& name) {
  std::ifstream in(app());
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.find("# line: " + name) != std::string::npos) return number;
  }
  return -1;
}

struct PythonFrame {
  size_t position;  // in the stack, innermost first
  std::string file;
  std::string function;
  int line;
  bool in_app() const { return file.find("alloc_app.py") != std::string::npos; }
};

// Whether a Python frame's function (qualified on 3.11+: "outer.<locals>.worker") is `function`.
bool names(const std::string& qualified, const std::string& function) {
  return qualified == function || (qualified.size() > function.size() &&
                                   qualified.compare(qualified.size() - function.size() - 1,
                                                     std::string::npos, "." + function) == 0);
}

// The stacks (as frame lists) of the sites that have a Python frame running `function`.
std::vector<std::vector<nlohmann::json>> stacks_through(const nlohmann::json& report,
                                                        const std::string& function,
                                                        std::vector<nlohmann::json>* sites) {
  std::vector<std::vector<nlohmann::json>> stacks;
  for (const auto& site : report.at("sites")) {
    std::vector<nlohmann::json> frames = stack_frames(report, site);
    bool found = false;
    for (const nlohmann::json& frame : frames) {
      found |= frame.value("python", false) && names(frame.value("function", ""), function);
    }
    if (found) {
      stacks.push_back(frames);
      if (sites != nullptr) sites->push_back(site);
    }
  }
  return stacks;
}

std::vector<PythonFrame> python_frames(const std::vector<nlohmann::json>& stack) {
  std::vector<PythonFrame> frames;
  for (size_t i = 0; i < stack.size(); ++i) {
    if (!stack[i].value("python", false)) continue;
    frames.push_back({i, stack[i].value("file", ""), stack[i].value("function", ""),
                      stack[i].value("line", -1)});
  }
  return frames;
}

uint64_t total_count(const std::vector<nlohmann::json>& sites) {
  uint64_t count = 0;
  for (const auto& site : sites) count += site.at("total_count").get<uint64_t>();
  return count;
}

// One interpreter and one ctypes loader: CDLL releases the GIL around the call, PyDLL holds it.
class CtypesLoader : public ::testing::TestWithParam<std::tuple<std::string, const char*>> {};

TEST_P(CtypesLoader, StacksNameThePythonFunctionsAndLinesInOrder) {
  const auto& [python, loader] = GetParam();
  const std::string path = short_temp_dir() + "/python.json";
  const ProgramRun run = run_program({python, app(), loader}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = read_report(path);

  // Usually one site; an interpreter may reach the first call through other native frames than
  // the later ones (3.15 does), which makes two sites with the same Python frames.
  std::vector<nlohmann::json> leak_sites;
  const auto leak_stacks = stacks_through(report, "leak_from_python", &leak_sites);
  ASSERT_FALSE(leak_stacks.empty());
  uint64_t leaked = 0;
  for (const nlohmann::json& site : leak_sites) leaked += site.at("live_count").get<uint64_t>();
  EXPECT_EQ(leaked, 3u);
  for (const auto& stack : leak_stacks) {
    const std::vector<PythonFrame> frames = python_frames(stack);
    ASSERT_GE(frames.size(), 2u);
    EXPECT_GT(frames[0].position, 0u) << "ctypes' native frames come first (innermost)";
    EXPECT_EQ(frames[0].function, "leak_from_python");
    EXPECT_TRUE(frames[0].in_app() && frames[1].in_app()) << frames[0].file;
    EXPECT_EQ(frames[0].line, marked_line("leak"));
    // The caller: a list comprehension on 3.11 (its own frame), then main(), both at the same line.
    EXPECT_EQ(frames[1].line, marked_line("leak_caller"));
    EXPECT_NE(frames.back().position, stack.size() - 1)
        << "the interpreter's own native frames come last (outermost)";
  }

  std::vector<nlohmann::json> churn_sites;
  const auto churn_stacks = stacks_through(report, "churn_from_python", &churn_sites);
  ASSERT_FALSE(churn_stacks.empty());
  EXPECT_EQ(total_count(churn_sites), 100u);
  const std::vector<PythonFrame> churn = python_frames(churn_stacks[0]);
  ASSERT_GE(churn.size(), 2u);
  EXPECT_EQ(churn[0].line, marked_line("churn"));
  EXPECT_EQ(churn[1].function, "main");
  EXPECT_EQ(churn[1].line, marked_line("churn_caller"));
}

INSTANTIATE_TEST_SUITE_P(Interpreters, CtypesLoader,
                         ::testing::Combine(::testing::ValuesIn(installed_pythons()),
                                            ::testing::Values("cdll", "pydll")),
                         [](const ::testing::TestParamInfo<CtypesLoader::ParamType>& info) {
                           return test_name_of_python(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(PythonReport, TheAnalyzerShowsPythonFramesAndCanShowOnlyThem) {
  const std::string path = short_temp_dir() + "/shown.json";
  ASSERT_EQ(run_program({kSystemPython, app(), "cdll"}, reporting_to(path)).exit_code, 0);
  RunOptions plain;
  plain.preload_shim = false;
  const std::string leak_line = "alloc_app.py:" + std::to_string(marked_line("leak"));
  const ProgramRun all =
      run_program({runfile("analyzer/vramshim"), "report", path, "--stacks"}, plain);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("leak_from_python"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find(leak_line), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("ffi_call"), std::string::npos) << all.out;
  const ProgramRun only =
      run_program({runfile("analyzer/vramshim"), "report", path, "--python-only"}, plain);
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_NE(only.out.find(leak_line), std::string::npos) << only.out;
  EXPECT_EQ(only.out.find("ffi_call"), std::string::npos) << only.out;
  const ProgramRun folded = run_program(
      {runfile("analyzer/vramshim"), "report", path, "--python-only", "--format", "folded"}, plain);
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_NE(folded.out.find("leak_from_python"), std::string::npos) << folded.out;
}

// A Python program through ctypes: every view that shows one line per site names the Python line,
// never libffi's or the interpreter's frames; the HTML page hides those frames and opens on the
// leaks.
TEST(PythonReport, OneLineViewsNameThePythonLineNotTheInterpretersFrames) {
  const std::string dir = short_temp_dir();
  const std::string path = dir + "/labels.json";
  RunOptions plain;
  plain.preload_shim = false;
  plain.env = {{"VRAMSHIM_REPORT", path}, {"VRAMSHIM_SOCKET", "off"}};
  plain.timeout_seconds = 60;
  const ProgramRun run =
      run_program({runfile("analyzer/vramshim"), "run", "--", kSystemPython, app(), "cdll"}, plain);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string leak =
      "leak_from_python (" + app() + ":" + std::to_string(marked_line("leak")) + ")";
  // The run's summary: held at the peak and still allocated at the end, 3 MiB each.
  EXPECT_NE(run.err.find("3.0 MiB  " + leak), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("libffi"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("ffi_call"), std::string::npos) << run.err;

  const ProgramRun leaks =
      run_program({runfile("analyzer/vramshim"), "report", path, "--leaks"}, plain);
  ASSERT_EQ(leaks.exit_code, 0) << leaks.err;
  EXPECT_NE(leaks.out.find("\n#1  3.0 MiB live  [device]\n"), std::string::npos) << leaks.out;
  EXPECT_NE(leaks.out.find("    " + leak + "\n"), std::string::npos) << leaks.out;
  EXPECT_EQ(leaks.out.find("libffi"), std::string::npos) << leaks.out;
  EXPECT_EQ(leaks.out.find("ffi_call"), std::string::npos) << leaks.out;
  // The churn site freed all it allocated: not a leak, not listed.
  EXPECT_EQ(leaks.out.find("churn_from_python"), std::string::npos) << leaks.out;
  EXPECT_EQ(leaks.out.find("0 B live  ["), std::string::npos) << leaks.out;
  const ProgramRun stacks =
      run_program({runfile("analyzer/vramshim"), "report", path, "--leaks", "--stacks"}, plain);
  ASSERT_EQ(stacks.exit_code, 0) << stacks.err;
  EXPECT_NE(stacks.out.find("ffi_call"), std::string::npos) << "the whole stack: " << stacks.out;

  const std::string page = dir + "/labels.html";
  const ProgramRun html =
      run_program({runfile("analyzer/vramshim"), "html", path, "-o", page}, plain);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  std::ifstream in(page);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t start = text.find("<script type=\"application/json\" id=\"report-data\">");
  ASSERT_NE(start, std::string::npos);
  const size_t begin = text.find('>', start) + 1;
  const nlohmann::json data =
      nlohmann::json::parse(text.substr(begin, text.find("</script>", begin) - begin));
  EXPECT_TRUE(data.at("leaked").get<bool>());
  const auto& top = data.at("sites").at(0);
  EXPECT_EQ(top.at("label"), leak);
  EXPECT_EQ(top.at("v").at(0), 3 << 20);
  // Interpreter frames are marked for the page's toggle.
  EXPECT_NE(data.at("tree").dump().find("\"interpreter\":true"), std::string::npos);
}

// A site made in a framework's Python code (torch.nn.functional's, under site-packages/torch/) is
// named by the user's line that called it, in the out-of-memory block the shim prints and in the
// report's views.
TEST(PythonReport, ASiteIsNamedByTheUsersLineNotTheFrameworksPythonCode) {
  const std::string dir = short_temp_dir();
  const std::string path = dir + "/framework.json";
  const std::string script = runfile("tests/integration/python/framework_files_app.py");
  RunOptions options = reporting_to(path);
  options.env["VRAMSHIM_LIMIT"] = "16MiB";
  const ProgramRun run = run_program({kSystemPython, script, dir}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_NE(run.out.find("allocations=4 refused=2"), std::string::npos) << run.out << run.err;
  int line = -1;
  std::ifstream in(script);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.find("# line: through_framework") != std::string::npos) line = number;
  }
  const std::string shim_label = script + ":" + std::to_string(line) + " grow";
  const size_t sites = run.err.find("the sites holding the most:");
  ASSERT_NE(sites, std::string::npos) << run.err;
  const std::string first_site =
      run.err.substr(sites, run.err.find('\n', run.err.find('\n', sites) + 1) - sites);
  EXPECT_NE(first_site.find("16.0 MiB in 4 allocations  " + shim_label), std::string::npos)
      << run.err;

  RunOptions plain;
  plain.preload_shim = false;
  const ProgramRun report = run_program({runfile("analyzer/vramshim"), "report", path}, plain);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("    grow (" + script + ":" + std::to_string(line) + ")\n"),
            std::string::npos)
      << report.out;
  EXPECT_EQ(report.out.find("    empty ("), std::string::npos) << report.out;
}

// The tests that run one interpreter each.
class EachPython : public ::testing::TestWithParam<std::string> {};

TEST_P(EachPython, FourThreadsAllocatingAtOnceAreEachAttributed) {
  const std::string path = short_temp_dir() + "/threads.json";
  const ProgramRun run = run_program({GetParam(), app(), "threads"}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<nlohmann::json> sites;
  const auto stacks = stacks_through(read_report(path), "worker", &sites);
  ASSERT_FALSE(stacks.empty());
  EXPECT_EQ(total_count(sites), 4u * 500u);
  const std::vector<PythonFrame> frames = python_frames(stacks[0]);
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "churn_from_python");
  EXPECT_TRUE(frames[0].in_app() && frames[1].in_app()) << frames[0].file;
  EXPECT_TRUE(names(frames[1].function, "worker")) << frames[1].function;
  EXPECT_EQ(frames[1].line, marked_line("worker"));
}

TEST_P(EachPython, AllocatingWhileAnotherThreadHoldsTheGilDoesNotDeadlock) {
  const std::string path = short_temp_dir() + "/busy.json";
  const ProgramRun run = run_program({GetParam(), app(), "busy"}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err << " signal " << run.term_signal;
  std::vector<nlohmann::json> sites;
  stacks_through(read_report(path), "worker", &sites);
  EXPECT_EQ(total_count(sites), 300u);
}

// A C thread that made a thread state another thread runs (an embedder's hand-over) allocates
// while the other's frames come and go: its stacks are native only, never the other thread's
// frames, which were read while freed (SIGSEGV in 3 of 3 runs on 3.11, 3.12 and 3.13).
TEST_P(EachPython, AThreadStateRunByAnotherThreadIsNotRead) {
  const std::string path = short_temp_dir() + "/borrowed.json";
  const ProgramRun run =
      run_program({GetParam(), app(), "borrowed",
                   runfile("tests/integration/programs/libborrowed_thread_state.so")},
                  reporting_to(path));
  ASSERT_EQ(run.term_signal, 0) << run.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("borrowed allocations="), std::string::npos) << run.out;
  const nlohmann::json report = read_report(path);
  EXPECT_TRUE(stacks_through(report, "deep", nullptr).empty()) << "the runner's frames";
  EXPECT_TRUE(stacks_through(report, "<module>", nullptr).size() <= 1);  // alloc_app's own only
}

TEST_P(EachPython, InterpreterExitWhileThreadsAllocateDoesNotCrash) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const ProgramRun run =
        run_program({GetParam(), app(), "exit"}, reporting_to(short_temp_dir() + "/exit.json"));
    EXPECT_EQ(run.term_signal, 0) << run.err;
    EXPECT_EQ(run.exit_code, 0) << run.err;
  }
}

TEST_P(EachPython, DeepFlushEmptiesTheFrameworksCacheThenThePool) {
  RunOptions options = reporting_to(short_temp_dir() + "/deep.json");
  options.env.erase("VRAMSHIM_SOCKET");
  options.env["XDG_RUNTIME_DIR"] = short_temp_dir();
  options.env["VRAMSHIM_CLI"] = runfile("analyzer/vramshim");
  options.env["PYTHONPATH"] = runfile("tests/integration/python/fake_torch");
  const ProgramRun run = run_program({GetParam(), app(), "deep"}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("cli status=0"), std::string::npos) << run.out;
  EXPECT_TRUE(
      std::regex_search(run.out, std::regex("torch.cuda.empty_cache ran, released 64.0 MiB")))
      << run.out;
  std::smatch live;
  ASSERT_TRUE(std::regex_search(run.out, live, std::regex("before=([0-9]+) after=([0-9]+)")));
  const uint64_t before = std::stoull(live[1]), after = std::stoull(live[2]);
  EXPECT_LE(after + (64u << 20), before) << run.out;

  std::smatch document;
  ASSERT_TRUE(std::regex_search(run.out, document, std::regex("json status=0 document=(.*)")))
      << run.out;
  const nlohmann::json flushed = nlohmann::json::parse(document[1].str());
  EXPECT_EQ(flushed["schema_version"], 1);
  EXPECT_EQ(flushed["command"], "flush");
  EXPECT_EQ(flushed["deep"], true);
  ASSERT_EQ(flushed["processes"].size(), 1u) << flushed.dump();
  const nlohmann::json& process = flushed["processes"][0];
  EXPECT_EQ(process["flushed"], true);
  EXPECT_TRUE(process["error"].is_null());
  EXPECT_TRUE(process["frameworks_error"].is_null()) << process.dump();
  bool empty_cache_ran = false;
  for (const nlohmann::json& step : process["frameworks"]) {
    if (step["step"] == "torch.cuda.empty_cache") {
      EXPECT_EQ(step["outcome"], "ran");
      EXPECT_EQ(step["released_bytes"], 32u << 20) << step.dump();
      empty_cache_ran = true;
    }
  }
  EXPECT_TRUE(empty_cache_ran) << process.dump();
  EXPECT_GE(process["released_bytes"].get<uint64_t>(), 32u << 20) << process.dump();
}

// CPython ends a thread that waits for the GIL when the interpreter starts finalizing
// (pthread_exit): the deep flush's thread unwinds through the shim's frames, which the shim's own
// static unwinder could not do with glibc's (the process aborted at exit, status 134).
TEST_P(EachPython, ADeepFlushWhileTheInterpreterFinalizesLeavesTheExitAlone) {
  RunOptions options = reporting_to(short_temp_dir() + "/finalizing.json");
  options.env.erase("VRAMSHIM_SOCKET");
  options.env["XDG_RUNTIME_DIR"] = short_temp_dir();
  options.env["VRAMSHIM_CLI"] = runfile("analyzer/vramshim");
  const ProgramRun run = run_program({GetParam(), app(), "deep_while_finalizing"}, options);
  EXPECT_EQ(run.term_signal, 0) << run.err;
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("done deep_while_finalizing 3"), std::string::npos) << run.out;
}

// A deep flush held the control thread while the frameworks released (PyTorch's empty_cache
// synchronizes the device): a SIGTERM meanwhile waited 5 s for its report, then ended the job
// without one ("no exit report: not written within 5 s").
TEST_P(EachPython, ASigtermDuringADeepFlushEndsTheJobWithItsReport) {
  const std::string directory = short_temp_dir();
  RunOptions options = reporting_to(directory + "/sigterm.json");
  options.env.erase("VRAMSHIM_SOCKET");
  options.env["XDG_RUNTIME_DIR"] = short_temp_dir();
  options.env["VRAMSHIM_CLI"] = runfile("analyzer/vramshim");
  options.env["PYTHONPATH"] = runfile("tests/integration/python/fake_torch");
  const ProgramRun run = run_program({GetParam(), app(), "sigterm_during_deep"}, options);
  EXPECT_EQ(run.term_signal, SIGTERM) << run.out << run.err;
  EXPECT_EQ(run.err.find("no exit report"), std::string::npos) << run.err;
  const nlohmann::json report = read_report(directory + "/sigterm.json");
  EXPECT_EQ(report["reason"], "exit");
  EXPECT_EQ(report["terminated"]["signal_name"], "SIGTERM") << report["terminated"].dump();
}

// The deep flush's thread runs the frameworks' native code: a fault there ended the process at
// once, without the crash report and leaving the socket file (the thread blocked every signal, and
// the kernel ends a process whose thread blocks the fault it raises).
TEST_P(EachPython, AFaultInAFrameworksReleaseDuringADeepFlushGetsItsCrashReport) {
  const std::string directory = short_temp_dir();
  const std::string sockets = short_temp_dir();
  RunOptions options = reporting_to(directory + "/fault.json");
  options.env.erase("VRAMSHIM_SOCKET");
  options.env["XDG_RUNTIME_DIR"] = sockets;
  options.env["VRAMSHIM_CLI"] = runfile("analyzer/vramshim");
  options.env["PYTHONPATH"] = runfile("tests/integration/python/fake_torch");
  const ProgramRun run = run_program({GetParam(), app(), "fault_during_deep"}, options);
  EXPECT_EQ(run.term_signal, SIGSEGV) << run.out << run.err;
  const nlohmann::json report = read_report(directory + "/fault.crash.json");
  EXPECT_EQ(report["reason"], "crash");
  EXPECT_EQ(report["crash"]["signal_name"], "SIGSEGV") << report["crash"].dump();
  std::error_code ignored;
  for (const auto& left : std::filesystem::directory_iterator(sockets + "/vramshim", ignored)) {
    ADD_FAILURE() << "left behind: " << left.path();
  }
}

INSTANTIATE_TEST_SUITE_P(Interpreters, EachPython, ::testing::ValuesIn(installed_pythons()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return test_name_of_python(info.param);
                         });

TEST(DeepFlush, AProcessWithoutPythonIsFlushedAndTheCliSaysSoAndSucceeds) {
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"},
                 {"XDG_RUNTIME_DIR", short_temp_dir()},
                 {"VRAMSHIM_CLI", runfile("analyzer/vramshim")}};
  const ProgramRun run =
      run_program({runfile("tests/integration/programs/deep_flush_without_python")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("frameworks not flushed: the process does not run Python"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("cli status=0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("driver live after=0"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace vramshim::testing
