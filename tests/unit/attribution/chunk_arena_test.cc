#include "shim/attribution/chunk_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace vramshim::attribution {
namespace {

TEST(ChunkArena, RunsAreContiguousAndNeverMove) {
  ChunkArena<uint64_t, 16> arena;
  EXPECT_EQ(arena.allocated_bytes(), 0u);
  std::vector<uint64_t*> runs;
  for (uint64_t r = 0; r < 10; ++r) {
    uint64_t* run = arena.allocate(5);
    for (uint64_t i = 0; i < 5; ++i) run[i] = r * 5 + i;
    runs.push_back(run);
  }
  // Three runs of 5 fill a chunk of 16; the fourth starts the next one.
  EXPECT_EQ(arena.allocated_bytes(), 4 * 16 * sizeof(uint64_t));
  EXPECT_EQ(runs[1], runs[0] + 5);
  EXPECT_EQ(runs[2], runs[1] + 5);
  for (uint64_t r = 0; r < 10; ++r) {
    for (uint64_t i = 0; i < 5; ++i) ASSERT_EQ(runs[r][i], r * 5 + i);
  }
}

TEST(ChunkArena, ARunOfAWholeChunkFits) {
  ChunkArena<uint32_t, 8> arena;
  uint32_t* first = arena.allocate(1);
  uint32_t* whole = arena.allocate(8);
  EXPECT_NE(whole, first + 1);
  EXPECT_EQ(arena.allocated_bytes(), 2 * 8 * sizeof(uint32_t));
}

}  // namespace
}  // namespace vramshim::attribution
