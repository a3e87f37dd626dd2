// live::shimmed_sockets() as root: every user's socket directories are found, each checked for the
// uid it belongs to, whatever the uid (SSSD and AD hand out ten-digit ones) and whatever root's own
// environment names; a user whose listing is cut is named; a collection removes a user's stale
// socket; and the one spelling of a uid in a directory's name.
#include "analyzer/live/shimmed_sockets.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory_names.h"
#include "analyzer/live/collection.h"
#include "shim/control/socket_path.h"

namespace vramshim::live {
namespace {

// Another user that made a directory first (nobody).
constexpr uid_t kSquatter = 65534;

class ShimmedSocketsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to act for other users";
  }
  void TearDown() override {
    for (auto made = made_.rbegin(); made != made_.rend(); ++made) {
      std::system(("rm -rf '" + *made + "'").c_str());
    }
  }

  // A directory at `path` of `owner`, with `mode`, removed after the test.
  void make_directory(const std::string& path, uid_t owner, mode_t mode = 0700) {
    ASSERT_EQ(::mkdir(path.c_str(), mode), 0) << path;
    made_.push_back(path);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    ASSERT_EQ(::chown(path.c_str(), owner, owner), 0);
  }

  // DIRECTORY/PID.sock, a socket of `owner` (nobody listens on it: shimmed_sockets() only lists).
  static void make_socket(const std::string& directory, pid_t pid, uid_t owner) {
    const std::string path = directory + "/" + std::to_string(pid) + ".sock";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << path;
    ::close(fd);
    ASSERT_EQ(::chown(path.c_str(), owner, owner), 0);
  }

  std::vector<std::string> made_;
};

