// Request line → response line, through a fake command handler.
#include "shim/control/dispatch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/control/fake_handler.h"

namespace vramshim::control {
namespace {

using nlohmann::json;

class DispatchTest : public ::testing::Test {
 protected:
  json ask(std::string_view line) { return json::parse(respond_to(line, handler_)); }
  testing::FakeHandler handler_;
};

TEST_F(DispatchTest, PingAnswersWithThePid) {
  const json answer = ask("ping");
  EXPECT_EQ(answer["ok"], true);
  EXPECT_EQ(answer["pid"], ::getpid());
}

TEST_F(DispatchTest, StatsCarriesTheHandlersDevices) {
  const json answer = ask("stats");
  EXPECT_EQ(answer["ok"], true);
  ASSERT_EQ(answer["devices"].size(), 1u);
  EXPECT_EQ(answer["devices"][0]["in_use_bytes"], 3 << 20);
  EXPECT_TRUE(answer["devices"][0]["limit_bytes"].is_null());
}

TEST_F(DispatchTest, SitesPassesTheCountAsked) {
  EXPECT_EQ(ask("sites")["sites"].size(), 3u);  // the default, 10, is more than the handler has
  const json answer = ask("sites 1");
  EXPECT_EQ(answer["ok"], true);
  ASSERT_EQ(answer["sites"].size(), 1u);
  EXPECT_EQ(answer["sites"][0]["label"], "train.py:57 forward");
  EXPECT_EQ(ask("sites 0")["ok"], false);
}

TEST_F(DispatchTest, FlushReportsReleasedBytesFromTheSocket) {
  const json answer = ask("flush");
  EXPECT_EQ(answer, json::parse(R"({"ok":true,"released_bytes":67108864})"));
  EXPECT_EQ(handler_.flushes_by_socket, 1);
  EXPECT_EQ(ask("flush")["released_bytes"], 0);
  EXPECT_EQ(handler_.deep_flushes, 0);
  EXPECT_TRUE(ask("flush deep")["ok"].get<bool>());
  EXPECT_EQ(handler_.deep_flushes, 1);
}

TEST_F(DispatchTest, TrimAndLimitReachTheHandler) {
  EXPECT_EQ(ask("trim 16M")["released_bytes"], 48 << 20);
  EXPECT_EQ(ask("limit 1G")["limit_bytes"], 1 << 30);
  EXPECT_EQ(handler_.limit(), 1u << 30);
  EXPECT_TRUE(ask("limit off")["limit_bytes"].is_null());
  EXPECT_FALSE(handler_.limit().has_value());
}

TEST_F(DispatchTest, ReportFailureBecomesAnError) {
  const json answer = ask("report /nonexistent-dir/x.json");
  EXPECT_EQ(answer["ok"], false);
  EXPECT_EQ(answer["error"], "cannot write /nonexistent-dir/x.json");
  EXPECT_EQ(answer.size(), 2u);  // members written before the failure are dropped
}

TEST_F(DispatchTest, UnknownRequest) {
  EXPECT_EQ(ask("bogus"), json::parse(R"({"ok":false,"error":"unknown request: bogus"})"));
  EXPECT_EQ(handler_.stats_calls, 0);
}

TEST_F(DispatchTest, ErrorResponseEscapes) {
  EXPECT_EQ(json::parse(error_response("a \"quoted\"\nline"))["error"], "a \"quoted\"\nline");
}

}  // namespace
}  // namespace vramshim::control
