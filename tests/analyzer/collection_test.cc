// live::collect() against processes whose answers are hostile: each such process is skipped as
// failed, with a line saying why, and the others are collected all the same.
#include "analyzer/live/collection.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory.h"
#include "tests/analyzer/handed_over_socket.h"
#include "tests/analyzer/scripted_shim.h"

namespace vramshim::live {
namespace {

using testing::HandedOverSocket;
using testing::ScriptedShim;

constexpr char kGoodStats[] =
    R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1024}],"process":{"command":"good"}})";
constexpr char kGoodSites[] = R"({"ok":true,"sites":[],"live_sites":0})";
// The owner given to processes of another user (collections take each user's processes in turn).
constexpr uid_t kOtherUser = 4242;

// The socket of `pid` in `directory`, as the CLI finds and checks it.
cli::SocketEntry found(const std::string& directory, pid_t pid) {
  std::string refused;
  const std::optional<cli::SocketEntry> socket =
      cli::SocketDirectory(directory).socket_of(pid, &refused);
  if (!socket) throw std::runtime_error("no trusted socket of pid " + std::to_string(pid));
  return *socket;
}

// found(), counted as a socket of `owner` (another user's, whose processes take their own turns).
cli::SocketEntry found_as(uid_t owner, const std::string& directory, pid_t pid) {
  cli::SocketEntry socket = found(directory, pid);
  socket.owner = owner;
  return socket;
}

class CollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vramshim-collection-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    shims_.clear();
    std::system(("rm -rf " + directory_).c_str());
  }

  ScriptedShim& start(const std::string& stats, const std::string& sites = kGoodSites) {
    shims_.push_back(std::make_unique<ScriptedShim>(
        directory_, std::map<std::string, std::string>{{"stats", stats}, {"sites", sites}}));
    return *shims_.back();
  }

  // Every shim started, collected.
  Collection collect_all(int budget_ms = CollectOptions{}.budget_ms) {
    std::vector<cli::SocketEntry> sockets;
    for (const auto& shim : shims_) sockets.push_back(found(directory_, shim->pid()));
    CollectOptions options;
    options.budget_ms = budget_ms;
    return collect(sockets, options);
  }
  // `count` sockets of `owner`'s processes that are gone (another user's by default): the files
  // stay, nobody listens. Their pids run from 1, skipping `ours` (a process whose socket is in the
  // same directory).
  void add_stale(int count, pid_t ours, std::vector<cli::SocketEntry>* sockets,
                 uid_t owner = kOtherUser) {
    for (int pid = 1; count > 0; ++pid) {
      if (pid == ours) continue;
      --count;
      const std::string path = directory_ + "/" + std::to_string(pid) + ".sock";
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::strcpy(address.sun_path, path.c_str());
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << path;
      ::close(fd);
      sockets->push_back(found_as(owner, directory_, pid));
    }
  }
  // `count` processes of another user that never answer (stopped, their backlogs full).
  void add_silent(int count, std::vector<cli::SocketEntry>* sockets) {
    for (int i = 0; i < count; ++i) {
      ScriptedShim& silent = start(kGoodStats);
      silent.stop_with_full_backlog();
      sockets->push_back(found_as(kOtherUser, directory_, silent.pid()));
    }
  }

  std::string directory_;
  std::vector<std::unique_ptr<ScriptedShim>> shims_;
};

// A good process and a hostile one: only the good one is collected, the other is counted as
// failed with `why`.
void expect_only_good_collected(const Collection& collection, pid_t good, const std::string& why) {
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].socket.pid, good);
  EXPECT_EQ(collection.processes[0].stats["devices"][0]["in_use_bytes"], 1024);
  EXPECT_EQ(collection.skipped_count(Skipped::kFailed), 1u);
  ASSERT_EQ(collection.problems.size(), 1u);
  EXPECT_EQ(collection.problems[0], why);
}

TEST_F(CollectionTest, AnOkOrAnErrorOfAnotherTypeFailsOnlyThatProcess) {
  for (const char* answer : {R"({"ok":1})", R"({"ok":[true]})", R"({"ok":false,"error":7})"}) {
    const pid_t good = start(kGoodStats).pid();
    const pid_t hostile = start(answer).pid();
    const std::string why = std::string(answer).find("false") != std::string::npos
                                ? "request failed"
                                : "the answer's \"ok\" is not true or false";
    expect_only_good_collected(collect_all(), good,
                               "pid " + std::to_string(hostile) + ": stats: " + why);
    shims_.clear();
  }
}

