// The report names the code behind each frame by the module that mapped it when the allocation was
// made: a library loaded by a relative name, or unloaded before the report (another library then
// taking its addresses), an executable deleted while it ran, and a binary without a build-id
// rebuilt after the run.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// `vramshim report` of a report, run from / so that no relative path resolves.
ProgramRun analyze(const std::string& report) {
  RunOptions options;
  options.preload_shim = false;
  options.working_directory = "/";
  return run_program({runfile("analyzer/vramshim"), "report", report}, options);
}

// The module of the innermost frame of the only site holding `live_bytes`.
nlohmann::json innermost_module(const nlohmann::json& report, uint64_t live_bytes) {
  for (const nlohmann::json& site : report.at("sites")) {
    if (site.at("live_bytes") != live_bytes) continue;
    const std::vector<nlohmann::json> frames = stack_frames(report, site);
    if (frames.empty()) break;
    const int64_t module = frames.front().at("module");
    if (module < 0) break;
    return report.at("modules").at(module);
  }
  ADD_FAILURE() << "no site holding " << live_bytes << " bytes with a module";
  return nlohmann::json::object();
}

// Runs plugin_host in the plugins' directory, so that "./libplugin_a.so" finds them.
nlohmann::json run_plugin_host(const std::vector<std::string>& args, const std::string& path) {
  RunOptions options = reporting_to(path);
  options.working_directory = fs::path(program("libplugin_a.so")).parent_path();
  std::vector<std::string> argv = {program("plugin_host")};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProgramRun run = run_program(argv, options);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return read_report(path);
}

TEST(ModuleIdentity, LibraryLoadedByRelativeNameIsRecordedByAbsolutePath) {
  const std::string path = short_temp_dir() + "/report.json";
  const nlohmann::json module = innermost_module(run_plugin_host({"keep"}, path), 3 * kMiB);
  const std::string recorded = module.value("path", "");
  ASSERT_FALSE(recorded.empty());
  EXPECT_EQ(recorded.front(), '/') << recorded;
  EXPECT_EQ(fs::path(recorded).filename(), "libplugin_a.so");
  EXPECT_TRUE(fs::equivalent(recorded, program("libplugin_a.so"))) << recorded;

  const ProgramRun analyzed = analyze(path);
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_NE(analyzed.out.find("plugin_a_leak"), std::string::npos) << analyzed.out;
  EXPECT_EQ(analyzed.err.find("not found"), std::string::npos) << analyzed.err;
}

// libplugin_b.so, loaded after a's dlclose, usually at a's addresses and still loaded at the
// report: a's leak is still a's.
TEST(ModuleIdentity, UnloadedLibraryKeepsItsFramesNames) {
  const std::string path = short_temp_dir() + "/report.json";
  const nlohmann::json report = run_plugin_host({}, path);
  const nlohmann::json module = innermost_module(report, 3 * kMiB);
  EXPECT_EQ(fs::path(module.value("path", "")).filename(), "libplugin_a.so") << module;
  EXPECT_EQ(module.value("loaded", true), false) << module;
  for (const nlohmann::json& site : report.at("sites")) {
    if (site.at("live_bytes") != 3 * kMiB) continue;
    for (const nlohmann::json& frame : stack_frames(report, site)) {
      // a gone, no name may come from what maps its addresses now (b).
      EXPECT_TRUE(frame.at("function").is_null() ||
                  frame.at("function").get<std::string>().rfind("plugin_b", 0) != 0)
          << frame;
    }
  }

  const ProgramRun analyzed = analyze(path);
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_NE(analyzed.out.find("plugin_a_leak"), std::string::npos) << analyzed.out;
  EXPECT_EQ(analyzed.out.find("plugin_b_padding"), std::string::npos) << analyzed.out;
}

// Deleted while it ran (`make install` replaces it), then put back: the report names the file's
// path, not "prog (deleted)", and the analyzer names its frames.
TEST(ModuleIdentity, DeletedExecutableIsRecordedByItsPath) {
  const std::string dir = short_temp_dir();
  const std::string binary = dir + "/deleted_self";
  fs::copy_file(program("deleted_self"), binary);
  const std::string path = dir + "/report.json";
  const ProgramRun run = run_program({binary}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_FALSE(fs::exists(binary));
  const nlohmann::json report = read_report(path);
  const nlohmann::json module = innermost_module(report, kMiB);
  EXPECT_EQ(module.value("path", ""), binary);
  EXPECT_EQ(module.value("deleted", false), true);

  fs::copy_file(program("deleted_self"), binary);  // reinstalled
  const ProgramRun analyzed = analyze(path);
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_NE(analyzed.out.find("leak_after_reinstall"), std::string::npos) << analyzed.out;
}

// Without a build-id, the segments recorded from memory tell the rebuilt binary from the one that
// ran: its names are refused, the original's used.
TEST(ModuleIdentity, RebuiltBinaryWithoutBuildIdIsNotUsedForNames) {
  const std::string dir = short_temp_dir();
  const std::string binary = dir + "/weights";
  fs::copy_file(program("weights_v1"), binary);
  const std::string path = dir + "/report.json";
  const ProgramRun run = run_program({binary}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;

  fs::copy_file(program("weights_v2"), binary, fs::copy_options::overwrite_existing);
  const ProgramRun rebuilt = analyze(path);
  EXPECT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  EXPECT_EQ(rebuilt.out.find("helper_added_later"), std::string::npos) << rebuilt.out;
  EXPECT_EQ(rebuilt.out.find("load_weights"), std::string::npos) << rebuilt.out;
  EXPECT_NE(rebuilt.err.find("no build-id, and its segment layout differs"), std::string::npos)
      << rebuilt.err;

  fs::copy_file(program("weights_v1"), binary, fs::copy_options::overwrite_existing);
  const ProgramRun original = analyze(path);
  EXPECT_NE(original.out.find("load_weights"), std::string::npos) << original.out;
  EXPECT_EQ(original.err.find("segment layout"), std::string::npos) << original.err;
}

}  // namespace
}  // namespace vramshim::testing
