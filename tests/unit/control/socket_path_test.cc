// Where processes put their control sockets: one name per directory, however XDG_RUNTIME_DIR is
// spelled, so that the CLI (which tells directories apart by name) looks in each once.
#include "shim/control/socket_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

namespace vramshim::control {
namespace {

TEST(SocketPathTest, ATrailingSlashOfTheRuntimeDirectoryNamesTheSameDirectory) {
  EXPECT_EQ(default_socket_directory("/run/user/0", 0), "/run/user/0/vramshim");
  EXPECT_EQ(default_socket_directory("/run/user/0/", 0), "/run/user/0/vramshim");
  EXPECT_EQ(default_socket_directory("/run/user/0//", 0), "/run/user/0/vramshim");
  EXPECT_EQ(socket_directories("/run/user/7/", 7),
            (std::vector<std::string>{"/run/user/7/vramshim", "/tmp/vramshim-7"}));
  EXPECT_EQ(default_socket_directory("", 7), "/tmp/vramshim-7");
}

// A process whose default directory another user took makes /tmp/vramshim-UID.XXXXXX; the others
// of that user (the out-of-memory explanation asks them) find it by name, and only theirs.
TEST(SocketPathTest, TheFallbackDirectoriesOfAUserAreFoundByName) {
  char parent_template[] = "/tmp/socket-path-test.XXXXXX";
  const std::string parent = ::mkdtemp(parent_template);
  for (const char* name : {"vramshim-7.a1B2c3", "vramshim-7.zzzzzz", "vramshim-7.short",
                           "vramshim-70.a1B2c3", "vramshim-7.a1B2c3d", "vramshim-7", "other"}) {
    ASSERT_EQ(::mkdir((parent + "/" + name).c_str(), 0700), 0) << name;
  }
  std::vector<std::string> found = fallback_socket_directories(7, parent);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<std::string>{parent + "/vramshim-7.a1B2c3",
                                             parent + "/vramshim-7.zzzzzz"}));
  EXPECT_TRUE(fallback_socket_directories(7, parent + "/missing").empty());
  std::string made_error;
  const std::string made = make_fallback_socket_directory(::geteuid(), &made_error);
  ASSERT_FALSE(made.empty()) << made_error;
  const std::vector<std::string> ours = fallback_socket_directories(::geteuid());
  EXPECT_NE(std::find(ours.begin(), ours.end(), made), ours.end()) << made;
  ::rmdir(made.c_str());
  std::system(("rm -rf " + parent).c_str());
}

}  // namespace
}  // namespace vramshim::control
