// write_file_atomically: the whole new file or the old one, never a write through a link.
#include "analyzer/files/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
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

// The status of the temporary file next to `path` while it is being written.
struct stat temporary_status(const std::string& dir) {
  struct stat info {};
  for (const std::string& name : names_in(dir)) {
    if (name.find(".tmp.") != std::string::npos) {
      EXPECT_EQ(::lstat((dir + "/" + name).c_str(), &info), 0);
      return info;
    }
  }
  ADD_FAILURE() << "no temporary file in " << dir;
  return info;
}

TEST(AtomicFile, AReplacedFileKeepsItsPermissionsFromTheStart) {
  // chmod 600 out.json, then merge -o out.json: the data must not become readable by others, not
  // even while the new file is being written.
  const std::string dir = fresh_directory("mode");
  for (const mode_t mode : {0600, 0640, 0400, 0604}) {
    SCOPED_TRACE(mode);
    std::ofstream(dir + "/out") << "private";
    ASSERT_EQ(::chmod((dir + "/out").c_str(), mode), 0);
    const mode_t previous = ::umask(022);
    mode_t while_written = 0;
    write_file_atomically(dir + "/out", [&](std::ostream& out) {
      while_written = temporary_status(dir).st_mode & 07777;
      out << "new";
    });
    ::umask(previous);
    struct stat info;
    ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, mode);
    EXPECT_EQ(while_written, mode);
    EXPECT_EQ(contents(dir + "/out"), "new");
    EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  }
}

TEST(AtomicFile, ANewFileGetsTheUmasksMode) {
  const std::string dir = fresh_directory("new_mode");
  const mode_t previous = ::umask(027);
  write_file_atomically(dir + "/out", [](std::ostream& out) { out << "new"; });
  ::umask(previous);
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0640u);
}

TEST(AtomicFile, RootReplacingAnotherUsersFileLeavesItTheirs) {
  // bob's 0600 report in bob's directory rewritten by root's `html -o` stays bob's, and private.
  if (::geteuid() != 0) GTEST_SKIP() << "replacing another user's file as its owner needs root";
  const std::string dir = fresh_directory("owner");
  ASSERT_EQ(::chown(dir.c_str(), 12345, 23456), 0);
  std::ofstream(dir + "/out") << "bob's";
  ASSERT_EQ(::chown((dir + "/out").c_str(), 12345, 23456), 0);
  ASSERT_EQ(::chmod((dir + "/out").c_str(), 0600), 0);
  struct stat while_written {};
  write_file_atomically(dir + "/out", [&](std::ostream& out) {
    while_written = temporary_status(dir);
    out << "new";
  });
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 12345u);
  EXPECT_EQ(info.st_gid, 23456u);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_EQ(while_written.st_uid, 12345u);
  EXPECT_EQ(while_written.st_mode & 07777, 0600u);
  EXPECT_EQ(contents(dir + "/out"), "new");
}

TEST(AtomicFile, AFilePlantedInADirectoryOfSomeoneElsesDoesNotTakeRootsOutput) {
  // In a sticky directory of root's (/tmp), bob's file at the output's name: root's output stays
  // root's, no more readable than bob's file was, and no more readable or writable than a new
  // file of root's (bob's 0666 made root's page one bob could rewrite, whatever root's umask).
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  const std::string dir = fresh_directory("planted");
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  std::ofstream(dir + "/out") << "bob's";
  ASSERT_EQ(::chown((dir + "/out").c_str(), 12345, 23456), 0);
  ASSERT_EQ(::chmod((dir + "/out").c_str(), 0666), 0);
  const mode_t previous = ::umask(077);
  write_file_atomically(dir + "/out", [](std::ostream& out) { out << "root's"; });
  ::umask(previous);
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 0u);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_EQ(contents(dir + "/out"), "root's");
}

// Runs write_file_atomically(DIR/out) in a child that `signal_number` reaches in the middle of the
// write; its wait status.
int status_of_write_interrupted_by(const std::string& dir, int signal_number) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      write_file_atomically(dir + "/out", [&](std::ostream& out) {
        out << std::string(100000, 'x');
        ::raise(signal_number);
        out << "end";
      });
    } catch (...) {
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

TEST(AtomicFile, ASignalThatKillsTheWriterLeavesNoTemporary) {
  // Ctrl-C during `merge … -o out.html` left out.html.tmp.<hex> behind.
  const std::string dir = fresh_directory("interrupted");
  std::ofstream(dir + "/out") << "old";
  // SIGUSR2, SIGALRM, SIGXCPU (ulimit -t) and the real-time ones left it too.
  for (const int signal_number :
       {SIGINT, SIGTERM, SIGHUP, SIGUSR2, SIGALRM, SIGXCPU, SIGRTMIN + 3}) {
    SCOPED_TRACE(signal_number);
    const int status = status_of_write_interrupted_by(dir, signal_number);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << status;
    EXPECT_EQ(contents(dir + "/out"), "old");
    EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  }
}

TEST(AtomicFile, AnIgnoredSignalStaysIgnoredAndTheWriteCompletes) {
  // nohup: a hang-up must not stop the write, nor remove what is being written.
  const std::string dir = fresh_directory("ignored");
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGHUP, &ignore, &previous), 0);
  const int status = status_of_write_interrupted_by(dir, SIGHUP);
  ::sigaction(SIGHUP, &previous, nullptr);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(contents(dir + "/out"), std::string(100000, 'x') + "end");
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
}

