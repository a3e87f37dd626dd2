// Where processes put their control sockets: one name per directory, however XDG_RUNTIME_DIR is
// spelled, so that the CLI (which tells directories apart by name) looks in each once.
#include "shim/control/socket_path.h"

#include <gtest/gtest.h>

namespace vramshim::control {
namespace {

TEST(SocketPathTest, ATrailingSlashOfTheRuntimeDirectoryNamesTheSameDirectory) {
  EXPECT_EQ(default_socket_directory("/run/user/0", 0), "/run/user/0/vramshim");
  EXPECT_EQ(default_socket_directory("/run/user/0/", 0), "/run/user/0/vramshim");
  EXPECT_EQ(default_socket_directory("/run/user/0//", 0), "/run/user/0/vramshim");
  EXPECT_EQ(default_socket_path("/run/user/0/", 0, 42), "/run/user/0/vramshim/42.sock");
  EXPECT_EQ(socket_directories("/run/user/7/", 7),
            (std::vector<std::string>{"/run/user/7/vramshim", "/tmp/vramshim-7"}));
  EXPECT_EQ(default_socket_directory("", 7), "/tmp/vramshim-7");
}

}  // namespace
}  // namespace vramshim::control
