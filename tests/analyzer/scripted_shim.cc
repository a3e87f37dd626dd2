#include "tests/analyzer/scripted_shim.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>

namespace vramshim::testing {
namespace {

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  return address;
}

// The request line a client sent (without its newline), up to the protocol's 4096 bytes.
std::string read_request(int client) {
  std::string request;
  char c;
  while (request.size() < 4096 && ::read(client, &c, 1) == 1 && c != '\n') request += c;
  return request;
}

void send_all(int client, const std::string& text) {
  for (size_t sent = 0; sent < text.size();) {
    const ssize_t n = ::send(client, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client gave up (a refused answer)
    sent += static_cast<size_t>(n);
  }
}

[[noreturn]] void serve(const std::string& directory,
                        const std::map<std::string, std::string>& answers, int ready) {
  const sockaddr_un address = address_of(directory + "/" + std::to_string(::getpid()) + ".sock");
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listener, 8) != 0) {
    _exit(120);
  }
  if (::write(ready, "r", 1) != 1) _exit(121);
  for (;;) {
    const int client = ::accept(listener, nullptr, nullptr);
    if (client < 0) continue;
    const std::string request = read_request(client);
    const auto answer = answers.find(request.substr(0, request.find(' ')));
    send_all(client, (answer != answers.end() ? answer->second
                                              : R"({"ok":false,"error":"unknown request"})") +
                         "\n");
    ::close(client);
  }
}

}  // namespace

ScriptedShim::ScriptedShim(const std::string& directory,
                           std::map<std::string, std::string> answers) {
  int ready[2];
  if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(ready[0]);
    serve(directory, answers, ready[1]);
  }
  ::close(ready[1]);
  char byte = 0;
  ssize_t got = 0;
  while ((got = ::read(ready[0], &byte, 1)) < 0 && errno == EINTR) {
  }
  const bool listening = got == 1;
  ::close(ready[0]);
  if (pid_ < 0 || !listening) throw std::runtime_error("the scripted shim did not start");
  path_ = directory + "/" + std::to_string(pid_) + ".sock";
}

ScriptedShim::~ScriptedShim() {
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  for (const int fd : waiting_clients_) ::close(fd);
}

void ScriptedShim::stop_with_full_backlog() {
  ::kill(pid_, SIGSTOP);
  int status = 0;
  ::waitpid(pid_, &status, WUNTRACED);
  const sockaddr_un address = address_of(path_);
  for (;;) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      if (errno == EAGAIN) return;
      throw std::runtime_error("cannot fill the backlog of " + path_);
    }
    waiting_clients_.push_back(fd);
  }
}

}  // namespace vramshim::testing