TEST(AtomicFile, TheSignalsAreTheProcesssOwnAgainOnceTheFileIsWritten) {
  const std::string dir = fresh_directory("dispositions");
  write_file_atomically(dir + "/out", [](std::ostream& out) { out << "new"; });
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGUSR2, SIGXCPU, SIGRTMIN + 3}) {
    struct sigaction now {};
    ASSERT_EQ(::sigaction(signal_number, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, SIG_DFL) << signal_number;
  }
}

TEST(AtomicFile, ANameAsLongAsANameMayBeIsWritten) {
  // Its temporary, NAME.tmp.<16 hex digits>, was too long a name: every write failed.
  const std::string dir = fresh_directory("long_name");
  const std::string name(NAME_MAX, 'a');
  write_file_atomically(dir + "/" + name, [](std::ostream& out) { out << "new"; });
  EXPECT_EQ(contents(dir + "/" + name), "new");
  EXPECT_EQ(names_in(dir), (std::set<std::string>{name}));
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
    EXPECT_EQ(std::string(e.what()), dir + "/out: refused: not a regular file (a directory)");
  }
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  EXPECT_THROW(write_file_atomically(dir + "/missing/out", [](std::ostream&) {}),
               std::runtime_error);
}

// Reads what is written into the pipe at `path` until the writer closes it.
class PipeReader {
 public:
  explicit PipeReader(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {}
  ~PipeReader() { ::close(fd_); }
  std::string drain() {
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd_, buffer, sizeof buffer)) > 0) text.append(buffer, n);
    return text;
  }

 private:
  int fd_;
};

TEST(AtomicFile, APipeAtTheNameIsWrittenIntoNotReplaced) {
  const std::string dir = fresh_directory("pipe");
  ASSERT_EQ(::mkfifo((dir + "/out").c_str(), 0600), 0);
  {
    PipeReader reader(dir + "/out");
    write_file_atomically(dir + "/out", [](std::ostream& out) { out << "through"; });
    EXPECT_EQ(reader.drain(), "through");
  }
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  // Nobody reading: an error at once, not a wait for a reader.
  EXPECT_THROW(write_file_atomically(dir + "/out", [](std::ostream& out) { out << "x"; }),
               std::runtime_error);
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
}

TEST(AtomicFile, ACharacterDeviceAtTheNameStaysOne) {
  // `-o /dev/null` as root replaced the machine's /dev/null with a regular file.
  const std::string dir = fresh_directory("device");
  if (::mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "making a device node needs root";
  }
  write_file_atomically(dir + "/null", [](std::ostream& out) { out << "discarded"; });
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/null").c_str(), &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
  EXPECT_EQ(info.st_rdev, makedev(1, 3));
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"null"}));
}

TEST(AtomicFile, ALinkToAnythingButAFileIsRefusedAndLeftAlone) {
  // Followed, another user could point it elsewhere between a check and an open; replaced, a link
  // in /dev would be broken for the whole machine.
  const std::string dir = fresh_directory("pipe_link");
  ASSERT_EQ(::mkfifo((dir + "/pipe").c_str(), 0600), 0);
  ASSERT_EQ(::symlink((dir + "/pipe").c_str(), (dir + "/out").c_str()), 0);
  {
    PipeReader reader(dir + "/pipe");
    try {
      write_file_atomically(dir + "/out", [](std::ostream& out) { out << "x"; });
      ADD_FAILURE() << "wrote through or over a link to a pipe";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), dir + "/out: refused: a link to a pipe (name it itself)");
    }
    EXPECT_EQ(reader.drain(), "");
  }
  struct stat info;
  ASSERT_EQ(::lstat((dir + "/out").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
}

TEST(AtomicFile, ANameOfTheProcesssOwnDescriptorIsWrittenIntoWhateverItIs) {
  // /dev/stdout when cron or sudo gave the process a file or another user's pipe.
  const std::string dir = fresh_directory("own_descriptor");
  const int fd = ::open((dir + "/redirected").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    write_file_atomically(prefix + std::to_string(fd),
                          [&](std::ostream& out) { out << prefix << '\n'; });
  }
  ::close(fd);
  EXPECT_EQ(contents(dir + "/redirected"), "/dev/fd/\n/proc/self/fd/\n");
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"redirected"}));
  EXPECT_THROW(write_file_atomically("/dev/fd/987654", [](std::ostream&) {}), std::runtime_error);
}

TEST(AtomicFile, APipeOfAnotherUsersIsRefused) {
  const std::string dir = fresh_directory("their_pipe");
  ASSERT_EQ(::mkfifo((dir + "/out").c_str(), 0666), 0);
  if (::geteuid() != 0 || ::chown((dir + "/out").c_str(), 65534, 65534) != 0) {
    GTEST_SKIP() << "giving the pipe away needs root";
  }
  PipeReader reader(dir + "/out");
  EXPECT_THROW(write_file_atomically(dir + "/out", [](std::ostream& out) { out << "x"; }),
               std::runtime_error);
  EXPECT_EQ(reader.drain(), "");
}

TEST(AtomicFile, ASocketAtTheNameIsRefused) {
  // A socket's path is short: a directory of its own in /tmp, not under TEST_TMPDIR.
  char pattern[] = "/tmp/atomic_file_test.XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = dir + "/out";
  ASSERT_LT(path.size(), sizeof address.sun_path);
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  try {
    write_file_atomically(path, [](std::ostream& out) { out << "new"; });
    ADD_FAILURE() << "replaced a socket";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": refused: not a regular file (a socket)");
  }
  ::close(fd);
  struct stat info;
  ASSERT_EQ(::lstat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out"}));
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace vramshim::analyzer
