// ask(), require_ok() and live_sockets() against processes whose answers or sockets are hostile:
// each gets a clear error of its own, never a crash, a hang or unbounded memory.
#include "analyzer/control/control_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>

#include "tests/analyzer/scripted_shim.h"

namespace vramshim::cli {
namespace {

using testing::ScriptedShim;

// `levels` arrays nested in one another, inside an answer's "devices".
std::string nested_answer(size_t levels) {
  return R"({"ok":true,"devices":)" + std::string(levels, '[') + std::string(levels, ']') + "}";
}

// What ask() threw, or "answered".
std::string ask_failure(const SocketEntry& socket, int timeout_ms) {
  try {
    ask(socket, "stats", timeout_ms);
    return "answered";
  } catch (const std::exception& e) {
    return e.what();
  }
}

class ControlClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vramshim-client-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + directory_).c_str()); }

  static SocketEntry socket_of(const ScriptedShim& shim) { return {shim.pid(), shim.path()}; }

  std::string directory_;
};

TEST_F(ControlClientTest, RequireOkRefusesAnOkOrAnErrorOfAnotherType) {
  for (const char* answer : {R"({"ok":1})", R"({"ok":"true"})", R"({"ok":false,"error":7})"}) {
    ScriptedShim shim(directory_, {{"stats", answer}});
    const std::string pid = std::to_string(shim.pid());
    const nlohmann::json parsed = ask(socket_of(shim), "stats");
    try {
      require_ok(parsed, shim.pid());
      ADD_FAILURE() << answer << " taken for a success";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("pid " + pid + ": ", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << answer << ": not a clear error: " << e.what();
    }
  }
}

TEST_F(ControlClientTest, AnErrorReachesTheTerminalWithoutItsControlCharacters) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":false,"error":"gone\u001b]0;owned\u0007"})"}});
  try {
    require_ok(ask(socket_of(shim), "stats"), shim.pid());
    ADD_FAILURE() << "an error taken for a success";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "pid " + std::to_string(shim.pid()) + ": gone?]0;owned?");
  }
}

TEST_F(ControlClientTest, AskRefusesAnAnswerLongerThanTheLimit) {
  // Valid JSON, but 17 MiB before its newline: refused as soon as 16 MiB came.
  ScriptedShim shim(directory_, {{"stats", std::string(size_t{17} << 20, ' ') + R"({"ok":true})"}});
  EXPECT_EQ(ask_failure(socket_of(shim), 10000),
            shim.path() + ": the answer is longer than 16 MiB");
  ScriptedShim within(directory_,
                      {{"stats", std::string(size_t{1} << 20, ' ') + R"({"ok":true})"}});
  EXPECT_EQ(ask(socket_of(within), "stats")["ok"], true);
}

TEST_F(ControlClientTest, AskRefusesAnAnswerNestedTooDeeply) {
  // The top-level object and 63 arrays: the deepest accepted.
  ScriptedShim deepest(directory_, {{"stats", nested_answer(63)}});
  EXPECT_EQ(ask(socket_of(deepest), "stats")["ok"], true);
  for (const size_t levels : {size_t{64}, size_t{200000}}) {
    ScriptedShim shim(directory_, {{"stats", nested_answer(levels)}});
    EXPECT_EQ(ask_failure(socket_of(shim), 10000),
              shim.path() + ": the answer is nested deeper than 64 levels")
        << levels;
  }
}

TEST_F(ControlClientTest, AskGivesUpOnAFullBacklogWithinItsTimeout) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":true})"}});
  shim.stop_with_full_backlog();
  const auto start = std::chrono::steady_clock::now();
  std::future<std::string> failure =
      std::async(std::launch::async, [&] { return ask_failure(socket_of(shim), 300); });
  if (failure.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "ask() still waits to connect after 5 s";
    ::kill(shim.pid(), SIGKILL);  // refuses the connection: ask() returns
  }
  EXPECT_EQ(failure.get(), "cannot connect to " + shim.path() +
                               ": the process accepted no connection within 300 ms (stopped?)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(ControlClientTest, LiveSocketsKeepsAStoppedProcessWithoutWaitingForIt) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":true})"}});
  shim.stop_with_full_backlog();
  std::future<std::vector<SocketEntry>> live =
      std::async(std::launch::async, [&] { return live_sockets({directory_}); });
  if (live.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "live_sockets() still waits to connect after 5 s";
    ::kill(shim.pid(), SIGKILL);
  }
  const std::vector<SocketEntry> sockets = live.get();
  ASSERT_EQ(sockets.size(), 1u);
  EXPECT_EQ(sockets[0].pid, shim.pid());
}

}  // namespace
}  // namespace vramshim::cli
