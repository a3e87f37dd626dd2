// What the views write from a small crafted report stays within their bounds: deep stacks of one
// long name, repeated in every stack, once made gigabytes of text, JSON and page.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_diff.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/call_tree_text.h"
#include "analyzer/render/diff_json.h"
#include "analyzer/render/diff_text.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/growth_text.h"
#include "analyzer/render/html_page.h"
#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/out_of_memory_view.h"
#include "analyzer/render/report_json.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/tree_json.h"

namespace vramshim::analyzer {
namespace {

constexpr size_t kLongName = 4000;

Frame python_frame(std::string function) {
  Frame frame;
  frame.python = true;
  frame.file = "x.py";
  frame.line = 1;
  frame.function = std::move(function);
  return frame;
}

Site device_site(int64_t stack) {
  Site site;
  site.stack = stack;
  site.kind = "device";
  site.live_bytes = site.live_count = site.total_bytes = site.total_count = site.peak_bytes =
      site.bytes_at_peak = 1;
  return site;
}

// `sites` sites, each a stack of `depth` frames: depth - 1 of one function with a long name, then
// an outermost frame of its own (as tree.py of the audit writes).
Report deep_report(size_t sites, size_t depth) {
  Report report;
  report.process.pid = 1;
  report.frames.push_back(python_frame(std::string(kLongName, 'F')));
  for (size_t i = 0; i < sites; ++i) {
    report.frames.push_back(python_frame("u" + std::to_string(i)));
    Stack stack;
    stack.frames.assign(depth - 1, 0);
    stack.frames.push_back(static_cast<uint32_t>(i + 1));
    report.stacks.push_back(std::move(stack));
    report.sites.push_back(device_site(static_cast<int64_t>(i)));
  }
  return report;
}

struct Views {
  explicit Views(const Report& r)
      : report(r),
        table(report, symbolizer, HidePatterns{HidePatterns::defaults()}),
        sites(collect_sites(report, table)) {}
  Report report;
  Symbolizer symbolizer{nullptr};
  FrameTable table;
  std::vector<SiteView> sites;
};

size_t longest_line(const std::string& text) {
  size_t longest = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) longest = std::max(longest, line.size());
  return longest;
}

TEST(BoundedViews, OutOfMemoryListsTheFirstLeadingSitesToAFewFramesCut) {
  Report report = deep_report(1, 1024);
  report.reason = "oom";
  OutOfMemory oom;
  oom.request = {1, "device", 0, "cuMemAlloc", "driver", 0};
  for (int i = 0; i < 12; ++i) oom.leading_sites.push_back({0, "device", 1, 1});
  report.oom = oom;
  const Views views(report);

  std::ostringstream text;
  render_out_of_memory(text, views.report, views.table);
  EXPECT_LT(text.str().size(), size_t{200} << 10);  // whole stacks: 53 MB
  EXPECT_LE(longest_line(text.str()), kListedLineBytes + 16);
  EXPECT_NE(text.str().find("[2 more sites]"), std::string::npos);

  const nlohmann::json entry = out_of_memory_view_json(views.report, views.table).at(0);
  EXPECT_LT(entry.dump().size(), size_t{1} << 20);  // whole stacks: 53 MB
  EXPECT_EQ(entry["leading_sites"].size(), 10u);
  EXPECT_EQ(entry.at("omitted_leading_sites"), 2);
  EXPECT_EQ(entry["leading_sites"][0]["frames"].size(), 16u);
  EXPECT_EQ(entry["leading_sites"][0].at("omitted_frames"), 1024 - 16);
  EXPECT_EQ(entry["request"].at("omitted_frames"), 1024 - 64);
}

TEST(BoundedViews, ThePageNamesEachTreeLabelOnce) {
  const Views views(deep_report(40, 1024));
  std::ostringstream page;
  render_html(page, views.report, views.table, views.sites);
  // 40 × 1,023 nodes of the long name, each with its copy: 164 MB.
  EXPECT_LT(page.str().size(), size_t{8} << 20);
}

TEST(BoundedViews, ThePageTreeKeepsItsUpperLevelsWithinItsBudget) {
  const Views views(deep_report(40, 1024));
  const CallTree tree = build_call_tree(views.sites, views.table, 0);
  nlohmann::json names;
  const TreeJson cut = page_tree_json(tree, size_t{1} << 20, names);
  EXPECT_LT(cut.root.dump().size() + names.dump().size(), size_t{1} << 20);
  EXPECT_GT(cut.omitted_nodes, 0u);
  EXPECT_EQ(cut.root["children"].size(), 40u);  // breadth-first: every caller of the top level
  EXPECT_EQ(names.size(), 42u);                 // "all", the long name, u0..u39
  EXPECT_EQ(names[cut.root["children"][0]["children"][0]["name"].get<size_t>()],
            listed_line(std::string(kLongName, 'F') + " (x.py)"));

  const TreeJson inline_names = tree_json(tree, size_t{1} << 20);
  EXPECT_LT(inline_names.root.dump().size(), size_t{1} << 20);
  EXPECT_EQ(inline_names.root["children"].size(), 40u);
}

TEST(BoundedViews, TheTreeTextCutsNamesAndStopsAtItsBudget) {
  const Views views(deep_report(40, 1024));
  const CallTree tree = build_call_tree(views.sites, views.table, 0);
  std::ostringstream text;
  render_call_tree(text, tree, Metric::kLiveBytes, size_t{256} << 10);
  EXPECT_LE(text.str().size(), (size_t{256} << 10) + 200);
  EXPECT_NE(text.str().find("left out: the tree's text is bounded"), std::string::npos);

  const Views shallow(deep_report(3, 4));
  std::ostringstream whole;
  render_call_tree(whole, build_call_tree(shallow.sites, shallow.table, 0), Metric::kLiveBytes);
  EXPECT_LT(longest_line(whole.str()), kListedLineBytes + 64);
  EXPECT_EQ(whole.str().find("left out"), std::string::npos);
}

TEST(BoundedViews, FoldedStacksStopAtTheirBudgetAndSumTheRest) {
  const Views views(deep_report(40, 1024));
  std::ostringstream folded;
  render_folded(folded, views.sites, views.table, Metric::kLiveBytes, size_t{1} << 20);
  const std::string text = folded.str();
  EXPECT_LE(text.size(), (size_t{1} << 20) + 200);
  const size_t last = text.rfind('\n', text.size() - 2) + 1;
  const size_t kept = std::count(text.begin(), text.end(), '\n') - 1;
  EXPECT_EQ(text.substr(last), "[" + std::to_string(40 - kept) +
                                   " more stacks left out: the output is bounded] " +
                                   std::to_string(40 - kept) + "\n");
  const std::string first_frame = text.substr(text.find(';') + 1);
  EXPECT_EQ(first_frame.substr(0, first_frame.find(';')),
            listed_line(std::string(kLongName, 'F') + " (x.py)"));
}

TEST(BoundedViews, TheStacksViewListsStacksToABound) {
  const Views views(deep_report(40, 1024));
  std::ostringstream text;
  render_top_sites(text, views.report, views.table, views.sites, Metric::kLiveBytes, 0);
  // Whole stacks: 40 × 1,024 lines of 4 KB, 164 MB.
  EXPECT_LT(text.str().size(), size_t{8} << 20);
  EXPECT_LE(longest_line(text.str()), kListedLineBytes + 16);
  EXPECT_NE(text.str().find("… 768 more frames"), std::string::npos);
}

TEST(BoundedViews, TheStacksDocumentListsStacksToABound) {
  const Views views(deep_report(40, 1024));
  nlohmann::json document;
  add_ranked_sites(document, views.table, views.sites, Metric::kLiveBytes, 0);
  // Whole stacks: 40 × 1,024 frame objects of 4 KB, 170 MB.
  EXPECT_LT(document.dump().size(), size_t{48} << 20);
  EXPECT_EQ(document["sites"][0]["frames"].size(), kTextStackFrames);
  EXPECT_EQ(document["sites"][0].at("omitted_frames"), 1024 - kTextStackFrames);
}

TEST(BoundedViews, ARatePastTheFigureLimitIsShownAsTheLimit) {
  Report report = deep_report(1, 2);
  report.history = History{};
  GrowthAnalysis analysis;
  analysis.has_history = true;
  GrowingSite site;
  site.gained_bytes = int64_t{7} << 40;
  site.bytes_per_second = 1.1e24;  // slot times a picosecond apart
  site.steady = true;
  analysis.sites.push_back(site);
  const Views views(report);
  std::ostringstream text;
  render_growth(text, views.report, views.table, analysis, 0);
  EXPECT_NE(text.str().find("more than 4096.0 PiB/s"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("-8192"), std::string::npos) << text.str();
}

TEST(BoundedViews, TheDiffListsStacksToABound) {
  Report before;
  before.process.pid = 1;
  const Views old_views(before);
  const Views new_views(deep_report(40, 1024));
  const std::vector<SiteChange> changes =
      diff_sites(old_views.sites, old_views.table, new_views.sites, new_views.table);
  ASSERT_EQ(changes.size(), 40u);

  std::ostringstream text;
  render_diff(text, old_views.report, old_views.sites, old_views.table, new_views.report,
              new_views.sites, new_views.table, changes, 0);
  // Whole stacks: 40 × 1,024 lines of 4 KB, 164 MB.
  EXPECT_LT(text.str().size(), size_t{8} << 20);
  EXPECT_LE(longest_line(text.str()), kListedLineBytes + 16);
  EXPECT_NE(text.str().find("… 768 more frames"), std::string::npos);

  nlohmann::json document;
  add_diff(document, old_views.report, old_views.sites, old_views.table, new_views.report,
           new_views.sites, new_views.table, changes, 0);
  // Whole stacks: 40 × 1,024 frame objects of 4 KB, 170 MB.
  EXPECT_LT(document.dump().size(), size_t{24} << 20);
  EXPECT_EQ(document["changes"][0]["frames"].size(), kTextStackFrames);
  EXPECT_EQ(document["changes"][0].at("omitted_frames"), 1024 - kTextStackFrames);
  EXPECT_EQ(document["changes"][39]["frames"].size(), 0u);  // past the budget
  EXPECT_EQ(document["changes"][39].at("omitted_frames"), 1024);
}

// A site rising 1 MiB a slot, its slots `apart` seconds apart.
Report rising_history(double apart) {
  Report report = deep_report(1, 2);
  History history;
  SiteHistory series;
  for (int k = 0; k < 8; ++k) {
    history.slot_times.push_back(1000 + k * apart);
    series.points.push_back({k, (k + 1) << 20, (k + 1) << 20});
  }
  history.sites.push_back(series);
  report.history = history;
  return report;
}

TEST(BoundedViews, NoRateIsFitOverSlotsAPicosecondApart) {
  const GrowthAnalysis tiny = analyze_growth(rising_history(1e-12));
  ASSERT_EQ(tiny.sites.size(), 1u);  // it gained, but tells no rate
  EXPECT_FALSE(tiny.sites[0].steady);
  EXPECT_EQ(tiny.sites[0].bytes_per_second, 0);

  const GrowthAnalysis seconds = analyze_growth(rising_history(1));
  ASSERT_EQ(seconds.sites.size(), 1u);
  EXPECT_TRUE(seconds.sites[0].steady);
  EXPECT_DOUBLE_EQ(seconds.sites[0].bytes_per_second, 1 << 20);
}

}  // namespace
}  // namespace vramshim::analyzer
