// Where and how a report lands when other users share the directories on its way: a root job
// never writes through another user's link, and a report is
// never readable by more people than the file it replaces (tests run as root; uid 12345 is the
// other user).
#include "shim/report/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/report/report_test_support.h"

namespace vramshim::report {
namespace {

constexpr uid_t kOtherUser = 12345;

// Writes "report" atomically to `path`; the error, empty on success.
std::string write_at(const std::string& path, NewFileReaders readers = NewFileReaders::kEveryone) {
  AtomicFile file(path, readers);
  if (!file.error().empty()) return file.error();
  file.append("report");
  return file.commit();
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct stat status_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(lstat(path.c_str(), &info), 0) << path;
  return info;
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

TEST(AtomicFile, ALinkOfAnotherUserOnTheWayIsNotFollowed) {
  const std::string directory = make_test_directory();
  const std::string victim = directory + "/victim";
  ASSERT_EQ(mkdir(victim.c_str(), 0755), 0);
  write_file(victim + "/report.json", "precious", 0644);
  const std::string link = directory + "/reports";
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(lchown(link.c_str(), kOtherUser, kOtherUser), 0);

  EXPECT_NE(write_at(link + "/report.json").find("refused"), std::string::npos);
  EXPECT_NE(write_at(link + "/sub/../report.json").find("refused"), std::string::npos);
  EXPECT_EQ(contents(victim + "/report.json"), "precious");
  EXPECT_EQ(list_directory(victim).size(), 1u);
}

// A root job in a container writing into a directory bind-mounted from a user's home: the
// directory is the user's, and the report is made in it through the checked descriptor.
TEST(AtomicFile, ADirectoryOfAnotherUserIsWrittenInto) {
  const std::string directory = make_test_directory();
  const std::string theirs = directory + "/theirs";
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), kOtherUser, kOtherUser), 0);

  EXPECT_EQ(write_at(theirs + "/report.json"), "");
  EXPECT_EQ(contents(theirs + "/report.json"), "report");
}

TEST(AtomicFile, LinksOfRootAndOfTheUserAreFollowed) {
  const std::string directory = make_test_directory();
  const std::string data = directory + "/data";
  ASSERT_EQ(mkdir(data.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((data + "/home").c_str(), 0755), 0);
  // An absolute link to a relative one, as /home -> /data/home and a scratch link within it.
  ASSERT_EQ(symlink(data.c_str(), (directory + "/mnt").c_str()), 0);
  ASSERT_EQ(symlink("home", (data + "/scratch").c_str()), 0);
  // Directories of another user's on the way (their home) are walked through.
  ASSERT_EQ(chown((data + "/home").c_str(), kOtherUser, kOtherUser), 0);
  ASSERT_EQ(mkdir((data + "/home/mine").c_str(), 0755), 0);

  EXPECT_EQ(write_at(directory + "/mnt/scratch/mine/report.json"), "");
  EXPECT_EQ(contents(data + "/home/mine/report.json"), "report");
}

TEST(AtomicFile, AReplacedFileKeepsItsReaders) {
  const std::string directory = make_test_directory();
  const std::string path = directory + "/keep.json";
  write_file(path, "old", 0600);
  EXPECT_EQ(write_at(path), "");
  EXPECT_EQ(contents(path), "report");
  EXPECT_EQ(status_of(path).st_mode & 0777, 0600u);
}

TEST(AtomicFile, AFilePlantedByAnotherUserNeitherBecomesTheirsNorWidensItsReaders) {
  const std::string directory = make_test_directory();
  const std::string path = directory + "/report.json";
  write_file(path, "planted", 0666);
  ASSERT_EQ(chown(path.c_str(), kOtherUser, kOtherUser), 0);
  ASSERT_EQ(write_at(path, NewFileReaders::kOwnerOnly), "");
  EXPECT_EQ(status_of(path).st_uid, 0u);
  EXPECT_EQ(status_of(path).st_mode & 0777, 0600u);
}

TEST(AtomicFile, ANewFileIsReadableByItsOwnerOnlyWhenAsked) {
  const std::string directory = make_test_directory();
  const mode_t old_umask = umask(022);
  EXPECT_EQ(write_at(directory + "/everyone.json"), "");
  EXPECT_EQ(write_at(directory + "/owner.json", NewFileReaders::kOwnerOnly), "");
  umask(old_umask);
  EXPECT_EQ(status_of(directory + "/everyone.json").st_mode & 0777, 0644u);
  EXPECT_EQ(status_of(directory + "/owner.json").st_mode & 0777, 0600u);
}

TEST(AtomicFile, ANameAsLongAsTheFileSystemAllowsIsWritten) {
  const std::string directory = make_test_directory();
  const std::string name = std::string(250, 'r') + ".json";
  ASSERT_EQ(write_at(directory + "/" + name), "");
  EXPECT_EQ(contents(directory + "/" + name), "report");
  EXPECT_EQ(list_directory(directory).size(), 1u);
}

}  // namespace
}  // namespace vramshim::report
