#include "shim/support/owned_descriptor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace vramshim::support {
namespace {

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// The program's opens take the lowest free number: the shim's descriptors wait far above them,
// close-on-exec, under the open-files limit.
TEST(OwnedDescriptor, IsMovedOutOfTheWayOfTheProgramsOpens) {
  const int fd = open_null();
  ASSERT_GE(fd, 0);
  OwnedDescriptor descriptor = OwnedDescriptor::adopt(fd);
  ASSERT_FALSE(descriptor.empty());
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur >= 256) {
    EXPECT_GE(descriptor.fd(), 128);
  }
  EXPECT_LT(static_cast<rlim_t>(descriptor.fd()), limit.rlim_cur);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "the low number is given back";
  EXPECT_EQ(::fcntl(descriptor.fd(), F_GETFD), FD_CLOEXEC);
  EXPECT_TRUE(descriptor.still_ours());
  descriptor.close();
  EXPECT_TRUE(descriptor.empty());
}

// Closed by the program and its number reused for a file of the program's: not the shim's any
// more, and never closed by it.
TEST(OwnedDescriptor, AReusedNumberIsNotOursAndIsLeftOpen) {
  OwnedDescriptor descriptor = OwnedDescriptor::adopt(open_null());
  ASSERT_FALSE(descriptor.empty());
  const int number = descriptor.fd();
  ::close(number);
  EXPECT_FALSE(descriptor.still_ours());
  std::FILE* programs = std::tmpfile();
  ASSERT_NE(programs, nullptr);
  ASSERT_EQ(::dup2(::fileno(programs), number), number);
  EXPECT_FALSE(descriptor.still_ours());
  descriptor.close();
  EXPECT_NE(::fcntl(number, F_GETFD), -1) << "the program's file was closed";
  ::close(number);
  std::fclose(programs);
}

// A program that closed the shim's numbers may dup2 files of its own there next (putting its
// descriptors back where they were): a new descriptor of the shim's made meanwhile goes elsewhere,
// or the program's dup2 would put its file in the shim's place, to be written into.
TEST(OwnedDescriptor, ANumberTheProgramClosedIsNotTheShimsNextOne) {
  OwnedDescriptor first = OwnedDescriptor::adopt(open_null());
  ASSERT_FALSE(first.empty());
  const int closed_by_the_program = first.fd();
  ::close(closed_by_the_program);
  OwnedDescriptor second = OwnedDescriptor::adopt(open_null());
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second.fd(), closed_by_the_program);
  EXPECT_EQ(::fcntl(closed_by_the_program, F_GETFD), -1) << "left free for the program";
  // A number the shim closed itself is free for its next descriptor.
  const int closed_by_the_shim = second.fd();
  second.close();
  OwnedDescriptor third = OwnedDescriptor::adopt(open_null());
  EXPECT_EQ(third.fd(), closed_by_the_shim);
  third.close();
}

// Once the program took every number of the shim's range, the shim still gets a descriptor.
TEST(OwnedDescriptor, ADescriptorIsMadeWhenTheProgramTookEveryHighNumber) {
  for (int i = 0; i < 80; ++i) {
    OwnedDescriptor taken = OwnedDescriptor::adopt(open_null());
    ASSERT_FALSE(taken.empty());
    ::close(taken.fd());
  }
  OwnedDescriptor descriptor = OwnedDescriptor::adopt(open_null());
  ASSERT_FALSE(descriptor.empty());
  EXPECT_TRUE(descriptor.still_ours());
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_LT(static_cast<rlim_t>(descriptor.fd()), std::min<rlim_t>(limit.rlim_cur, 1024));
  descriptor.close();
}

TEST(OwnedDescriptor, RecognizesADescriptorWhereItIs) {
  const int fd = open_null();
  const OwnedDescriptor descriptor = OwnedDescriptor::recognize(fd);
  EXPECT_EQ(descriptor.fd(), fd);
  EXPECT_TRUE(descriptor.still_ours());
  ::close(fd);
  EXPECT_FALSE(descriptor.still_ours());
  EXPECT_TRUE(OwnedDescriptor::recognize(fd).empty());
  EXPECT_TRUE(OwnedDescriptor::adopt(-1).empty());
}

}  // namespace
}  // namespace vramshim::support
