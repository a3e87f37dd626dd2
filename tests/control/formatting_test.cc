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

TEST(FindReportTest, ExpandsPidAndHostAndMatchesTheRest) {
  char pattern[] = "/tmp/vramshim-find-report-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::ofstream(dir + "/r.77." + host + ".json") << "{}";
  std::ofstream(dir + "/r.78." + host + ".json") << "{}";
  std::ofstream(dir + "/seq.77.3.json") << "{}";

  EXPECT_EQ(find_report(dir + "/r.%p.%h.json", 77), dir + "/r.77." + host + ".json");
  EXPECT_EQ(find_report(dir + "/seq.%p.%n.json", 77), dir + "/seq.77.3.json");
  EXPECT_FALSE(find_report(dir + "/seq.%p.%n.json", 7).has_value());
  EXPECT_FALSE(find_report(dir + "/nothing.%p.json", 77).has_value());
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace vramshim::cli
