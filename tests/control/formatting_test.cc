// Prometheus exposition of live processes (PCI bus ids in NVML's form), and finding a process's
// report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "analyzer/commands/report_location.h"
#include "analyzer/live/pci_bus_id.h"
#include "analyzer/render/prometheus.h"

namespace vramshim::cli {
namespace {

// Served by uid 1000 + pid.
live::ProcessSample process(pid_t pid, const char* stats, const char* sites) {
  live::ProcessSample sample{
      {pid, "/run/x/" + std::to_string(pid) + ".sock", static_cast<uid_t>(1000 + pid)},
      nlohmann::json::parse(stats),
      nullptr};
  if (sites != nullptr) sample.sites = nlohmann::json::parse(sites);
  return sample;
}

TEST(PrometheusTest, OneHelpAndTypePerMetricForManyProcesses) {
  live::Collection collection;
  collection.processes.push_back(process(42, R"({"ok":true,"devices":[
      {"device":0,"pci_bus_id":null,"in_use_bytes":10,"pool_hits":5,"limit_bytes":null,
       "unknown_figure":3},
      {"device":1,"pci_bus_id":"0000:18:00.0","in_use_bytes":20,"pool_hits":6,"limit_bytes":100}],
      "process":{"command":"python train.py --name \\\"x\\\"","host":"n1","rank":"3","job":"77"},
      "out_of_memory":[{"device":1,"failures":2}]})",
                                         R"([
      {"stack":4,"kind":"device","live_bytes":300,"live_count":1,"label":"train.py:57 forward"},
      {"stack":9,"kind":"device","live_bytes":200,"live_count":1,"label":"train.py:57 forward"},
      {"stack":2,"kind":"vmm","live_bytes":100,"live_count":1,"label":"load\n"}])"));
  collection.processes.push_back(process(
      43, R"({"ok":true,"devices":[{"device":0,"in_use_bytes":7,"pool_hits":1}]})", nullptr));
  collection.skipped[1042][static_cast<size_t>(live::Skipped::kSilent)] = 1;
  collection.skipped[1043] = {};
  collection.seconds = 0.25;
  collection.ended_unix_seconds = 1796601600.5;
  const std::string p42 =
      R"(pid="42",uid="1042",command="python train.py --name \\\"x\\\"",host="n1",rank="3",job_id="77")";
  const std::string p43 = R"(pid="43",uid="1043",command="?",host="?")";
  // The bus id in NVML's form, as DCGM's exporter labels its series (the out-of-memory count of
  // device 1 too, whose entry names it by number only).
  const std::string bus_18 = R"(,pci_bus_id="00000000:18:00.0")";
  EXPECT_EQ(
      to_prometheus(collection, {1043}),
      "# HELP vramshim_in_use_bytes GPU memory the application holds, in bytes.\n"
      "# TYPE vramshim_in_use_bytes gauge\n"
      "vramshim_in_use_bytes{" +
          p42 +
          ",device=\"0\"} 10\n"
          "vramshim_in_use_bytes{" +
          p42 + ",device=\"1\"" + bus_18 +
          "} 20\n"
          "vramshim_in_use_bytes{" +
          p43 +
          ",device=\"0\"} 7\n"
          "# HELP vramshim_pool_hits_total Allocations served from the pool's cache.\n"
          "# TYPE vramshim_pool_hits_total counter\n"
          "vramshim_pool_hits_total{" +
          p42 +
          ",device=\"0\"} 5\n"
          "vramshim_pool_hits_total{" +
          p42 + ",device=\"1\"" + bus_18 +
          "} 6\n"
          "vramshim_pool_hits_total{" +
          p43 +
          ",device=\"0\"} 1\n"
          "# HELP vramshim_limit_bytes Per-device cap on in-use GPU memory, in bytes.\n"
          "# TYPE vramshim_limit_bytes gauge\n"
          "vramshim_limit_bytes{" +
          p42 + ",device=\"1\"" + bus_18 +
          "} 100\n"
          "# HELP vramshim_out_of_memory_failures_total Allocations vramshim failed with "
          "CUDA_ERROR_OUT_OF_MEMORY.\n"
          "# TYPE vramshim_out_of_memory_failures_total counter\n"
          "vramshim_out_of_memory_failures_total{" +
          p42 +
          ",device=\"0\"} 0\n"
          "vramshim_out_of_memory_failures_total{" +
          p42 + ",device=\"1\"" + bus_18 +
          "} 2\n"
          "vramshim_out_of_memory_failures_total{" +
          p43 +
          ",device=\"0\"} 0\n"
          "# HELP vramshim_site_live_bytes GPU memory held by one of the process's top "
          "allocation sites, named by its innermost user frame, in bytes.\n"
          "# TYPE vramshim_site_live_bytes gauge\n"
          "vramshim_site_live_bytes{" +
          p42 +
          ",kind=\"device\",site=\"train.py:57 forward\"} 500\n"
          "vramshim_site_live_bytes{" +
          p42 +
          ",kind=\"vmm\",site=\"load\\n\"} 100\n"
          "# HELP vramshim_processes_answered Processes running under vramshim that answered.\n"
          "# TYPE vramshim_processes_answered gauge\n"
          "vramshim_processes_answered 2\n"
          "# HELP vramshim_processes_skipped Processes running under vramshim left out, by user "
          "and why.\n"
          "# TYPE vramshim_processes_skipped gauge\n"
          "vramshim_processes_skipped{uid=\"1042\",reason=\"silent\"} 1\n"
          "vramshim_processes_skipped{uid=\"1042\",reason=\"gone\"} 0\n"
          "vramshim_processes_skipped{uid=\"1042\",reason=\"untrusted\"} 0\n"
          "vramshim_processes_skipped{uid=\"1042\",reason=\"failed\"} 0\n"
          "vramshim_processes_skipped{uid=\"1042\",reason=\"oversized\"} 0\n"
          "vramshim_processes_skipped{uid=\"1043\",reason=\"silent\"} 0\n"
          "vramshim_processes_skipped{uid=\"1043\",reason=\"gone\"} 0\n"
          "vramshim_processes_skipped{uid=\"1043\",reason=\"untrusted\"} 0\n"
          "vramshim_processes_skipped{uid=\"1043\",reason=\"failed\"} 0\n"
          "vramshim_processes_skipped{uid=\"1043\",reason=\"oversized\"} 0\n"
          "# HELP vramshim_socket_listing_cut 1 when a user's socket directories hold more than "
          "4096 names PID.sock, past which processes are not asked.\n"
          "# TYPE vramshim_socket_listing_cut gauge\n"
          "vramshim_socket_listing_cut{uid=\"1042\"} 0\n"
          "vramshim_socket_listing_cut{uid=\"1043\"} 1\n"
          "# HELP vramshim_collection_duration_seconds How long asking the processes took.\n"
          "# TYPE vramshim_collection_duration_seconds gauge\n"
          "vramshim_collection_duration_seconds 0.25\n"
          "# HELP vramshim_collection_end_time_seconds When the collection ended, in seconds since "
          "the epoch.\n"
          "# TYPE vramshim_collection_end_time_seconds gauge\n"
          "vramshim_collection_end_time_seconds 1796601600.5\n");
}

