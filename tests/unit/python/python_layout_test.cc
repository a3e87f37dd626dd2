#include "shim/python/python_layout.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "shim/python/debug_offsets.h"
#include "tests/unit/python/fake_debug_offsets.h"

namespace vramshim::python {
namespace {

using testing::FakeDebugOffsets;

TEST(PythonLayoutTest, KnowsTheSupportedVersions) {
  for (int minor : {10, 11, 12}) {
    const auto layout = layout_for({3, minor, 0}, nullptr);
    ASSERT_TRUE(layout.has_value()) << minor;
    EXPECT_EQ(layout->version.minor, minor);
  }
  EXPECT_EQ(layout_for({3, 10, 0}, nullptr)->marker, EvalCallMarker::kEveryFrame);
  EXPECT_EQ(layout_for({3, 11, 0}, nullptr)->marker, EvalCallMarker::kIsEntryFlag);
  EXPECT_EQ(layout_for({3, 12, 0}, nullptr)->marker, EvalCallMarker::kEntryFrame);
  EXPECT_EQ(layout_for({3, 12, 0}, nullptr)->frame_code_tag_bits, 0u);
  for (int minor : {13, 14, 15}) {
    const FakeDebugOffsets offsets(minor);
    const auto layout = layout_for({3, minor, 1}, offsets.runtime());
    ASSERT_TRUE(layout.has_value()) << minor;
    EXPECT_EQ(layout->version.minor, minor);
  }
}

TEST(PythonLayoutTest, UnknownVersionsHaveNoLayout) {
  EXPECT_FALSE(layout_for({3, 9, 18}, nullptr).has_value());
  EXPECT_FALSE(layout_for({3, 16, 0}, nullptr).has_value());
  EXPECT_FALSE(layout_for({2, 7, 18}, nullptr).has_value());
  EXPECT_FALSE(layout_for({}, nullptr).has_value());
  for (int minor : {13, 14, 15}) {
    EXPECT_FALSE(layout_for({3, minor, 0}, nullptr).has_value()) << "needs its debug offsets";
  }
}

TEST(DebugOffsetsTest, Reads313Offsets) {
  const FakeDebugOffsets offsets(13);
  const auto layout = layout_from_debug_offsets(offsets.runtime(), 13);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->version.minor, 13);
  EXPECT_EQ(layout->thread_cframe, -1);
  EXPECT_EQ(layout->cframe_current_frame, 72);
  EXPECT_EQ(layout->frame_previous, 8);
  EXPECT_EQ(layout->frame_code, 0);
  EXPECT_EQ(layout->frame_code_tag_bits, 0u) << "f_executable is a plain PyObject*";
  EXPECT_EQ(layout->frame_instruction, 56);
  EXPECT_EQ(layout->frame_marker, 70);
  EXPECT_EQ(layout->marker, EvalCallMarker::kEntryFrame);
  EXPECT_EQ(layout->entry_frame_owner, 3) << "FRAME_OWNED_BY_CSTACK";
  EXPECT_EQ(layout->instruction, InstructionField::kInstructionPointer);
  EXPECT_EQ(layout->code_name, 128);
  EXPECT_EQ(layout->code_units, 200);
  EXPECT_EQ(layout->str_ascii_size, 40);
  EXPECT_EQ(layout->str_compact_size, 56);
}

TEST(DebugOffsetsTest, Reads314And315Offsets) {
  for (int minor : {14, 15}) {
    SCOPED_TRACE(minor);
    const FakeDebugOffsets offsets(minor);
    const auto layout = layout_from_debug_offsets(offsets.runtime(), minor);
    ASSERT_TRUE(layout.has_value());
    EXPECT_EQ(layout->version.minor, minor);
    EXPECT_EQ(layout->thread_cframe, -1);
    EXPECT_EQ(layout->cframe_current_frame, 72);
    EXPECT_EQ(layout->frame_previous, 8);
    EXPECT_EQ(layout->frame_code, 0);
    EXPECT_EQ(layout->frame_code_tag_bits, 1u) << "Py_TAG_REFCNT of a _PyStackRef";
    EXPECT_EQ(layout->frame_instruction, 56);
    EXPECT_EQ(layout->frame_marker, 74);
    EXPECT_EQ(layout->marker, EvalCallMarker::kEntryFrame);
    EXPECT_EQ(layout->entry_frame_owner, 3) << "FRAME_OWNED_BY_INTERPRETER";
    EXPECT_EQ(layout->code_filename, 112);
    EXPECT_EQ(layout->code_name, 128);
    EXPECT_EQ(layout->code_linetable, 136);
    EXPECT_EQ(layout->code_firstlineno, 68);
    EXPECT_EQ(layout->code_units, 208);
    EXPECT_EQ(layout->bytes_size, 16);
    EXPECT_EQ(layout->bytes_data, 32);
    EXPECT_EQ(layout->str_state, 32);
    EXPECT_EQ(layout->str_length, 16);
    EXPECT_EQ(layout->str_ascii_size, 40);
    EXPECT_EQ(layout->str_compact_size, 56);
  }
}

TEST(DebugOffsetsTest, Uses315sOwnCompactStrSize) {
  FakeDebugOffsets offsets(15);
  offsets["unicode_object.compactunicodeobject_size"] = 64;
  EXPECT_EQ(layout_from_debug_offsets(offsets.runtime(), 15)->str_compact_size, 64);
  offsets["unicode_object.compactunicodeobject_size"] = 40;  // not past PyASCIIObject
  EXPECT_FALSE(layout_from_debug_offsets(offsets.runtime(), 15).has_value());
}

TEST(DebugOffsetsTest, RejectsWhatItCannotTrust) {
  for (int minor : {13, 14, 15}) {
    SCOPED_TRACE(minor);
    const auto rejects = [minor](const char* field, uint64_t value) {
      FakeDebugOffsets offsets(minor);
      offsets[field] = value;
      return !layout_from_debug_offsets(offsets.runtime(), minor).has_value();
    };
    EXPECT_TRUE(rejects("cookie", 0));
    EXPECT_TRUE(rejects("free_threaded", 1));
    EXPECT_TRUE(rejects("version", 0x030C0AF0)) << "3.12";
    EXPECT_TRUE(rejects("version", 0x031000A1)) << "3.16";
    EXPECT_TRUE(rejects("version", 0x030000A1 | (minor << 16))) << "an alpha";
    EXPECT_TRUE(rejects("version", 0x030000C2 | (minor << 16))) << "a release candidate";
    EXPECT_TRUE(rejects("interpreter_frame.previous", 16)) << "a field before previous";
    EXPECT_TRUE(rejects("pyobject.ob_type", 16)) << "the header of a free-threaded build";
    EXPECT_TRUE(rejects("interpreter_frame.instr_ptr", uint64_t{1} << 40));
    EXPECT_TRUE(rejects("interpreter_frame.executable", 8));
    EXPECT_TRUE(rejects("code_object.filename", 0));
  }
  // The offsets of one version read as another's: the version field disagrees.
  const FakeDebugOffsets offsets_314(14);
  EXPECT_FALSE(layout_from_debug_offsets(offsets_314.runtime(), 15).has_value());
  EXPECT_FALSE(layout_from_debug_offsets(offsets_314.runtime(), 13).has_value());
  EXPECT_FALSE(layout_from_debug_offsets(offsets_314.runtime(), 12).has_value());
}

// A version's offsets read as a later version's, whose struct is longer, with nothing readable
// after them: only the header is read before the version disagrees.
TEST(DebugOffsetsTest, ReadsNoFurtherThanTheVersionsStructBeforeTheVersionMatches) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mapping =
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  char* const guard = static_cast<char*>(mapping) + page;
  ASSERT_EQ(mprotect(guard, page, PROT_NONE), 0);
  for (int minor : {13, 14}) {
    SCOPED_TRACE(minor);
    const FakeDebugOffsets offsets(minor);
    char* const end_of_page = guard - offsets.bytes();
    std::memcpy(end_of_page, offsets.runtime(), offsets.bytes());
    ASSERT_TRUE(layout_from_debug_offsets(end_of_page, minor).has_value());
    EXPECT_FALSE(layout_from_debug_offsets(end_of_page, 15).has_value());
  }
  munmap(mapping, 2 * page);
}

}  // namespace
}  // namespace vramshim::python
