#include "shim/support/room_for_one_more.h"

#include <gtest/gtest.h>

#include <vector>

namespace vramshim::support {
namespace {

// The tables of sites, rings and caches grow one element at a time, with room made first: exact
// growth would copy the whole table at every new element (200,000 new sites took 27 s, 0.56 s now).
TEST(RoomForOneMore, GrowsTheCapacityGeometrically) {
  std::vector<int> values;
  int reallocations = 0;
  for (int i = 0; i < 100000; ++i) {
    const size_t capacity = values.capacity();
    make_room_for_one_more(values);
    if (values.capacity() != capacity) ++reallocations;
    ASSERT_GT(values.capacity(), values.size());
    values.push_back(i);
  }
  EXPECT_LE(reallocations, 14);
}

TEST(RoomForOneMore, LeavesRoomThatIsThereAlone) {
  std::vector<int> values;
  values.reserve(10);
  const int* data = values.data();
  make_room_for_one_more(values);
  EXPECT_EQ(values.capacity(), 10u);
  EXPECT_EQ(values.data(), data);
}

}  // namespace
}  // namespace vramshim::support
