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

// The page's toggle splices out the interpreter's native frames between Python lines, never a
// Python line, not even one of the interpreter's standard library.
TEST(CallTree, MarksTheInterpretersNativeFramesNotItsPythonLines) {
  Report report;
  report.modules = {{"/usr/bin/python3.11", 0x400000, ""}};
  Frame deepcopy;
  deepcopy.python = true;
  deepcopy.file = "/usr/lib/python3.11/copy.py";
  deepcopy.line = 153;
  deepcopy.function = "deepcopy";
  Frame eval;
  eval.module = 0;
  eval.offset = 0x1234;
  eval.function = "_PyEval_EvalFrameDefault";
  report.frames = {deepcopy, eval};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  SiteView site;
  site.frames = {0, 1};  // innermost first
  site.kind = "device";
  site.figures.live_bytes = 1024;
  const CallTreeNode root = build_call_tree({site}, table, 0).root;
  ASSERT_EQ(root.children.size(), 1u);
  const CallTreeNode& outer = root.children[0];
  EXPECT_TRUE(outer.between_python_lines);  // _PyEval_EvalFrameDefault
  ASSERT_EQ(outer.children.size(), 1u);
  EXPECT_FALSE(outer.children[0].between_python_lines);  // copy.py's line
}

}  // namespace
}  // namespace vramshim::analyzer
