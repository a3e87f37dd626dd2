#include "shim/support/own_threads.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vramshim::support {
namespace {

std::atomic<int> g_own_threads{0};

// The fields of a /proc stat file after its command's closing parenthesis (the command may hold
// spaces and parentheses), into `buffer`; null when it cannot be read.
const char* fields_after_command(const char* path, char* buffer, size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  const ssize_t read = ::read(fd, buffer, size - 1);
  ::close(fd);
  if (read <= 0) return nullptr;
  buffer[read] = '\0';
  const char* end_of_command = std::strrchr(buffer, ')');
  return end_of_command != nullptr && end_of_command[1] == ' ' ? end_of_command + 2 : nullptr;
}

}  // namespace

OwnThread::OwnThread() { g_own_threads.fetch_add(1); }
OwnThread::~OwnThread() { g_own_threads.fetch_sub(1); }

bool only_own_threads_remain() {
  // The count is read first: a thread of the shim's that starts or ends meanwhile makes the
  // process's count differ, and the answer false until the next look.
  const int own = g_own_threads.load();
  char buffer[1024];
  // Fields from the state on: state (3), ..., num_threads (20).
  const char* fields = fields_after_command("/proc/self/stat", buffer, sizeof(buffer));
  if (fields == nullptr) return false;
  long threads = 0;
  for (int field = 3; field <= 20; ++field) {
    if (field == 20) {
      threads = std::strtol(fields, nullptr, 10);
      break;
    }
    fields = std::strchr(fields, ' ');
    if (fields == nullptr) return false;
    ++fields;
  }
  // The main thread stays among them as a zombie until the process ends.
  if (threads != own + 1) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", static_cast<int>(::getpid()));
  const char* main_fields = fields_after_command(path, buffer, sizeof(buffer));
  return main_fields != nullptr && main_fields[0] == 'Z';
}

}  // namespace vramshim::support