// A stats answer's PCI bus id (the driver's form) in NVML's, the form of nvidia-smi and of DCGM's
// pci_bus_id label; anything else a process may put there is no bus id.
TEST(PciBusIdTest, TheDriversFormIsWrittenInNvmlsForm) {
  using nlohmann::json;
  EXPECT_EQ(live::nvml_pci_bus_id({{"pci_bus_id", "0000:18:00.0"}}), "00000000:18:00.0");
  EXPECT_EQ(live::nvml_pci_bus_id({{"pci_bus_id", "0001:2a:1f.7"}}), "00000001:2A:1F.7");
  EXPECT_EQ(live::nvml_pci_bus_id({{"pci_bus_id", "00000000:3B:00.0"}}), "00000000:3B:00.0");
  for (const json& not_bus_id :
       {json(nullptr), json(18), json(""), json("0000:18:00"), json("0000:18:00.0x"),
        json("0000:18:00.8"), json("000000000:18:00.0"), json("0000:118:00.0"),
        json(" 0000:18:00.0"), json("+000:18:00.0"), json("0000:18:.0"), json("0000:18:00.0\n")}) {
    EXPECT_EQ(live::nvml_pci_bus_id({{"pci_bus_id", not_bus_id}}), std::nullopt) << not_bus_id;
  }
  EXPECT_EQ(live::nvml_pci_bus_id({{"device", 0}}), std::nullopt);
}

TEST(PrometheusTest, ALongCommandIsCutWithoutSplittingACharacter) {
  live::Collection collection;
  const std::string command = std::string(95, 'a') + "\u00e9\u00e9\u00e9";
  collection.processes.push_back(
      process(5,
              (R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1}],"process":{"command":")" +
               command + R"("}})")
                  .c_str(),
              nullptr));
  const std::string text = to_prometheus(collection);
  EXPECT_NE(text.find("command=\"" + std::string(95, 'a') + "\xc3\xa9...\""), std::string::npos)
      << text;
}

// Sites whose labels differ only in what is shown as '?' are one series, their bytes summed: two
// series of one name and labels would be one to Prometheus, which keeps only one of them.
TEST(PrometheusTest, SitesShownAlikeAreOneSeries) {
  live::Collection collection;
  collection.processes.push_back(process(
      5, R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1}],"process":{"command":"c"}})",
      R"([{"kind":"device","live_bytes":10,"label":"a\u0001"},
          {"kind":"device","live_bytes":20,"label":"a\u0002"}])"));
  const std::string text = to_prometheus(collection);
  EXPECT_NE(text.find("kind=\"device\",site=\"a?\"} 30\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("site=\"a?\"} 10"), std::string::npos) << text;
}

