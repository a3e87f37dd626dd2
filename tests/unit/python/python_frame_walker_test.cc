#include "shim/python/python_frame_walker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "shim/python/object_reader.h"
#include "shim/python/python_frame_table.h"
#include "tests/unit/python/fake_debug_offsets.h"
#include "tests/unit/python/fake_interpreter.h"

namespace vramshim::python {

// For test failure messages: a layout by its version.
void PrintTo(const PythonLayout& layout, std::ostream* out) {
  *out << layout.version.major << "." << layout.version.minor << " layout";
}

namespace {

using testing::FakeDebugOffsets;
using testing::FakeInterpreter;

// Every layout with entry frames: 3.12's measured one, and those the debug offsets of 3.13 (plain
// code pointers) and 3.14 and 3.15 (tagged _PyStackRef code references) give.
std::vector<PythonLayout> layouts_with_entry_frames() {
  std::vector<PythonLayout> layouts = {*layout_for({3, 12, 1}, nullptr)};
  for (int minor : {13, 14, 15}) {
    layouts.push_back(*layout_for({3, minor, 0}, FakeDebugOffsets(minor).runtime()));
  }
  return layouts;
}

// Units 0-3 on firstlineno + 1, units 4-7 on firstlineno + 2 (no-column location entries).
const std::vector<uint8_t> kTwoLines = {0x80 | (13 << 3) | 3, 0x02, 0x80 | (13 << 3) | 3, 0x02};

class PythonFrameWalkerTest : public ::testing::TestWithParam<PythonLayout> {
 protected:
  std::vector<PythonFrameRef> capture(int max = PythonFrameWalker::kMaxFrames) {
    std::vector<PythonFrameRef> refs(PythonFrameWalker::kMaxFrames);
    const PythonFrameWalker walker(fake_.symbols(), fake_.layout());
    refs.resize(walker.capture(refs.data(), max));
    return refs;
  }

  FakeInterpreter fake_{GetParam()};
  const uintptr_t main_ = fake_.add_code("app.py", "<module>", 1, kTwoLines);
  const uintptr_t train_ = fake_.add_code("app.py", "Trainer.step", 10, kTwoLines);
  const uintptr_t forward_ = fake_.add_code("model.py", "Model.forward", 40, kTwoLines);
};

TEST_P(PythonFrameWalkerTest, WalksInnermostFirstAndMarksEachEvalCallsOutermostFrame) {
  // <module> → (C call) → Trainer.step → Model.forward, with entry frames below each C call of
  // the eval loop as 3.12+ pushes them.
  const uintptr_t entry_outer = fake_.add_entry_frame(0);
  const uintptr_t module = fake_.add_frame(main_, 5, entry_outer);
  const uintptr_t entry_inner = fake_.add_entry_frame(module);
  const uintptr_t step = fake_.add_frame(train_, 1, entry_inner);
  const uintptr_t forward = fake_.add_frame(forward_, 6, step);
  fake_.set_current_frame(forward);

  const std::vector<PythonFrameRef> refs = capture();
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].code, forward_);
  EXPECT_EQ(refs[0].instruction, 6);
  EXPECT_EQ(refs[0].firstlineno, 40);
  EXPECT_FALSE(refs[0].ends_eval_call);
  EXPECT_EQ(refs[1].code, train_);
  EXPECT_TRUE(refs[1].ends_eval_call);
  EXPECT_EQ(refs[2].code, main_);
  EXPECT_TRUE(refs[2].ends_eval_call);
}

TEST_P(PythonFrameWalkerTest, ListsTheEntryFramesInnermostFirst) {
  const uintptr_t entry_outer = fake_.add_entry_frame(0);
  const uintptr_t module = fake_.add_frame(main_, 5, entry_outer);
  const uintptr_t entry_inner = fake_.add_entry_frame(module);
  fake_.set_current_frame(fake_.add_frame(train_, 1, entry_inner));
  const PythonFrameWalker walker(fake_.symbols(), fake_.layout());
  uintptr_t entries[4];
  ASSERT_EQ(walker.entry_frames(entries, 4), 2);
  EXPECT_EQ(entries[0], entry_inner);
  EXPECT_EQ(entries[1], entry_outer);
  EXPECT_EQ(walker.entry_frames(entries, 1), 1);
  fake_.set_finalizing(true);
  EXPECT_EQ(walker.entry_frames(entries, 4), 0);
}

