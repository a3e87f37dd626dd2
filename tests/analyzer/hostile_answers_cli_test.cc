// flush and stats, as run, against processes whose answers are hostile: each such process gets one
// clear error line and the others are served; another user's command line reaches the terminal
// without its control characters.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/analyzer/cli_run.h"
#include "tests/analyzer/scripted_shim.h"

namespace vramshim::testing {
namespace {

using nlohmann::json;

using Result = CliResult;

class HostileAnswersCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char resolved[PATH_MAX];
    ASSERT_NE(::realpath("tests/control/control_cli", resolved), nullptr);
    cli_ = resolved;
    char pattern[] = "/tmp/vramshim-hostile-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    socket_dir_ = dir_ + "/vramshim";  // where the CLI looks, with XDG_RUNTIME_DIR=dir_
    ASSERT_EQ(::mkdir(socket_dir_.c_str(), 0700), 0);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // The CLI run with `args`, its socket directory socket_dir_.
  Result cli(const std::vector<std::string>& args) { return run_cli(cli_, args, dir_); }

  std::string cli_, dir_, socket_dir_;
};

// One flush answer of each kind a hostile process could give, and the error it must get.
struct HostileFlush {
  const char* request;  // "flush" or "flush deep"
  const char* answer;
  const char* why;
};

const HostileFlush kHostileFlushes[] = {
    {"flush", R"({"ok":1})", "the answer's \"ok\" is not true or false"},
    {"flush", R"({"ok":false,"error":{"why":"no"}})", "request failed"},
    {"flush", R"({"ok":true,"released_bytes":"lots"})",
     "the answer to flush is misshapen: released_bytes is not an unsigned integer"},
    {"flush", R"({"ok":true,"released_bytes":-1})",
     "the answer to flush is misshapen: released_bytes is not an unsigned integer"},
    {"flush deep", R"({"ok":true,"released_bytes":0,"frameworks_error":7})",
     "the answer to flush deep is misshapen: frameworks_error is not a string"},
    {"flush deep", R"({"ok":true,"released_bytes":0,"frameworks":"torch"})",
     "the answer to flush deep is misshapen: frameworks is not an array of objects"},
    {"flush deep", R"({"ok":true,"released_bytes":0,"frameworks":[5]})",
     "the answer to flush deep is misshapen: frameworks is not an array of objects"},
    {"flush deep", R"({"ok":true,"released_bytes":0,"frameworks":[{"step":"torch","outcome":1}]})",
     "the answer to flush deep is misshapen: a framework step's outcome is not a string"},
    {"flush deep",
     R"({"ok":true,"released_bytes":0,"frameworks":[{"step":"torch","released_bytes":"x"}]})",
     "the answer to flush deep is misshapen: a framework step's released_bytes is not an unsigned "
     "integer"},
};

TEST_F(HostileAnswersCliTest, FlushSaysWhatIsWrongWithAnAnswerAndFlushesTheOthers) {
  const std::string good_answer =
      R"({"ok":true,"released_bytes":1024,"frameworks":[{"step":"torch.cuda.empty_cache",)"
      R"("outcome":"ran","released_bytes":2048,"detail":""}]})";
  for (const HostileFlush& hostile : kHostileFlushes) {
    const bool deep = std::string(hostile.request) == "flush deep";
    SCOPED_TRACE(hostile.answer);
    ScriptedShim good(socket_dir_, {{"flush", good_answer}});
    ScriptedShim bad(socket_dir_, {{"flush", hostile.answer}});
    const std::string why = "pid " + std::to_string(bad.pid()) + ": " + hostile.why;
    std::vector<std::string> args = {"flush", std::to_string(good.pid()),
                                     std::to_string(bad.pid())};
    if (deep) args.push_back("--deep");

    const Result text = cli(args);
    EXPECT_EQ(text.code, 1);
    EXPECT_EQ(text.err, "vramshim: " + why + "\n");
    EXPECT_NE(text.out.find(std::to_string(good.pid()) + ": released 1.0 KiB (1024 bytes)\n"),
              std::string::npos)
        << text.out;
    EXPECT_EQ(text.out.find(std::to_string(bad.pid()) + ":"), std::string::npos) << text.out;

    args.insert(args.end(), {"--format", "json"});
    const Result as_json = cli(args);
    EXPECT_EQ(as_json.code, 1);
    EXPECT_EQ(as_json.err, "vramshim: " + why + "\n");
    const json doc = json::parse(as_json.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << as_json.out;
    ASSERT_EQ(doc["processes"].size(), 2u) << as_json.out;
    EXPECT_EQ(doc["processes"][0]["released_bytes"], 1024);
    EXPECT_EQ(doc["processes"][1]["pid"], bad.pid());
    EXPECT_EQ(doc["processes"][1]["flushed"], false);
    EXPECT_EQ(doc["processes"][1]["error"], why);
    EXPECT_TRUE(doc["processes"][1]["released_bytes"].is_null());
  }
}

TEST_F(HostileAnswersCliTest, StatsSaysWhatIsWrongWithAnAnswer) {
  ScriptedShim shim(socket_dir_, {{"stats", R"({"ok":1})"}});
  const Result result = cli({"stats", std::to_string(shim.pid())});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "vramshim: pid " + std::to_string(shim.pid()) +
                            ": the answer's \"ok\" is not true or false\n");
}

TEST_F(HostileAnswersCliTest, AnAnswerWithANulByteIsNoJson) {
  // The parser took the NUL for the end of the answer, and read the figures before it.
  const std::string answer = std::string(R"({"ok":true,"in_use_bytes":1})") + '\0' + "garbage";
  ScriptedShim shim(socket_dir_, {{"stats", answer}});
  const Result result = cli({"stats", std::to_string(shim.pid())});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find(": the answer is not a JSON object\n"), std::string::npos)
      << result.err;
}

