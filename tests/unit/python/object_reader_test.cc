#include "shim/python/object_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace vramshim::python {
namespace {

constexpr uint32_t kCompact = 1u << 5;
constexpr uint32_t kAscii = 1u << 6;
uint32_t kind(uint32_t k) { return k << 2; }

// A str object laid out as 3.12 lays it out, in 8-byte aligned storage.
class StrObject {
 public:
  StrObject(const PythonLayout& layout, int64_t length, uint32_t state, const void* data,
            size_t data_bytes, bool ascii)
      : storage_((layout.str_compact_size + data_bytes + 16) / 8 + 1, 0) {
    std::memcpy(bytes() + layout.str_length, &length, sizeof(length));
    std::memcpy(bytes() + layout.str_state, &state, sizeof(state));
    const int32_t data_at = ascii ? layout.str_ascii_size : layout.str_compact_size;
    std::memcpy(bytes() + data_at, data, data_bytes);
  }
  void set_utf8(const PythonLayout& layout, const char* utf8, int64_t size) {
    std::memcpy(bytes() + layout.str_ascii_size, &size, sizeof(size));
    std::memcpy(bytes() + layout.str_ascii_size + 8, &utf8, sizeof(utf8));
  }
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(storage_.data()); }

 private:
  char* bytes() { return reinterpret_cast<char*>(storage_.data()); }
  std::vector<uint64_t> storage_;
};

class ObjectReaderTest : public ::testing::Test {
 protected:
  const PythonLayout layout_ = *layout_for({3, 12, 0}, nullptr);
};

TEST_F(ObjectReaderTest, ReadsAsciiStrings) {
  const StrObject str(layout_, 8, kind(1) | kCompact | kAscii, "train.py", 8, true);
  EXPECT_EQ(read_str(layout_, str.address()), "train.py");
  EXPECT_EQ(read_str(layout_, str.address(), 5), "train");
}

TEST_F(ObjectReaderTest, ConvertsOneTwoAndFourByteKindsToUtf8) {
  const uint8_t latin1[] = {'g', 0xF6, 0xDF, 'e'};  // "göße"
  const StrObject one(layout_, 4, kind(1) | kCompact, latin1, sizeof(latin1), false);
  EXPECT_EQ(read_str(layout_, one.address()),
            "g\xC3\xB6\xC3\x9F"
            "e");

  const uint16_t ucs2[] = {0x5B66, 0x7FD2};  // "学習"
  const StrObject two(layout_, 2, kind(2) | kCompact, ucs2, sizeof(ucs2), false);
  EXPECT_EQ(read_str(layout_, two.address()), "\xE5\xAD\xA6\xE7\xBF\x92");

  const uint32_t ucs4[] = {0x1F525};  // an emoji
  const StrObject four(layout_, 1, kind(4) | kCompact, ucs4, sizeof(ucs4), false);
  EXPECT_EQ(read_str(layout_, four.address()), "\xF0\x9F\x94\xA5");
}

TEST_F(ObjectReaderTest, PrefersTheCachedUtf8Copy) {
  const uint16_t ucs2[] = {0x5B66};
  StrObject str(layout_, 1, kind(2) | kCompact, ucs2, sizeof(ucs2), false);
  static const char kCached[] = "cached";
  str.set_utf8(layout_, kCached, 6);
  EXPECT_EQ(read_str(layout_, str.address()), "cached");
}

TEST_F(ObjectReaderTest, UnreadableStringsBecomeAQuestionMark) {
  EXPECT_EQ(read_str(layout_, 0), "?");
  EXPECT_EQ(read_str(layout_, 12), "?");
  const StrObject legacy(layout_, 3, kind(1), "abc", 3, true);  // not compact
  EXPECT_EQ(read_str(layout_, legacy.address()), "?");
  const StrObject negative(layout_, -1, kind(1) | kCompact | kAscii, "", 0, true);
  EXPECT_EQ(read_str(layout_, negative.address()), "?");
}

TEST_F(ObjectReaderTest, BytesObjectsAreBoundedBySize) {
  std::vector<uint64_t> storage(8, 0);
  const auto bytes = reinterpret_cast<uintptr_t>(storage.data());
  const int64_t size = 5;
  std::memcpy(reinterpret_cast<void*>(bytes + layout_.bytes_size), &size, sizeof(size));
  EXPECT_EQ(read_bytes(layout_, bytes, 16).size, 5u);
  EXPECT_EQ(read_bytes(layout_, bytes, 16).data,
            reinterpret_cast<const uint8_t*>(bytes + layout_.bytes_data));
  EXPECT_EQ(read_bytes(layout_, bytes, 4).size, 0u) << "over the caller's bound";
  EXPECT_EQ(read_bytes(layout_, 0, 16).size, 0u);
}

}  // namespace
}  // namespace vramshim::python