TEST_P(PythonFrameWalkerTest, NoThreadStateOrAFinalizingInterpreterGivesNoFrames) {
  EXPECT_TRUE(capture().empty()) << "this thread has no thread state yet";
  fake_.set_current_frame(fake_.add_frame(main_, 0, 0));
  EXPECT_EQ(capture().size(), 1u);
  fake_.set_finalizing(true);
  EXPECT_TRUE(capture().empty());
  fake_.set_finalizing(false);
  std::thread([&] { EXPECT_TRUE(capture().empty()) << "another thread has no state"; }).join();
}

TEST_P(PythonFrameWalkerTest, StopsAtAFrameWithoutACodeObject) {
  const uintptr_t module = fake_.add_frame(main_, 0, 0);
  const uintptr_t torn = fake_.add_torn_frame(module);
  fake_.set_current_frame(fake_.add_frame(forward_, 0, torn));
  const std::vector<PythonFrameRef> refs = capture();
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].code, forward_);
}

TEST_P(PythonFrameWalkerTest, ACyclicChainIsBounded) {
  const uintptr_t a = fake_.add_frame(main_, 0, 0);
  const uintptr_t b = fake_.add_frame(train_, 0, a);
  fake_.set_previous(a, b);
  fake_.set_current_frame(b);
  EXPECT_EQ(capture(10).size(), 10u);
  EXPECT_EQ(capture().size(), static_cast<size_t>(PythonFrameWalker::kMaxFrames));

  const uintptr_t entry = fake_.add_entry_frame(0);
  fake_.set_previous(entry, entry);  // entry frames only: no frame, and the walk still ends
  fake_.set_current_frame(entry);
  EXPECT_TRUE(capture().empty());
}

TEST_P(PythonFrameWalkerTest, FrameTableResolvesFileFunctionAndLineOnce) {
  const uintptr_t module = fake_.add_frame(main_, 5, 0);
  fake_.set_current_frame(fake_.add_frame(forward_, 1, module));
  const std::vector<PythonFrameRef> refs = capture();
  ASSERT_EQ(refs.size(), 2u);

  PythonFrameTable table(fake_.layout());
  const uint32_t forward_id = table.intern(refs[0]);
  const uint32_t module_id = table.intern(refs[1]);
  ASSERT_NE(forward_id, PythonFrameTable::kNoFrame);
  EXPECT_NE(forward_id, module_id);
  const PythonFrameInfo forward = table.describe(forward_id);
  EXPECT_EQ(forward.file, "model.py");
  EXPECT_EQ(forward.function, "Model.forward");
  EXPECT_EQ(forward.line, 41);
  EXPECT_EQ(table.describe(module_id).line, 3);
  EXPECT_EQ(table.describe(module_id).function, "<module>");

  // Another instruction on the same line is the same frame; one on another line is not.
  PythonFrameRef same_line = refs[0];
  same_line.instruction = 3;
  EXPECT_EQ(table.intern(same_line), forward_id);
  PythonFrameRef next_line = refs[0];
  next_line.instruction = 4;
  EXPECT_NE(table.intern(next_line), forward_id);
  EXPECT_EQ(table.describe(table.intern(next_line)).line, 42);
  EXPECT_EQ(table.frame_count(), 3u);
  EXPECT_EQ(table.describe(999).line, -1);
}

TEST_P(PythonFrameWalkerTest, FrameTableTellsReusedCodeAddressesApart) {
  fake_.set_current_frame(fake_.add_frame(forward_, 1, 0));
  PythonFrameTable table(fake_.layout());
  const PythonFrameRef original = capture()[0];
  const uint32_t original_id = table.intern(original);

  // The same address now holds another function: another name object, another first line.
  PythonFrameRef reused = original;
  reused.name = read_field<uintptr_t>(train_, fake_.layout().code_name);
  reused.firstlineno = 7;
  EXPECT_NE(table.intern(reused), original_id);
  EXPECT_EQ(table.intern(original), original_id);

  // Or a function of the same name and first line from another file (a Jupyter cell, an exec'd
  // source) made at the freed one's address: another file name object, another line table.
  const PythonLayout& layout = fake_.layout();
  *reinterpret_cast<uintptr_t*>(forward_ + layout.code_filename) =
      read_field<uintptr_t>(main_, layout.code_filename);
  *reinterpret_cast<uintptr_t*>(forward_ + layout.code_linetable) =
      read_field<uintptr_t>(main_, layout.code_linetable);
  const PythonFrameRef other_file = capture()[0];
  const uint32_t other_id = table.intern(other_file);
  EXPECT_NE(other_id, original_id);
  EXPECT_EQ(table.describe(other_id).file, "app.py");
}