TEST_F(CollectionTest, MembersOfAnotherTypeFailOnlyThatProcess) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"ok":true,"devices":"none"})", "devices is not an array of objects"},
      {R"({"ok":true,"devices":[0]})", "devices is not an array of objects"},
      {R"({"ok":true,"devices":[],"out_of_memory":{"device":0}})",
       "out_of_memory is not an array of objects"},
      {R"({"ok":true,"devices":[],"process":"me"})", "process is not an object"},
  };
  for (const auto& [answer, why] : cases) {
    const pid_t good = start(kGoodStats).pid();
    const ScriptedShim& hostile = start(answer);
    expect_only_good_collected(collect_all(), good,
                               hostile.path() + ": the answer to stats is misshapen: " + why);
    shims_.clear();
  }
}

TEST_F(CollectionTest, ADeeplyNestedAnswerFailsOnlyThatProcess) {
  const std::string deep =
      R"({"ok":true,"devices":)" + std::string(200000, '[') + std::string(200000, ']') + "}";
  const pid_t good = start(kGoodStats).pid();
  const ScriptedShim& hostile = start(deep);
  expect_only_good_collected(
      collect_all(), good,
      hostile.path() + ": the answer to stats is nested deeper than 64 levels");
}

// Each site is a series of the exporter: a process answering more than it was asked for (another
// user's, for root) gets no more series than any other.
TEST_F(CollectionTest, NoMoreSitesAreKeptThanWereAsked) {
  std::string sites = R"({"ok":true,"live_sites":5000,"sites":[)";
  for (int i = 0; i < 5000; ++i) {
    sites += (i > 0 ? "," : "") + std::string(R"({"live_bytes":1,"kind":"device","label":"f)") +
             std::to_string(i) + R"("})";
  }
  sites += "]}";
  start(kGoodStats, sites);
  const Collection collection = collect_all();
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].sites.size(), static_cast<size_t>(CollectOptions{}.top_sites));
}

// Parsed, 16 MiB of empty objects would take some 400 MB of the exporter's memory.
TEST_F(CollectionTest, AnAnswerOfTooManyValuesFailsOnlyThatProcess) {
  std::string many = R"({"ok":true,"devices":[],"padding":[)";
  for (int i = 0; i < 200000; ++i) many += i > 0 ? ",{}" : "{}";
  many += "]}";
  const pid_t good = start(kGoodStats).pid();
  const ScriptedShim& hostile = start(many);
  expect_only_good_collected(
      collect_all(), good, hostile.path() + ": the answer to stats holds more than 100000 values");
}

TEST_F(CollectionTest, ADeeplyNestedSitesAnswerLeavesOnlyTheSitesOut) {
  const std::string deep =
      R"({"ok":true,"sites":)" + std::string(200000, '[') + std::string(200000, ']') + "}";
  start(kGoodStats, deep);
  const Collection collection = collect_all();
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_TRUE(collection.processes[0].sites.is_null());
}

// Another user's directory full of sockets nobody serves any more (each stands for a process of
// theirs, listed before ours by pid): they are asked a few at a time, so that they cannot take
// every descriptor the collection may have, and our process is collected all the same.
TEST_F(CollectionTest, StaleSocketsOfOneUserTakeNoDescriptorsFromOthers) {
  const ScriptedShim& good = start(kGoodStats);
  std::vector<cli::SocketEntry> sockets;
  add_stale(600, good.pid(), &sockets);
  sockets.push_back(found(directory_, good.pid()));
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlimit lowered{256, limit.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const Collection collection = collect(sockets, CollectOptions{});
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].socket.pid, good.pid());
  EXPECT_EQ(collection.skipped_count(Skipped::kGone), 600u);
  EXPECT_EQ(collection.skipped_count(Skipped::kFailed), 0u);
}

