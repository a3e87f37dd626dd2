// The shim's own threads, counted, and the look at whether only they are left.
#include "shim/support/own_threads.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>

#include "tests/support/open_descriptors.h"

namespace vramshim::support {
namespace {

using testing::open_descriptors;

TEST(OwnThreads, WhileTheMainThreadRunsThereIsMoreThanTheShimsThreads) {
  EXPECT_FALSE(only_own_threads_remain());
}

std::atomic<bool> g_ran{false};
void* note_run(void*) {
  const OwnThread own;
  g_ran = true;
  return nullptr;
}

TEST(OwnThreads, AnOwnThreadStartsDetached) {
  ASSERT_EQ(start_own_thread(&note_run, nullptr), 0);
  for (int i = 0; i < 1000 && !g_ran; ++i) usleep(1000);
  EXPECT_TRUE(g_ran);
}

// The look reads /proc/self/stat through a descriptor it keeps at a high number, and leaves a
// number the program took to the program: opened and closed at each look (every 100 ms), it took
// the lowest free number, which a program closing and reopening its descriptors could take
// meanwhile, and the shim then read and closed the program's file.
TEST(OwnThreads, TheLookKeepsOneHighDescriptorAndLeavesTheProgramsFileAlone) {
  for (int i = 0; i < 3; ++i) only_own_threads_remain();
  const std::string stat_path = "/proc/" + std::to_string(getpid()) + "/stat";
  std::set<int> stats, others;
  for (const int fd : open_descriptors()) {
    char target[256] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
    (length > 0 && stat_path == target ? stats : others).insert(fd);
  }
  ASSERT_EQ(stats.size(), 1u) << "one descriptor kept for all looks";
  const int fd = *stats.begin();
  EXPECT_GT(fd, *others.rbegin()) << "out of the way of the program's opens";

  // The program puts a file of its own at that number.
  char path[] = "/tmp/vramshim-own-threads-test-XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  ASSERT_EQ(write(file, "data", 4), 4);
  ASSERT_EQ(lseek(file, 0, SEEK_SET), 0);
  ASSERT_EQ(dup2(file, fd), fd);
  close(file);
  only_own_threads_remain();
  EXPECT_NE(fcntl(fd, F_GETFD), -1) << "the program's file was closed";
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0) << "the program's file was read";
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace vramshim::support
