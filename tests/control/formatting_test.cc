// Prometheus exposition and finding a process's report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "analyzer/commands/report_location.h"
#include "analyzer/render/prometheus.h"

namespace vramshim::cli {
namespace {

TEST(PrometheusTest, OneFamilyPerFigureWithLabelsPerDevice) {
  const nlohmann::json stats = nlohmann::json::parse(R"({"ok":true,"devices":[
      {"device":0,"in_use_bytes":10,"pool_hits":5,"limit_bytes":null},
      {"device":1,"in_use_bytes":20,"pool_hits":6,"limit_bytes":100}]})");
  EXPECT_EQ(to_prometheus(stats, 42),
            "# HELP vramshim_in_use_bytes GPU memory the application holds, in bytes.\n"
            "# TYPE vramshim_in_use_bytes gauge\n"
            "vramshim_in_use_bytes{pid=\"42\",device=\"0\"} 10\n"
            "vramshim_in_use_bytes{pid=\"42\",device=\"1\"} 20\n"
            "# HELP vramshim_limit_bytes Per-device cap on in-use GPU memory, in bytes.\n"
            "# TYPE vramshim_limit_bytes gauge\n"
            "vramshim_limit_bytes{pid=\"42\",device=\"1\"} 100\n"
            "# HELP vramshim_pool_hits_total Allocations served from the pool's cache.\n"
            "# TYPE vramshim_pool_hits_total counter\n"
            "vramshim_pool_hits_total{pid=\"42\",device=\"0\"} 5\n"
            "vramshim_pool_hits_total{pid=\"42\",device=\"1\"} 6\n");
  EXPECT_EQ(to_prometheus(nlohmann::json::parse(R"({"ok":true})"), 1), "");
}

TEST(ReportNotices, ReadsEveryWellFormedLineWithoutWaitingForTheWriters) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const std::string lines =
      "77 exit /tmp/r.77.json\n"
      "garbage\n"
      "78 oom /tmp/a b/r.78.oom.json\n"
      "x9 exit /tmp/x\n";
  ASSERT_EQ(::write(pipe_ends[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  // The write end stays open (a descendant may still run): the read must not wait for it.
  const std::vector<ReportNotice> notices = read_report_notices(pipe_ends[0]);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].pid, 77);
  EXPECT_EQ(notices[0].reason, "exit");
  EXPECT_EQ(notices[0].path, "/tmp/r.77.json");
  EXPECT_EQ(notices[1].path, "/tmp/a b/r.78.oom.json");
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
}

TEST(ReportNotices, ThePatternForAPidKeepsWhatOnlyTheProcessKnows) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(expand_for_pid("r.%p.%h.%r.%n.%%.json", 77),
            std::string("r.77.") + host + ".%r.%n.%%.json");
}

}  // namespace
}  // namespace vramshim::cli