// Sockets of our processes killed by SIGKILL, which leaves the files: a collection removes those
// it finds gone, kMaxRemovedPerCollection at most, so that they are not asked and counted as gone
// at every collection after (nor, past SocketDirectory::kMaxListed, hide the processes listed
// after them); the process that answers keeps its socket.
TEST_F(CollectionTest, StaleSocketsAreRemovedABoundedNumberAtATime) {
  const ScriptedShim& good = start(kGoodStats);
  const size_t stale = kMaxRemovedPerCollection + 44;
  std::vector<cli::SocketEntry> sockets;
  add_stale(static_cast<int>(stale), good.pid(), &sockets, ::geteuid());
  sockets.push_back(found(directory_, good.pid()));
  auto listed = [&] {
    std::vector<std::string> refused;
    return cli::SocketDirectory(directory_).sockets(&refused);
  };
  const Collection first = collect(sockets, CollectOptions{});
  EXPECT_EQ(first.skipped_count(Skipped::kGone), stale);
  ASSERT_EQ(listed().size(), 1 + stale - kMaxRemovedPerCollection);
  const Collection second = collect(listed(), CollectOptions{});
  EXPECT_EQ(second.skipped_count(Skipped::kGone), stale - kMaxRemovedPerCollection);
  ASSERT_EQ(listed().size(), 1u);
  EXPECT_EQ(listed()[0].pid, good.pid());
  const Collection third = collect(listed(), CollectOptions{});
  EXPECT_EQ(third.skipped_count(Skipped::kGone), 0u);
  ASSERT_EQ(third.processes.size(), 1u);
}

// Connecting to another user's many stale sockets takes longer than the whole budget: the answer
// of a process asked at the start, there since, is still read.
TEST_F(CollectionTest, AnswersAlreadyThereAreReadWhenTheBudgetIsSpent) {
  const ScriptedShim& good = start(kGoodStats);
  std::vector<cli::SocketEntry> sockets{found(directory_, good.pid())};
  add_stale(60000, good.pid(), &sockets);
  CollectOptions options;
  // 120,000 connections refused take longer than the budget, which leaves the process asked
  // first ample time to answer on a loaded machine.
  options.budget_ms = 300;
  const Collection collection = collect(sockets, options);
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].socket.pid, good.pid());
  EXPECT_GT(collection.skipped_count(Skipped::kSilent), 0u);  // the budget ran out before the end
}

// Another user's processes that never answer (stopped, their backlogs full), more of them than
// are asked at a time and listed first: each user's processes are asked in turn, so ours is asked,
// and collected, within the budget.
TEST_F(CollectionTest, SilentProcessesOfOneUserDoNotKeepOthersWaiting) {
  std::vector<cli::SocketEntry> sockets;
  add_silent(33, &sockets);  // 66 exchanges (stats and sites): more than are under way at once
  const ScriptedShim& good = start(kGoodStats);
  sockets.push_back(found(directory_, good.pid()));
  CollectOptions options;
  options.budget_ms = 500;
  const Collection collection = collect(sockets, options);
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].socket.pid, good.pid());
  EXPECT_EQ(collection.skipped_count(Skipped::kSilent), 33u);
}

// More processes than requests are under way at once, all answering: each is asked in its turn,
// on a connection of its own (a later one was connected early, then again: "already connected").
TEST_F(CollectionTest, MoreProcessesThanRequestsUnderWayAreAllCollected) {
  for (int i = 0; i < 40; ++i) start(kGoodStats);  // 80 requests (stats and sites)
  // All answer, so it ends early; a loaded machine (sanitizers) may take more than 1 s.
  const Collection collection = collect_all(/*budget_ms=*/20000);
  EXPECT_EQ(collection.processes.size(), 40u);
  EXPECT_TRUE(collection.problems.empty()) << collection.problems[0];
}

// One user's silent processes hold at most their share of the requests under way: another user's
// 40 processes are all asked, and collected, within the budget.
TEST_F(CollectionTest, OneUsersSilentProcessesHoldOnlyTheirShare) {
  std::vector<cli::SocketEntry> sockets;
  add_silent(40, &sockets);
  for (int i = 0; i < 40; ++i) {
    const ScriptedShim& good = start(kGoodStats);
    sockets.push_back(found(directory_, good.pid()));
  }
  CollectOptions options;
  options.budget_ms = 1000;
  const Collection collection = collect(sockets, options);
  EXPECT_EQ(collection.processes.size(), 40u);
  EXPECT_EQ(collection.skipped_count(Skipped::kSilent), 40u);
}

