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
  EXPECT_LE(shown.function.size(), 4096u + 12u);
  EXPECT_LE(shown.file.size(), 4096u + 12u);
  // "…#" and 8 hex digits of the whole name's hash end it.
  const size_t ellipsis = shown.function.rfind("\u2026#");
  ASSERT_NE(ellipsis, std::string::npos);
  EXPECT_EQ(shown.function.size(), ellipsis + 3 + 1 + 8);
  EXPECT_EQ(shown.file.substr(0, 4096), std::string(4096, 'f'));
  // What precedes the "…" is whole characters: 'x' then two-byte 'é's.
  const std::string kept = shown.function.substr(0, ellipsis);
  EXPECT_EQ(kept.size() % 2, 1u);
  EXPECT_EQ(kept.substr(kept.size() - 2), "\u00e9");
  // Names that share their first 4 KiB stay apart.
  Report twins;
  for (const char last : {'a', 'b'}) {
    Frame twin = usual;
    twin.function = std::string(5000, 't') + last;
    twins.frames.push_back(twin);
  }
  const FrameTable apart(twins, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(apart.size(), 2u);
  EXPECT_EQ(table.frame(1).function, "step");
  EXPECT_EQ(table.frame(1).file, "train.py");
}

}  // namespace
}  // namespace vramshim::analyzer
