// snapshot and flush, as run, against a stand-in for a process under the shim and against scripted
// answers: snapshot writes the file asked for or fails, and flush shows a figure that is not one as
// unknown.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/analyzer/cli_run.h"
#include "tests/analyzer/scripted_shim.h"

namespace vramshim::testing {
namespace {

using nlohmann::json;

using Result = CliResult;

std::string absolute(const char* runfile) {
  char resolved[PATH_MAX];
  return ::realpath(runfile, resolved) != nullptr ? resolved : runfile;
}

// 2^64 - 1 and 2^62 + 1: unsigned integers, but past the figures' bound of 2^62.
constexpr const char* kHuge = "18446744073709551615";
constexpr const char* kPastBound = "4611686018427387905";

class SnapshotFlushCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = absolute("tests/control/control_cli");
    fake_process_ = absolute("tests/control/fake_shimmed_process");
    char pattern[] = "/tmp/vramshim-snapshot-flush-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    socket_dir_ = dir_ + "/vramshim";  // where the CLI looks, with XDG_RUNTIME_DIR=dir_
    ASSERT_EQ(::mkdir(socket_dir_.c_str(), 0700), 0);
    output_dir_ = dir_ + "/reports";
    ASSERT_EQ(::mkdir(output_dir_.c_str(), 0700), 0);
  }

  void TearDown() override {
    if (fake_ > 0) {
      ::kill(fake_, SIGTERM);
      ::waitpid(fake_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }

  // The CLI run with `args` in output_dir_, its socket directory socket_dir_, TMPDIR `tmpdir` if
  // given.
  Result cli(const std::vector<std::string>& args, const std::string& tmpdir = {}) {
    return run_cli(cli_, args, dir_, output_dir_, tmpdir);
  }

  // A process serving its control socket in socket_dir_ and writing the reports it is asked for,
  // as a process under the shim does.
  pid_t start_fake_process() {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    fake_ = ::fork();
    if (fake_ == 0) {
      ::dup2(ready[1], 1);
      ::close(ready[0]);
      ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
      ::unsetenv("VRAMSHIM_SOCKET");
      ::execl(fake_process_.c_str(), "fake_shimmed_process", nullptr);
      _exit(121);
    }
    ::close(ready[1]);
    char line[256] = {};
    EXPECT_GT(::read(ready[0], line, sizeof(line) - 1), 0) << "the fake process did not start";
    ::close(ready[0]);
    return fake_;
  }

  // The names in output_dir_.
  std::set<std::string> reports() const {
    std::set<std::string> names;
    DIR* listing = ::opendir(output_dir_.c_str());
    while (const dirent* entry = listing != nullptr ? ::readdir(listing) : nullptr) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.insert(name);
    }
    if (listing != nullptr) ::closedir(listing);
    return names;
  }

  std::string cli_, fake_process_, dir_, socket_dir_, output_dir_;
  pid_t fake_ = -1;
};

TEST_F(SnapshotFlushCliTest, SnapshotRefusesAPathTheProcessWouldReadAsAnother) {
  // The process reads its request up to the newline and trims blanks: `-o $'snap\nx.json'` had it
  // write `snap`, and the CLI said it had done what was asked.
  const std::string pid = std::to_string(start_fake_process());
  const struct {
    std::string path;
    std::string said;
  } kRefused[] = {
      {"snap\nx.json", R"("snap\nx.json": it has a control character (a newline, a tab, …))"},
      {output_dir_ + "/snap\nx.json",
       "\"" + output_dir_ + R"(/snap\nx.json": it has a control character (a newline, a tab, …))"},
      {"snap\tx.json", R"("snap\tx.json": it has a control character (a newline, a tab, …))"},
      {"snap.json\r", R"("snap.json\r": it has a control character (a newline, a tab, …))"},
      {"snap.json ", R"("snap.json ": it begins or ends with a blank)"},
      {" snap.json", R"(" snap.json": it begins or ends with a blank)"},
  };
  for (const auto& refused : kRefused) {
    SCOPED_TRACE(refused.path);
    for (const char* format : {"text", "json"}) {
      const Result result = cli({"snapshot", pid, "-o", refused.path, "--format", format});
      EXPECT_EQ(result.code, 2);
      EXPECT_EQ(result.out, "");
      EXPECT_EQ(result.err,
                "vramshim: snapshot: cannot ask for a report at " + refused.said + "\n");
      EXPECT_EQ(reports(), std::set<std::string>{}) << "the process wrote a report";
    }
  }
  // A blank inside the name is the process's to write.
  const Result inner = cli({"snapshot", pid, "-o", "snap x.json"});
  EXPECT_EQ(inner.code, 0) << inner.err;
  EXPECT_EQ(inner.out, "wrote " + output_dir_ + "/snap x.json\n");
  EXPECT_EQ(reports(), std::set<std::string>{"snap x.json"});
}

TEST_F(SnapshotFlushCliTest, SnapshotToStandardOutputRefusesATemporaryDirectoryItCannotName) {
  // -o - has the process write into a directory under TMPDIR: one with a newline in its name had
  // it write a file named by the part before.
  const std::string pid = std::to_string(start_fake_process());
  const std::string tmpdir = output_dir_ + "/t\nmp";
  ASSERT_EQ(::mkdir(tmpdir.c_str(), 0700), 0);
  const Result result = cli({"snapshot", pid, "-o", "-"}, tmpdir);
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err.rfind("vramshim: snapshot: cannot ask for a report at \"" + output_dir_ +
                                 "/t\\nmp/vramshim-snapshot-",
                             0),
            0u)
      << result.err;
  EXPECT_EQ(reports(), std::set<std::string>{"t\nmp"}) << "the process wrote a report";
}

