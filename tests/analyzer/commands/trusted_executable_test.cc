// Root runs another user's interpreter only by a path that user cannot change.
#include "analyzer/commands/trusted_executable.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace vramshim::cli {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// A new directory under $TEST_TMPDIR, 0755, owned by `owner`.
fs::path directory_of(uid_t owner) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/trustedXXXXXX";
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  EXPECT_EQ(::chmod(pattern.c_str(), 0755), 0);
  if (owner != ::geteuid()) EXPECT_EQ(::chown(pattern.c_str(), owner, static_cast<gid_t>(-1)), 0);
  return pattern;
}

const fs::path kSystemProgram = "/bin/true";

TEST(TrustedExecutable, ASystemProgramIsTrustedByItsResolvedPath) {
  const std::optional<std::string> trusted = trusted_executable(kSystemProgram);
  ASSERT_TRUE(trusted.has_value());
  EXPECT_EQ(*trusted, fs::canonical(kSystemProgram).string());
}

TEST(TrustedExecutable, AnotherUsersLinkToASystemProgramRunsTheProgramItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another user";
  const fs::path theirs = directory_of(kNobody);
  fs::create_symlink(kSystemProgram, theirs / "python3.14");
  // They may point the link elsewhere at any time: what runs is the file it named when checked.
  const std::optional<std::string> trusted = trusted_executable(theirs / "python3.14");
  ASSERT_TRUE(trusted.has_value());
  EXPECT_EQ(*trusted, fs::canonical(kSystemProgram).string());
}

TEST(TrustedExecutable, ARootOwnedFileInAnotherUsersDirectoryIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another user";
  // The file is root's and writable by no one else, but its directory's owner can replace it.
  const fs::path theirs = directory_of(kNobody);
  fs::copy_file(kSystemProgram, theirs / "python3.14");
  ASSERT_EQ(::chmod((theirs / "python3.14").c_str(), 0755), 0);
  EXPECT_FALSE(trusted_executable(theirs / "python3.14").has_value());
}

TEST(TrustedExecutable, AWritableDirectoryOnTheWayIsNotTrusted) {
  const fs::path open_to_all = directory_of(::geteuid());
  ASSERT_EQ(::chmod(open_to_all.c_str(), 0777), 0);
  fs::copy_file(kSystemProgram, open_to_all / "python3.14");
  ASSERT_EQ(::chmod((open_to_all / "python3.14").c_str(), 0755), 0);
  EXPECT_FALSE(trusted_executable(open_to_all / "python3.14").has_value());
}

TEST(TrustedExecutable, AStickyDirectoryLikeTmpKeepsOurFilesOurs) {
  const fs::path shared = directory_of(::geteuid());
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const fs::path mine = directory_of(::geteuid());
  const fs::path inside = shared / "mine";
  fs::rename(mine, inside);
  fs::copy_file(kSystemProgram, inside / "python3.14");
  ASSERT_EQ(::chmod((inside / "python3.14").c_str(), 0755), 0);
  EXPECT_TRUE(trusted_executable(inside / "python3.14").has_value());
}

TEST(TrustedProgramPath, AnotherUsersLinkToASystemProgramIsNotTrustedByItsOwnName) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another user";
  const fs::path theirs = directory_of(kNobody);
  fs::create_symlink(kSystemProgram, theirs / "python3");
  // Run by that name (a kernelspec's argv), it would run whatever they point it to later.
  EXPECT_FALSE(trusted_program_path(theirs / "python3").has_value());
}

TEST(TrustedProgramPath, ALinkOfOursIsTrustedByItsOwnNameThroughEveryHop) {
  const fs::path mine = directory_of(::geteuid());
  fs::create_symlink(kSystemProgram, mine / "python3");
  fs::create_symlink("python3", mine / "python");  // a relative hop, as a venv has
  const std::optional<std::string> trusted = trusted_program_path(mine / "python");
  ASSERT_TRUE(trusted.has_value());
  EXPECT_EQ(*trusted, (mine / "python").string());
}

TEST(TrustedProgramPath, AHopThroughAnotherUsersDirectoryIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another user";
  // Our link, to their link, to a system program: they may point the middle one elsewhere.
  const fs::path theirs = directory_of(kNobody);
  fs::create_symlink(kSystemProgram, theirs / "python3");
  const fs::path mine = directory_of(::geteuid());
  fs::create_symlink(theirs / "python3", mine / "python3");
  EXPECT_TRUE(trusted_executable(mine / "python3").has_value());  // its resolved path is safe
  EXPECT_FALSE(trusted_program_path(mine / "python3").has_value());
}

TEST(TrustedExecutable, MissingAndNonExecutableFilesAreNotTrusted) {
  EXPECT_FALSE(trusted_executable("/no/such/python3.14").has_value());
  const fs::path mine = directory_of(::geteuid());
  fs::create_directory(mine / "python3.14");
  EXPECT_FALSE(trusted_executable(mine / "python3.14").has_value());
}

}  // namespace
}  // namespace vramshim::cli