// Label values come from the processes and repeat in every sample of theirs: each is cut, so that
// one process's 100 KB host name cannot swell every scrape by megabytes.
// The exposition format has no escape for controls, and `stats --prometheus` prints to terminals:
// a process's label values come without what a terminal would act on (ESC, BEL, DEL, C1).
TEST(PrometheusTest, LabelValuesComeWithoutControls) {
  live::Collection collection;
  collection.processes.push_back(process(
      5,
      R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1}],"process":{"command":"a\u001b]0;x\u0007b\u007f\u009b"}})",
      R"([{"stack":1,"kind":"device","live_bytes":7,"live_count":1,"label":"f\u001b[2J"}])"));
  const std::string text = to_prometheus(collection);
  EXPECT_NE(text.find("command=\"a?]0;x?b??\""), std::string::npos) << text;
  EXPECT_NE(text.find("site=\"f?[2J\""), std::string::npos) << text;
  for (const char control : {'\x1b', '\x07', '\x7f'}) {
    EXPECT_EQ(text.find(control), std::string::npos) << text;
  }
}

TEST(PrometheusTest, EveryLabelAProcessGivesIsCut) {
  live::Collection collection;
  const std::string huge(100000, 'h');
  collection.processes.push_back(process(
      6,
      (R"({"ok":true,"devices":[{"device":")" + huge +
       R"(","in_use_bytes":1}],"process":{"host":")" + huge + R"(","rank":")" + huge +
       R"(","job":")" + huge + R"("}})")
          .c_str(),
      (R"([{"live_bytes":1,"kind":")" + huge + R"(","label":")" + huge + R"("}])").c_str()));
  const std::string text = to_prometheus(collection);
  EXPECT_LT(text.size(), size_t{20000});
  for (const char* label : {"host=\"", "rank=\"", "job_id=\""}) {
    EXPECT_NE(text.find(label + std::string(97, 'h') + "...\""), std::string::npos) << label;
  }
  EXPECT_NE(text.find("site=\"" + std::string(197, 'h') + "...\""), std::string::npos);
  EXPECT_EQ(text.find("device="), std::string::npos) << "a device is a number";
}

// A figure that is not a non-negative integer of at most 2^62 is unknown, and left out: a
// negative, fractional or huge value is no sample. A device named twice, or by a string, is not a
// second series. Sums of sites stop at 2^62 instead of wrapping.
TEST(PrometheusTest, OnlyFiguresAreSamplesAndEachSeriesIsWrittenOnce) {
  live::Collection collection;
  collection.processes.push_back(process(7, R"({"ok":true,"devices":[
      {"device":0,"in_use_bytes":-1e300,"cached_bytes":-5,"reserved_bytes":18446744073709551615,
       "peak_in_use_bytes":1.5,"pool_hits":4611686018427387905,"limit_bytes":4611686018427387904,
       "pool_misses":3},
      {"device":"0","in_use_bytes":7},
      {"device":0,"pool_misses":9}],
      "out_of_memory":[{"device":0,"failures":-2}]})",
                                         R"([
      {"kind":"device","live_bytes":18446744073709551615,"label":"a"},
      {"kind":"device","live_bytes":2,"label":"a"},
      {"kind":"device","live_bytes":4611686018427387904,"label":"b"},
      {"kind":"device","live_bytes":4611686018427387904,"label":"b"}])"));
  const std::string text = to_prometheus(collection);
  const std::string labels = R"({pid="7",uid="1007",command="?",host="?",device="0"} )";
  for (const char* metric : {"in_use_bytes", "cached_bytes", "reserved_bytes", "peak_in_use_bytes",
                             "pool_hits_total", "out_of_memory_failures_total"}) {
    EXPECT_EQ(text.find(std::string("vramshim_") + metric + "{"), std::string::npos)
        << metric << "\n"
        << text;
  }
  EXPECT_NE(text.find("vramshim_limit_bytes" + labels + "4611686018427387904\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("vramshim_pool_misses_total" + labels + "3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("vramshim_pool_misses_total" + labels + "9\n"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(kind="device",site="a"} 2)"
                      "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kind="device",site="b"} 4611686018427387904)"
                      "\n"),
            std::string::npos)
      << text;
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

// The directory `run` checks before it starts the job: unknown (empty) where the process names it.
TEST(ReportNotices, TheReportsDirectoryIsKnownUnlessOnlyTheProcessKnowsIt) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(report_directory("r.%p.json"), ".");
  EXPECT_EQ(report_directory("/r.json"), "/");
  EXPECT_EQ(report_directory("out/r.%p.json"), "out");
  EXPECT_EQ(report_directory("/reports/%h/r.json"), std::string("/reports/") + host);
  EXPECT_EQ(report_directory("/reports/%p/r.json"), "");
  EXPECT_EQ(report_directory("/reports/%r/r.json"), "");
}

}  // namespace
}  // namespace vramshim::cli