TEST_F(SnapshotFlushCliTest, SnapshotFailsWhenTheProcessWroteAnotherFile) {
  ScriptedShim shim(socket_dir_,
                    {{"report", json{{"ok", true}, {"path", output_dir_ + "/other.json"}}.dump()}});
  const std::string why = "vramshim: pid " + std::to_string(shim.pid()) +
                          ": the process wrote its report to " + output_dir_ +
                          "/other.json, not to " + output_dir_ + "/snap.json\n";
  for (const char* format : {"text", "json"}) {
    SCOPED_TRACE(format);
    const Result result =
        cli({"snapshot", std::to_string(shim.pid()), "-o", "snap.json", "--format", format});
    EXPECT_EQ(result.code, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, why);
  }
}

TEST_F(SnapshotFlushCliTest, FlushShowsAFigurePastTheBoundAsUnknown) {
  // `released_bytes: 2^64 - 1` was printed as `released -1 B`.
  for (const char* figure : {kHuge, kPastBound}) {
    SCOPED_TRACE(figure);
    const std::string answer =
        std::string(R"({"ok":true,"released_bytes":)") + figure +
        R"(,"frameworks":[{"step":"torch.cuda.empty_cache","outcome":"ran","detail":"",)" +
        R"("released_bytes":)" + figure + "}]}";
    ScriptedShim shim(socket_dir_, {{"flush", answer}});
    const std::string pid = std::to_string(shim.pid());

    const Result text = cli({"flush", pid, "--deep"});
    EXPECT_EQ(text.code, 0) << text.err;
    EXPECT_EQ(text.out,
              pid + ": torch.cuda.empty_cache ran, released ?\n" + pid + ": released ?\n");

    const Result as_json = cli({"flush", pid, "--deep", "--format", "json"});
    EXPECT_EQ(as_json.code, 0) << as_json.err;
    const json doc = json::parse(as_json.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << as_json.out;
    EXPECT_TRUE(doc["processes"][0]["released_bytes"].is_null()) << as_json.out;
    EXPECT_TRUE(doc["processes"][0]["frameworks"][0]["released_bytes"].is_null()) << as_json.out;
  }
}

TEST_F(SnapshotFlushCliTest, FlushShowsAFigureAtTheBound) {
  ScriptedShim shim(socket_dir_,
                    {{"flush", R"({"ok":true,"released_bytes":4611686018427387904})"}});
  const std::string pid = std::to_string(shim.pid());
  const Result text = cli({"flush", pid});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out, pid + ": released 4096.0 PiB (4611686018427387904 bytes)\n");
  const Result as_json = cli({"flush", pid, "--format", "json"});
  EXPECT_EQ(json::parse(as_json.out)["processes"][0]["released_bytes"], 4611686018427387904u);
}

// A flush during a stream capture is made once the capture ends: the process says so, and the
// CLI passes it on rather than a bare "released 0 B".
TEST_F(SnapshotFlushCliTest, FlushSaysWhenACaptureDefersIt) {
  ScriptedShim shim(
      socket_dir_,
      {{"flush",
        R"({"ok":true,"capture":"a stream capture is running; the pool is flushed as soon as it ends","released_bytes":0})"}});
  const std::string pid = std::to_string(shim.pid());
  const Result text = cli({"flush", pid});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out,
            pid + ": a stream capture is running; the pool is flushed as soon as it ends\n" + pid +
                ": released 0 B (0 bytes)\n");
  const Result as_json = cli({"flush", pid, "--format", "json"});
  EXPECT_EQ(json::parse(as_json.out)["processes"][0]["capture"],
            "a stream capture is running; the pool is flushed as soon as it ends");
}

}  // namespace
}  // namespace vramshim::testing
