#include "shim/oom/shimmed_processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

#include "shim/control/socket_path.h"

namespace vramshim::oom {
namespace {

constexpr char kRequest[] = "stats\n";
// A stats answer holds about 500 bytes per device.
constexpr size_t kMaxAnswerBytes = 64 * 1024;
// How much of a refusal a note repeats.
constexpr size_t kMaxQuotedBytes = 200;

// One socket asked.
struct Question {
  pid_t pid = 0;
  std::string path;
  int fd = -1;
  std::string answer;
  bool done = false;  // a whole line came, or the connection ended
};

// The pid a socket name stands for: the shim names its socket std::to_string(getpid()) + ".sock".
std::optional<pid_t> pid_of_socket_name(std::string_view name) {
  constexpr std::string_view kSuffix = ".sock";
  if (name.size() <= kSuffix.size() || name.size() > kSuffix.size() + 9 ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  pid_t pid = 0;
  for (const char c : name.substr(0, name.size() - kSuffix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  return pid;
}

// A descriptor of `path` for listing, if it is a directory that may hold our sockets; else -1, with
// *problem saying why unless the directory is missing.
int open_trusted_directory(const std::string& path, std::string* problem) {
  // O_PATH | O_NOFOLLOW opens what is at the name itself, a link included, so that what is checked
  // is what is listed.
  const int handle = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (handle < 0) {
    if (errno != ENOENT) *problem = "cannot open " + path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat info;
  if (::fstat(handle, &info) != 0) {
    *problem = "cannot inspect " + path + ": " + std::strerror(errno);
  } else if (S_ISLNK(info.st_mode)) {
    *problem = path + " is a symbolic link";
  } else {
    *problem = control::verify_private_directory(path, info, ::geteuid());
  }
  int listing = -1;
  if (problem->empty()) {
    listing = ::openat(handle, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listing < 0) *problem = "cannot open " + path + ": " + std::strerror(errno);
  }
  ::close(handle);
  if (!problem->empty()) *problem += "; its sockets are not asked";
  return listing;
}

// A connected socket to the process `pid` promises to be at `path`, or -1, with *problem saying
// why unless the process is gone.
int connect_to(const std::string& path, pid_t pid, std::string* problem) {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    *problem = path + " is too long a socket path";
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *problem = std::string("cannot create a socket: ") + std::strerror(errno);
    return -1;
  }
  // A Unix socket connects at once or not at all; EAGAIN means its backlog is full.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno == EAGAIN) {
      *problem = "pid " + std::to_string(pid) + " (" + path + ") accepts no connection now";
    } else if (errno != ECONNREFUSED && errno != ENOENT) {
      *problem = "cannot connect to " + path + ": " + std::strerror(errno);
    }
    ::close(fd);
    return -1;
  }
  ucred peer = {};
  socklen_t length = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    *problem =
        "cannot read the credentials of the process serving " + path + ": " + std::strerror(errno);
  } else if (peer.pid != pid || peer.uid != ::geteuid()) {
    *problem = path + " is served by pid " + std::to_string(peer.pid) + " of uid " +
               std::to_string(peer.uid) + ", not by pid " + std::to_string(pid) + " of uid " +
               std::to_string(::geteuid()) + "; not trusted";
  } else if (::send(fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
                 static_cast<ssize_t>(sizeof(kRequest) - 1) &&
             errno != EPIPE) {
    // EPIPE: the process answered and closed before it read (a shim refusing a peer does): its
    // answer waits to be read.
    *problem = "cannot ask " + path + ": " + std::strerror(errno);
  }
  if (!problem->empty()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Connects to every trusted socket of `directory` whose pid is not in `seen` (nor ours).
void ask_directory(const std::string& directory, std::set<pid_t>& seen,
                   std::vector<Question>& questions, std::vector<std::string>& notes) {
  std::string problem;
  const int listing_fd = open_trusted_directory(directory, &problem);
  if (listing_fd < 0) {
    if (!problem.empty()) notes.push_back(problem);
    return;
  }
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    notes.push_back("cannot list " + directory + ": " + std::strerror(errno));
    ::close(listing_fd);
    return;
  }
  const int directory_fd = ::dirfd(listing);
  while (const dirent* entry = ::readdir(listing)) {
    const std::optional<pid_t> pid = pid_of_socket_name(entry->d_name);
    if (!pid || *pid == ::getpid() || seen.count(*pid) != 0) continue;
    const std::string path = directory + "/" + entry->d_name;
    struct stat info;
    if (::fstatat(directory_fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISSOCK(info.st_mode)) {
      notes.push_back(path + " is not a socket; not trusted");
      continue;
    }
    if (info.st_uid != ::geteuid()) {
      notes.push_back(path + " is owned by uid " + std::to_string(info.st_uid) + ", not " +
                      std::to_string(::geteuid()) + "; not trusted");
      continue;
    }
    problem.clear();
    const int fd = connect_to(path, *pid, &problem);
    if (fd < 0) {
      if (!problem.empty()) notes.push_back(problem);
      continue;
    }
    seen.insert(*pid);
    Question question;
    question.pid = *pid;
    question.path = path;
    question.fd = fd;
    questions.push_back(std::move(question));
  }
  ::closedir(listing);
}

// Reads what has arrived on the question's socket.
void read_available(Question& question) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(question.fd, buffer, sizeof(buffer));
    if (n > 0) {
      question.answer.append(buffer, static_cast<size_t>(n));
      if (std::memchr(buffer, '\n', static_cast<size_t>(n)) != nullptr ||
          question.answer.size() > kMaxAnswerBytes) {
        question.done = true;
        return;
      }
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      question.done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      return;
    }
  }
}

void wait_for_answers(std::vector<Question>& questions, Clock::time_point deadline) {
  std::vector<pollfd> waiting;
  std::vector<Question*> asked;
  for (;;) {
    waiting.clear();
    asked.clear();
    for (Question& question : questions) {
      if (question.done) continue;
      waiting.push_back(pollfd{question.fd, POLLIN, 0});
      asked.push_back(&question);
    }
    const Clock::duration left = deadline - Clock::now();
    if (waiting.empty() || left <= Clock::duration::zero()) return;
    // Rounded up, so that the last poll does not return early and spin.
    const auto left_ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    const int ready = ::poll(waiting.data(), waiting.size(), static_cast<int>(left_ms));
    if (ready < 0 && errno != EINTR) return;
    for (size_t i = 0; i < waiting.size(); ++i) {
      if (waiting[i].revents != 0) read_available(*asked[i]);
    }
  }
}

// Adds the question's process to scan.processes when its answer has figures for the device, else a
// note saying why it has none (none for a process that does not use the device).
void take_answer(const Question& question, const DeviceIdentity& device, long waited_ms,
                 ShimmedProcessScan& scan) {
  const std::string who = "pid " + std::to_string(question.pid) + " (" + question.path + ")";
  if (!question.done) {
    scan.notes.push_back(who + " did not answer within " + std::to_string(waited_ms) + " ms");
    return;
  }
  if (question.answer.size() > kMaxAnswerBytes) {
    scan.notes.push_back(who + " answered more than " + std::to_string(kMaxAnswerBytes) + " bytes");
    return;
  }
  const std::string_view line =
      std::string_view(question.answer).substr(0, question.answer.find('\n'));
  const StatsReading reading = read_stats_answer(line, device.ordinal, device.pci_bus_id);
  switch (reading.kind) {
    case StatsReading::Kind::kFigures:
      scan.processes.push_back({question.pid, reading.figures});
      return;
    case StatsReading::Kind::kNoSuchDevice:
      return;
    case StatsReading::Kind::kRefused:
      scan.notes.push_back(who + " refused stats: " + std::string(line.substr(0, kMaxQuotedBytes)));
      return;
    case StatsReading::Kind::kUnreadable:
      scan.notes.push_back(who + (line.empty() ? " closed the connection without an answer"
                                               : " gave an answer that is not a stats answer"));
      return;
  }
}

}  // namespace

ShimmedProcessScan ask_shimmed_processes(const std::vector<std::string>& directories,
                                         const DeviceIdentity& device,
                                         std::chrono::milliseconds answer_timeout,
                                         Clock::time_point latest) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point answer_deadline = std::min(start + answer_timeout, latest);
  ShimmedProcessScan scan;
  std::vector<Question> questions;
  std::set<pid_t> seen;
  for (const std::string& directory : directories) {
    ask_directory(directory, seen, questions, scan.notes);
  }
  wait_for_answers(questions, answer_deadline);
  const long waited_ms = std::max<long>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(answer_deadline - start).count());
  for (const Question& question : questions) {
    ::close(question.fd);
    take_answer(question, device, waited_ms, scan);
  }
  std::sort(scan.processes.begin(), scan.processes.end(),
            [](const ShimmedProcess& a, const ShimmedProcess& b) { return a.pid < b.pid; });
  return scan;
}

}  // namespace vramshim::oom