// One process reached through sockets in two directories (XDG_RUNTIME_DIR's and /tmp's, the same
// pid and uid, as the peer check proved) is one process: collected once.
TEST_F(CollectionTest, AProcessReachedThroughTwoSocketsIsCollectedOnce) {
  const ScriptedShim& shim = start(kGoodStats);
  const std::string other_name = directory_ + "/other";
  ASSERT_EQ(::mkdir(other_name.c_str(), 0700), 0);
  const std::string linked = other_name + "/" + std::to_string(shim.pid()) + ".sock";
  ASSERT_EQ(::link(shim.path().c_str(), linked.c_str()), 0);
  const Collection collection =
      collect({found(directory_, shim.pid()), found(other_name, shim.pid())}, CollectOptions{});
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_TRUE(collection.problems.empty()) << collection.problems[0];
}

// A shim's stats answer is a few KiB: one longer than kMaxStatsAnswerBytes is not read on.
TEST_F(CollectionTest, AnAnswerLongerThanItsBoundIsSkippedAsOversized) {
  const std::string longest =
      R"({"ok":true,"devices":[],"padding":")" + std::string(kMaxStatsAnswerBytes, 'x') + R"("})";
  const pid_t good = start(kGoodStats).pid();
  const ScriptedShim& hostile = start(longest);
  const Collection collection = collect_all();
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].socket.pid, good);
  EXPECT_EQ(collection.skipped_count(Skipped::kOversized), 1u);
  ASSERT_EQ(collection.problems.size(), 1u);
  EXPECT_EQ(collection.problems[0], hostile.path() + ": the answer to stats is longer than 1 MiB");
}

// Answers within their bound each, but that parsed take megabytes (80,000 short strings): one
// user's processes get kMaxAnswerBytesPerUser in all, the rest are skipped as oversized, so that
// a co-tenant starting such processes cannot swell the exporter.
TEST_F(CollectionTest, OneUsersAnswersTakeAtMostTheirShareOfMemory) {
  std::string bulky = R"({"ok":true,"devices":[],"padding":[)";
  for (int i = 0; i < 80000; ++i) bulky += i > 0 ? R"(,"12345678")" : R"("12345678")";
  bulky += "]}";
  ASSERT_LT(bulky.size(), kMaxStatsAnswerBytes);
  constexpr size_t kProcesses = 16;
  for (size_t i = 0; i < kProcesses; ++i) start(bulky);
  const Collection collection = collect_all(/*budget_ms=*/20000);
  EXPECT_GT(collection.skipped_count(Skipped::kOversized), 0u);
  EXPECT_EQ(collection.processes.size() + collection.skipped_count(Skipped::kOversized),
            kProcesses);
  // Each parsed answer takes over 6 MiB: no more than the share's worth are kept.
  EXPECT_LE(collection.processes.size(), kMaxAnswerBytesPerUser / (size_t{6} << 20));
  ASSERT_FALSE(collection.problems.empty());
  EXPECT_NE(collection.problems[0].find("passes the memory the answers of uid"), std::string::npos)
      << collection.problems[0];
}

// Each device is a dozen series of the exporter: a device number no machine has, a device named
// by a string (a second series for device 0), or a list longer than any machine's refuses the
// answer; a device listed twice keeps its first entry.
TEST_F(CollectionTest, OnlyDevicesAMachineCanHaveAreTaken) {
  std::string many = R"({"ok":true,"devices":[)";
  for (size_t i = 0; i <= kMaxDevicesPerProcess; ++i) {
    many += (i > 0 ? "," : "") + std::string(R"({"device":)") + std::to_string(i) + "}";
  }
  many += "]}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"ok":true,"devices":[{"device":0},{"device":"0"}]})",
       "devices holds a device that is not an integer from 0 to 65535"},
      {R"({"ok":true,"devices":[{"device":65536}]})",
       "devices holds a device that is not an integer from 0 to 65535"},
      {R"({"ok":true,"devices":[{"device":-1}]})",
       "devices holds a device that is not an integer from 0 to 65535"},
      {R"({"ok":true,"devices":[{"in_use_bytes":5}]})",
       "devices holds a device that is not an integer from 0 to 65535"},
      {R"({"ok":true,"devices":[],"out_of_memory":[{"device":1.5,"failures":1}]})",
       "out_of_memory holds a device that is not an integer from 0 to 65535"},
      {many, "devices lists more than 64 devices"},
  };
  for (const auto& [answer, why] : cases) {
    const pid_t good = start(kGoodStats).pid();
    const ScriptedShim& hostile = start(answer);
    expect_only_good_collected(collect_all(), good,
                               hostile.path() + ": the answer to stats is misshapen: " + why);
    shims_.clear();
  }
  start(R"({"ok":true,"devices":[{"device":1,"in_use_bytes":1},{"device":1,"in_use_bytes":2}]})");
  const Collection collection = collect_all();
  ASSERT_EQ(collection.processes.size(), 1u);
  EXPECT_EQ(collection.processes[0].stats["devices"],
            nlohmann::json::parse(R"([{"device":1,"in_use_bytes":1}])"));
}

