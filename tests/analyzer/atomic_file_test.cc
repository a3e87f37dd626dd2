// write_file_atomically: the whole new file or the old one, never a write through a link.
#include "analyzer/files/atomic_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vramshim::analyzer {
namespace {

// A fresh directory for one test.
std::string fresh_directory(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  std::system(("rm -rf '" + path + "'").c_str());
  EXPECT_EQ(::mkdir(path.c_str(), 0700), 0) << path;
  return path;
}

std::string contents(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::set<std::string> names_in(const std::string& directory) {
  std::set<std::string> names;
  DIR* listing = ::opendir(directory.c_str());
  while (const dirent* entry = listing != nullptr ? ::readdir(listing) : nullptr) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  if (listing != nullptr) ::closedir(listing);
  return names;
}

TEST(AtomicFile, ReplacesALinkAtTheNameInsteadOfWritingThroughIt) {
  const std::string dir = fresh_directory("link");
  std::ofstream(dir + "/victim") << "precious";
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/out").c_str()), 0);
  const mode_t previous = ::umask(022);
  write_file_atomically(dir + "/out", [](std::ostream& out) { out << "new"; });
  ::umask(previous);
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_TRUE(S_ISREG(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  EXPECT_EQ(contents(dir + "/out"), "new");
  EXPECT_EQ(contents(dir + "/victim"), "precious");
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out", "victim"}));
}

TEST(AtomicFile, WritesMoreThanOneBufferFull) {
  const std::string dir = fresh_directory("large");
  const std::string line(1000, 'x');
  write_file_atomically(dir + "/out", [&](std::ostream& out) {
    for (int i = 0; i < 1000; ++i) out << line << '\n';
  });
  EXPECT_EQ(contents(dir + "/out").size(), 1001u * 1000u);
}

TEST(AtomicFile, AWriterThatThrowsLeavesTheOldFileAndNoTemporary) {
  const std::string dir = fresh_directory("throws");
  std::ofstream(dir + "/out") << "old";
  EXPECT_THROW(write_file_atomically(dir + "/out",
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("bad input");
                                     }),
               std::runtime_error);
  EXPECT_EQ(contents(dir + "/out"), "old");
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
}

TEST(AtomicFile, ANameThatCannotBeReplacedFailsWithoutATemporary) {
  const std::string dir = fresh_directory("directory");
  ASSERT_EQ(::mkdir((dir + "/out").c_str(), 0700), 0);
  try {
    write_file_atomically(dir + "/out", [](std::ostream& out) { out << "new"; });
    ADD_FAILURE() << "wrote over a directory";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/out: cannot write: Is a directory");
  }
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  EXPECT_THROW(write_file_atomically(dir + "/missing/out", [](std::ostream&) {}),
               std::runtime_error);
}

}  // namespace
}  // namespace vramshim::analyzer