TEST_P(PythonFrameWalkerTest, FrameTableNamesCPythonsOwnInitCleanupInternal) {
  // 3.13's _Py_InitCleanup: file and name "__init__", a line table of no location.
  const uintptr_t cleanup = fake_.add_code("__init__", "__init__", 0, {0x80 | (15 << 3) | 0});
  fake_.set_current_frame(fake_.add_frame(cleanup, 0, fake_.add_frame(main_, 1, 0)));
  PythonFrameTable table(fake_.layout());
  const std::vector<PythonFrameRef> refs = capture();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(table.intern(refs[0]), PythonFrameTable::kInternalFrame);
  EXPECT_EQ(table.intern(refs[0]), PythonFrameTable::kInternalFrame);  // and when known
  EXPECT_EQ(table.describe(table.intern(refs[1])).file, "app.py");
  EXPECT_EQ(table.frame_count(), 1u);
}

TEST_P(PythonFrameWalkerTest, FrameTableGrowsAndKeepsEveryId) {
  fake_.set_current_frame(fake_.add_frame(forward_, 0, 0));
  PythonFrameTable table(fake_.layout());
  std::vector<uint32_t> ids;
  std::vector<PythonFrameRef> refs;
  for (int i = 0; i < 3000; ++i) {
    const uintptr_t code = fake_.add_code("gen.py", "f" + std::to_string(i), i, kTwoLines);
    PythonFrameRef ref{};
    ref.code = code;
    ref.name = code;  // any stable value serves as the guard here
    ref.firstlineno = i;
    ref.ends_eval_call = true;
    refs.push_back(ref);
    ids.push_back(table.intern(refs.back()));
  }
  for (int i = 0; i < 3000; ++i) {
    EXPECT_EQ(table.intern(refs[i]), ids[i]);
    EXPECT_EQ(table.describe(ids[i]).line, i + 1);
  }
}

// Functions made anew in a loop (exec) stop costing memory at the budget: past it a frame not seen
// before is kOverflowFrame, named for the budget, with one warning line; known frames keep their
// id.
TEST_P(PythonFrameWalkerTest, FrameTablePastItsBudgetNamesNewFramesForIt) {
  constexpr size_t kBudget = 64 << 10;
  PythonFrameTable table(fake_.layout(), kBudget);
  std::vector<uint32_t> ids;
  std::vector<PythonFrameRef> refs;
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3000; ++i) {
    const uintptr_t code = fake_.add_code("<string>", "f" + std::to_string(i), i, kTwoLines);
    PythonFrameRef ref{};
    ref.code = code;
    ref.name = code;
    ref.firstlineno = i;
    refs.push_back(ref);
    ids.push_back(table.intern(ref));
  }
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  const auto first_overflow = std::find(ids.begin(), ids.end(), PythonFrameTable::kOverflowFrame);
  ASSERT_NE(first_overflow, ids.end());
  const size_t kept = first_overflow - ids.begin();
  EXPECT_GT(kept, 10u);
  for (size_t i = kept; i < ids.size(); ++i) EXPECT_EQ(ids[i], PythonFrameTable::kOverflowFrame);
  for (size_t i = 0; i < kept; ++i) EXPECT_EQ(table.intern(refs[i]), ids[i]);
  EXPECT_EQ(table.frame_count(), kept);
  EXPECT_LE(table.memory_bytes(), kBudget);
  EXPECT_EQ(table.describe(PythonFrameTable::kOverflowFrame).function,
            "stacks past VRAMSHIM_STACK_TABLE");
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_NE(warnings.find("VRAMSHIM_STACK_TABLE"), std::string::npos) << warnings;
}

TEST(PythonFrameWalkerEntryFramesTest, NoneBefore312) {
  const FakeInterpreter fake(*layout_for({3, 12, 1}, nullptr));
  uintptr_t entries[4];
  for (int minor : {10, 11}) {
    const PythonFrameWalker walker(fake.symbols(), *layout_for({3, minor, 0}, nullptr));
    EXPECT_EQ(walker.entry_frames(entries, 4), 0) << minor;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PythonFrameWalkerTest,
                         ::testing::ValuesIn(layouts_with_entry_frames()),
                         [](const ::testing::TestParamInfo<PythonLayout>& info) {
                           return "Python3_" + std::to_string(info.param.version.minor);
                         });

}  // namespace
}  // namespace vramshim::python