bool lists(const std::vector<cli::SocketEntry>& sockets, const std::string& path, uid_t owner) {
  return std::any_of(sockets.begin(), sockets.end(), [&](const cli::SocketEntry& socket) {
    return socket.path == path && socket.owner == owner;
  });
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST_F(ShimmedSocketsTest, RootFindsTheSocketsOfUsersWithTenDigitUids) {
  const uid_t user = 1500000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string directory = "/tmp/vramshim-" + std::to_string(user);
  make_directory(directory, user);
  make_socket(directory, 4711, user);
  std::vector<std::string> refused;
  const std::vector<cli::SocketEntry> sockets = shimmed_sockets("", &refused);
  EXPECT_TRUE(lists(sockets, directory + "/4711.sock", user)) << joined(refused);
}

// A directory's name gives the uid it is checked for, spelt as the shim spells it: the highest uid
// (4294967294; 4294967295 is (uid_t)-1, no user) is a user's, and no other spelling of a number is.
TEST(SocketDirectoryNamesTest, OnlyTheShimsSpellingOfAUidIsOne) {
  EXPECT_EQ(control::uid_from_digits("0"), 0u);
  EXPECT_EQ(control::uid_from_digits("1500000001"), 1500000001u);
  EXPECT_EQ(control::uid_from_digits("4294967294"), 4294967294u);
  for (const char* not_uid : {"", "4294967295", "4294967296", "18446744073709551617", "099999",
                              "+99999", "-99999", " 99999", "99999 ", "99999x", "0x1869f"}) {
    EXPECT_EQ(control::uid_from_digits(not_uid), std::nullopt) << not_uid;
  }
}

// Root's XDG_RUNTIME_DIR may name another user's runtime directory (after `su` without `-`): that
// directory is refused as root's, and still searched as its owner's.
TEST_F(ShimmedSocketsTest, AnotherUsersRuntimeDirectoryInRootsEnvironmentIsStillThatUsers) {
  const uid_t user = 400000000 + static_cast<uid_t>(::getpid() % 100000);
  struct stat parent;
  if (::stat("/run/user", &parent) != 0) make_directory("/run/user", 0, 0755);
  const std::string runtime = "/run/user/" + std::to_string(user);
  make_directory(runtime, user);
  make_directory(runtime + "/vramshim", user);
  make_socket(runtime + "/vramshim", 4712, user);
  const char* saved = std::getenv("XDG_RUNTIME_DIR");
  const std::string restored = saved != nullptr ? saved : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  std::vector<std::string> refused;
  const std::vector<cli::SocketEntry> sockets = shimmed_sockets("", &refused);
  if (saved != nullptr) {
    ::setenv("XDG_RUNTIME_DIR", restored.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
  EXPECT_TRUE(lists(sockets, runtime + "/vramshim/4712.sock", user)) << joined(refused);
  EXPECT_NE(joined(refused).find(runtime + "/vramshim is owned by uid " + std::to_string(user) +
                                 ", not 0; its sockets are ignored\n"),
            std::string::npos)
      << joined(refused);
}

// Another user made /tmp/vramshim-UID first, so the user's processes put their sockets in
// directories /tmp/vramshim-UID.XXXXXX of their own (mkdtemp): root finds them there, and trusts
// no such directory of anyone else.
TEST_F(ShimmedSocketsTest, RootFindsTheSocketsInAUsersOwnDirectoryWhenAnotherTookTheDefault) {
  const uid_t user = 410000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string taken = "/tmp/vramshim-" + std::to_string(user);
  make_directory(taken, kSquatter);
  const std::string own = taken + ".Ab12Cd";
  make_directory(own, user);
  make_socket(own, 4713, user);
  const std::string planted = taken + ".aaaaaa";
  make_directory(planted, kSquatter);
  make_socket(planted, 4714, kSquatter);
  std::vector<std::string> refused;
  const std::vector<cli::SocketEntry> sockets = shimmed_sockets("", &refused);
  const std::string refusals = joined(refused);
  EXPECT_TRUE(lists(sockets, own + "/4713.sock", user)) << refusals;
  for (const std::string& directory : {taken, planted}) {
    EXPECT_NE(refusals.find(directory + " is owned by uid 65534, not " + std::to_string(user) +
                            "; its sockets are ignored\n"),
              std::string::npos)
        << refusals;
  }
  EXPECT_FALSE(lists(sockets, planted + "/4714.sock", kSquatter)) << refusals;
}

// A user's process killed by SIGKILL (or the OOM killer) leaves its socket file: root's
// collections (the exporter's, top's, stats --all's) remove it, as ps would, rather than asking it
// and counting it as gone at every collection; the user's live process is collected.
TEST_F(ShimmedSocketsTest, RootsCollectionRemovesAUsersStaleSocket) {
  const uid_t user = 420000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string directory = "/tmp/vramshim-" + std::to_string(user);
  make_directory(directory, user);
  make_socket(directory, 4715, user);
  std::vector<std::string> refused;
  CollectOptions options;
  options.budget_ms = 500;
  const Collection first = collect(shimmed_sockets("", &refused), options);
  EXPECT_EQ(first.skipped.at(user)[static_cast<size_t>(Skipped::kGone)], 1u) << joined(refused);
  struct stat info;
  EXPECT_NE(::lstat((directory + "/4715.sock").c_str(), &info), 0) << "the stale socket stays";
  const Collection second = collect(shimmed_sockets("", &refused), options);
  EXPECT_EQ(second.skipped.count(user), 0u);
}

// More names PID.sock in a user's directories than are looked at: the user is named as cut, so
// that the processes not asked are not taken for none.
TEST_F(ShimmedSocketsTest, AUserWhoseListingIsCutIsNamed) {
  const uid_t user = 430000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string directory = "/tmp/vramshim-" + std::to_string(user);
  make_directory(directory, user);
  for (size_t pid = 1; pid <= cli::SocketDirectory::kMaxListed + 1; ++pid) {
    const std::string path = directory + "/" + std::to_string(pid) + ".sock";
    ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0) << path;
    ASSERT_EQ(::chown(path.c_str(), user, user), 0);
  }
  std::vector<std::string> refused;
  std::set<uid_t> cut;
  shimmed_sockets("", &refused, &cut);
  EXPECT_EQ(cut.count(user), 1u) << joined(refused);
  EXPECT_EQ(cut.count(0), 0u);
}

// Anyone may make names /tmp/vramshim-UID.* for any uid: directories refused for a user are told in
// a few lines, not one each (50,000 made root's `ps` print 50,001 lines and, looked up in a list,
// take 28 s at 100,000), and a real directory of the user's beside them is still found.
TEST_F(ShimmedSocketsTest, DirectoriesMadeForAnotherUserAreToldInAFewLines) {
  const uid_t user = 440000000 + static_cast<uid_t>(::getpid() % 100000);
  const std::string prefix = "/tmp/vramshim-" + std::to_string(user) + ".";
  for (int i = 0; i < 50; ++i) {
    char suffix[8];
    std::snprintf(suffix, sizeof(suffix), "d%05d", i);
    make_directory(prefix + suffix, kSquatter);
  }
  make_directory(prefix + "zzzzzz", user);
  make_socket(prefix + "zzzzzz", 4717, user);
  std::vector<std::string> refused;
  const std::vector<cli::SocketEntry> sockets = shimmed_sockets("", &refused);
  EXPECT_TRUE(lists(sockets, prefix + "zzzzzz/4717.sock", user)) << joined(refused);
  const auto about_user = std::count_if(
      refused.begin(), refused.end(),
      [&](const std::string& line) { return line.find(prefix) != std::string::npos; });
  EXPECT_EQ(about_user, 3) << joined(refused);
  EXPECT_NE(joined(refused).find("47 more directories for uid " + std::to_string(user) +
                                 " were refused too; their sockets are ignored\n"),
            std::string::npos)
      << joined(refused);
}

}  // namespace
}  // namespace vramshim::live