// A socket served on by another process after the one that listened on it exited, whose pid the
// kernel then gave to another user's process: that process is neither shown nor charged with the
// forged figures (root's `top` showed it holding 75 GiB under the forger's command line).
TEST_F(CollectionTest, ASocketWhoseListenerExitedIsNotCollected) {
  const std::string forged_stats =
      R"({"ok":true,"devices":[{"device":0,"in_use_bytes":80530636800}],)"
      R"("process":{"command":"forged"}})";
  HandedOverSocket forged(directory_, forged_stats);
  const std::string why = forged.path() + ": pid " + std::to_string(forged.listener()) +
                          ", which listened on it, has exited (another process serves it); not "
                          "trusted";
  CollectOptions stats_only;
  stats_only.top_sites = 0;
  auto expect_refused = [&](const Collection& collection) {
    EXPECT_TRUE(collection.processes.empty()) << collection.processes[0].stats.dump();
    EXPECT_EQ(collection.skipped_count(Skipped::kUntrusted), 1u);
    ASSERT_EQ(collection.problems.size(), 1u);
    EXPECT_EQ(collection.problems[0], why);
  };
  expect_refused(collect({found(directory_, forged.listener())}, stats_only));
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand the pid to another user";
  ASSERT_TRUE(forged.give_the_pid_to(kOtherUser));
  expect_refused(collect({found(directory_, forged.listener())}, stats_only));
}

// The socket swapped for a link to another listener between the check and the connection: that
// listener is never connected to, and the process is skipped as untrusted.
TEST_F(CollectionTest, ASocketSwappedForALinkIsNotConnectedTo) {
  const ScriptedShim& shim = start(kGoodStats);
  const cli::SocketEntry checked = found(directory_, shim.pid());
  const std::string elsewhere = directory_ + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  const std::string victim_path = elsewhere + "/victim.sock";
  const int victim = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, victim_path.c_str());
  ASSERT_EQ(::bind(victim, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(victim, 8), 0);
  ASSERT_EQ(::rename(checked.path.c_str(), (directory_ + "/moved.sock").c_str()), 0);
  ASSERT_EQ(::symlink(victim_path.c_str(), checked.path.c_str()), 0);
  CollectOptions stats_only;
  stats_only.top_sites = 0;
  const Collection collection = collect({checked}, stats_only);
  EXPECT_TRUE(collection.processes.empty());
  EXPECT_EQ(collection.skipped_count(Skipped::kUntrusted), 1u);
  ASSERT_EQ(collection.problems.size(), 1u);
  EXPECT_EQ(collection.problems[0],
            checked.path + " is no longer the socket that was checked; not trusted");
  EXPECT_LT(::accept(victim, nullptr, nullptr), 0) << "the other listener was connected to";
  EXPECT_EQ(errno, EAGAIN);
  ::close(victim);
}

// Figures of a process's answer are non-negative integers of at most 2^62 (as in reports); sums
// of them stop there.
TEST(AnswerFigureTest, OnlyNonNegativeIntegersUpTo2To62AreFigures) {
  using nlohmann::json;
  EXPECT_EQ(answer_figure(json(0)), 0u);
  EXPECT_EQ(answer_figure(json(std::uint64_t{1} << 62)), std::uint64_t{1} << 62);
  for (const json& value : {json((std::uint64_t{1} << 62) + 1), json(~std::uint64_t{0}), json(-1),
                            json(-1e300), json(1.5), json("7"), json(nullptr), json(true)}) {
    EXPECT_EQ(answer_figure(value), std::nullopt) << value.dump();
  }
  EXPECT_EQ(saturating_figure_sum(std::uint64_t{1} << 62, 2), std::uint64_t{1} << 62);
  EXPECT_EQ(saturating_figure_sum(~std::uint64_t{0}, 2), std::uint64_t{1} << 62);
  EXPECT_EQ(saturating_figure_sum(3, 4), 7u);
}

}  // namespace
}  // namespace vramshim::live
