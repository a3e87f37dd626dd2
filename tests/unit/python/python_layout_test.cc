#include "shim/python/python_layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "shim/python/debug_offsets.h"

namespace vramshim::python {
namespace {

// A 3.13 _Py_DebugOffsets as the interpreter lays it out: a cookie, then uint64_t fields.
struct DebugOffsets313 {
  uint64_t fields[73] = {};

  DebugOffsets313() {
    std::memcpy(fields, "xdebugpy", 8);
    fields[1] = 0x030D00F0;  // 3.13.0
    fields[2] = 0;           // not free-threaded
    fields[23] = 72;         // thread_state.current_frame
    fields[29] = 8;          // interpreter_frame.previous
    fields[30] = 0;          // interpreter_frame.executable
    fields[31] = 56;         // interpreter_frame.instr_ptr
    fields[33] = 70;         // interpreter_frame.owner
    fields[35] = 112;        // code_object.filename
    fields[37] = 128;        // code_object.qualname
    fields[38] = 136;        // code_object.linetable
    fields[39] = 68;         // code_object.firstlineno
    fields[43] = 200;        // code_object.co_code_adaptive
    fields[45] = 8;          // pyobject.ob_type
    fields[65] = 16;         // bytes_object.ob_size
    fields[66] = 32;         // bytes_object.ob_sval
    fields[68] = 32;         // unicode_object.state
    fields[69] = 16;         // unicode_object.length
    fields[70] = 40;         // unicode_object.asciiobject_size
  }
};

TEST(PythonLayoutTest, KnowsTheSupportedVersions) {
  for (int minor : {10, 11, 12}) {
    const auto layout = layout_for({3, minor, 0}, nullptr);
    ASSERT_TRUE(layout.has_value()) << minor;
    EXPECT_EQ(layout->version.minor, minor);
  }
  EXPECT_EQ(layout_for({3, 10, 0}, nullptr)->marker, EvalCallMarker::kEveryFrame);
  EXPECT_EQ(layout_for({3, 11, 0}, nullptr)->marker, EvalCallMarker::kIsEntryFlag);
  EXPECT_EQ(layout_for({3, 12, 0}, nullptr)->marker, EvalCallMarker::kCStackOwner);
}

TEST(PythonLayoutTest, UnknownVersionsHaveNoLayout) {
  EXPECT_FALSE(layout_for({3, 9, 18}, nullptr).has_value());
  EXPECT_FALSE(layout_for({3, 14, 0}, nullptr).has_value());
  EXPECT_FALSE(layout_for({2, 7, 18}, nullptr).has_value());
  EXPECT_FALSE(layout_for({}, nullptr).has_value());
  EXPECT_FALSE(layout_for({3, 13, 0}, nullptr).has_value()) << "3.13 needs its debug offsets";
}

TEST(DebugOffsetsTest, Reads313Offsets) {
  const DebugOffsets313 offsets;
  const auto layout = layout_for({3, 13, 0}, &offsets);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->version.minor, 13);
  EXPECT_EQ(layout->thread_cframe, -1);
  EXPECT_EQ(layout->cframe_current_frame, 72);
  EXPECT_EQ(layout->frame_previous, 8);
  EXPECT_EQ(layout->frame_code, 0);
  EXPECT_EQ(layout->frame_instruction, 56);
  EXPECT_EQ(layout->frame_marker, 70);
  EXPECT_EQ(layout->instruction, InstructionField::kInstructionPointer);
  EXPECT_EQ(layout->code_name, 128);
  EXPECT_EQ(layout->code_units, 200);
  EXPECT_EQ(layout->str_ascii_size, 40);
  EXPECT_EQ(layout->str_compact_size, 56);
}

TEST(DebugOffsetsTest, RejectsWhatItCannotTrust) {
  DebugOffsets313 bad_cookie;
  bad_cookie.fields[0] = 0;
  EXPECT_FALSE(layout_from_debug_offsets_313(&bad_cookie).has_value());

  DebugOffsets313 free_threaded;
  free_threaded.fields[2] = 1;
  EXPECT_FALSE(layout_from_debug_offsets_313(&free_threaded).has_value());

  DebugOffsets313 other_version;
  other_version.fields[1] = 0x030E00A1;  // 3.14
  EXPECT_FALSE(layout_from_debug_offsets_313(&other_version).has_value());

  DebugOffsets313 implausible;
  implausible.fields[31] = uint64_t{1} << 40;
  EXPECT_FALSE(layout_from_debug_offsets_313(&implausible).has_value());

  DebugOffsets313 missing;
  missing.fields[35] = 0;
  EXPECT_FALSE(layout_from_debug_offsets_313(&missing).has_value());
}

}  // namespace
}  // namespace vramshim::python
