// The call tree and what walks it recurse once per level: however many frames a site's stack
// shows (a report frame expands into its inlined frames), the tree is at most kMaxTreeDepth deep.
#include "analyzer/model/call_tree.h"

#include <gtest/gtest.h>

#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

TEST(CallTree, IsNoDeeperThanItsBound) {
  Report report;
  Frame frame;
  frame.python = true;
  frame.file = "train.py";
  frame.line = 3;
  frame.function = "step";
  report.frames.push_back(frame);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});

  SiteView site;
  site.frames.assign(1000000, 0);  // as many display frames as a frame of a million inlined ones
  site.kind = "device";
  site.figures.live_bytes = 1024;
  const CallTreeNode root = build_call_tree({site}, table, 0).root;
  EXPECT_EQ(count_nodes(root), kMaxTreeDepth);
  EXPECT_EQ(count_nodes(root, Metric::kLiveBytes), kMaxTreeDepth);
  const CallTreeNode* node = &root;
  while (!node->children.empty()) node = &node->children[0];
  EXPECT_EQ(node->value(Metric::kLiveBytes), 1024);
}

}  // namespace
}  // namespace vramshim::analyzer