TEST_F(HostileAnswersCliTest, SnapshotSaysWhatIsWrongWithAnAnswer) {
  ScriptedShim shim(socket_dir_, {{"report", R"({"ok":true,"path":["/etc/shadow"]})"}});
  const Result result = cli({"snapshot", std::to_string(shim.pid()), "-o", dir_ + "/r.json"});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.err, "vramshim: pid " + std::to_string(shim.pid()) +
                            ": the answer's \"path\" is not a string\n");
}

TEST_F(HostileAnswersCliTest, StatsTablesShowNoControlCharacterOfTheCommand) {
  const std::string command =
      "train\x1b]0;owned\x07 --\x7f\tx\ny\xc3\xa9\xc2\x9b"
      "2J";
  ScriptedShim shim(
      socket_dir_,
      {{"stats", json{{"ok", true}, {"devices", json::array()}, {"process", {{"command", command}}}}
                     .dump()}});
  const std::string pid = std::to_string(shim.pid());
  const std::string shown = "  train?]0;owned? --??x?y\xc3\xa9?2J\n";
  const Result one = cli({"stats", pid});
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.rfind("pid " + pid + shown, 0), 0u) << one.out;
  const Result all = cli({"stats", "--all", "--dir", socket_dir_});
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out.rfind("pid " + pid + "  uid " + std::to_string(::geteuid()) + shown, 0), 0u)
      << all.out;
  const Result as_json = cli({"stats", pid, "--format", "json"});
  EXPECT_EQ(json::parse(as_json.out)["process"]["command"], command) << "JSON keeps it whole";
}

// A figure that is not a non-negative integer of at most 2^62 (negative, fractional, 2^64 - 1) is
// shown as unknown, never as another number ("-1 B", "0 B").
TEST_F(HostileAnswersCliTest, StatsAndPsShowFiguresThatAreNotFiguresAsUnknown) {
  ScriptedShim shim(
      socket_dir_,
      {{"stats",
        R"({"ok":true,"devices":[{"device":0,"in_use_bytes":18446744073709551615,)"
        R"("cached_bytes":-5,"reserved_bytes":1.5,"peak_in_use_bytes":4611686018427387905,)"
        R"("limit_bytes":1024,"driver_alloc_calls":-1e300,"pool_hits":3}],)"
        R"("process":{"command":"x"}})"},
       {"sites", R"({"ok":true,"sites":[],"live_sites":0})"}});
  const std::string pid = std::to_string(shim.pid());
  const std::string figures =
      "  device 0: in use ?, cached ?, reserved ?, peak ?, limit 1.0 KiB\n"
      "            driver allocations ?, pool hits 3\n";
  const Result one = cli({"stats", pid});
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, "pid " + pid + "  x\n" + figures);
  const Result all = cli({"stats", "--all", "--dir", socket_dir_});
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out, "pid " + pid + "  uid " + std::to_string(::geteuid()) + "  x\n" + figures);
  const Result table = cli({"ps", "--dir", socket_dir_});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find(pid + "           ?           ?           ?  "), std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace vramshim::testing
