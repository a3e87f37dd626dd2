// The frames the views show: a name a report makes absurdly long is shown cut, once per frame
// table, so that no view multiplies it by the frames and stacks that hold it.
#include "analyzer/model/frame_table.h"

#include <gtest/gtest.h>

#include <string>

#include "analyzer/model/report.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

TEST(FrameTable, ShowsAnAbsurdlyLongNameCutAtACharacter) {
  Report report;
  Frame frame;
  frame.python = true;
  frame.file = std::string(1 << 20, 'f');  // 1 MiB
  frame.line = 3;
  frame.function = "x";  // then two-byte characters: byte 4096 is inside one
  for (int i = 0; i < 600000; ++i) frame.function += "\u00e9";
  report.frames.push_back(frame);
  Frame usual = frame;
  usual.function = "step";
  usual.file = "train.py";
  report.frames.push_back(usual);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  ASSERT_EQ(table.size(), 2u);
  const DisplayFrame& shown = table.frame(0);
  EXPECT_LE(shown.function.size(), 4096u + 3u);
  EXPECT_LE(shown.file.size(), 4096u + 3u);
  EXPECT_EQ(shown.function.substr(shown.function.size() - 3), "\u2026");
  EXPECT_EQ(shown.file.substr(0, 4096), std::string(4096, 'f'));
  // What precedes the "…" is whole characters: 'x' then two-byte 'é's.
  const std::string kept = shown.function.substr(0, shown.function.size() - 3);
  EXPECT_EQ(kept.size() % 2, 1u);
  EXPECT_EQ(kept.substr(kept.size() - 2), "\u00e9");
  EXPECT_EQ(table.frame(1).function, "step");
  EXPECT_EQ(table.frame(1).file, "train.py");
}

}  // namespace
}  // namespace vramshim::analyzer
