// Serves a control socket the way a process under the shim does, for the tests of shim/oom:
//   stats_server SOCKET serve IN_USE CACHED [IN_USE CACHED …]
//       the shim's own ControlThread; "stats" answers devices 0, 1, … with these figures
//   stats_server SOCKET answer LINE
//       answers every connection with LINE, whatever it asks
//   stats_server SOCKET silent
//       listens on SOCKET and never accepts, like a process whose control thread is stuck
// Prints "ready" on stdout once the socket listens; runs until SIGTERM.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shim/control/command_handler.h"
#include "shim/control/config.h"
#include "shim/control/control_thread.h"

namespace {

using vramshim::control::Outcome;
using vramshim::support::JsonWriter;

struct DeviceFigures {
  std::uint64_t in_use_bytes;
  std::uint64_t cached_bytes;
};

class StatsHandler : public vramshim::control::CommandHandler {
 public:
  explicit StatsHandler(std::vector<DeviceFigures> devices) : devices_(std::move(devices)) {}

  Outcome stats(JsonWriter& response) override {
    response.key("devices").begin_array();
    for (size_t device = 0; device < devices_.size(); ++device) {
      response.begin_object().key("device").number(device);
      response.key("in_use_bytes").number(devices_[device].in_use_bytes);
      response.key("cached_bytes").number(devices_[device].cached_bytes);
      response.key("reserved_bytes")
          .number(devices_[device].in_use_bytes + devices_[device].cached_bytes);
      response.key("limit_bytes").null();
      response.end_object();
    }
    response.end_array();
    return Outcome::success();
  }
  Outcome sites(std::uint64_t, JsonWriter&) override { return refused(); }
  Outcome flush(vramshim::control::Trigger, bool, JsonWriter&) override { return refused(); }
  Outcome report(vramshim::control::Trigger, std::string_view, JsonWriter&) override {
    return refused();
  }
  Outcome report_crash(const vramshim::control::FatalSignal&, JsonWriter&) override {
    return refused();
  }
  Outcome trim(std::uint64_t, JsonWriter&) override { return refused(); }
  Outcome set_limit(std::optional<std::uint64_t>, JsonWriter&) override { return refused(); }
  void tick() override {}

 private:
  static Outcome refused() { return Outcome::failure("this test server only answers stats"); }
  std::vector<DeviceFigures> devices_;
};

int listening_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 8) != 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  return fd;
}

void say_ready() {
  std::printf("ready\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stats_server SOCKET serve|answer|silent …\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const std::string socket_path = argv[1];
  const std::string mode = argv[2];
  int received = 0;

  if (mode == "serve") {
    std::vector<DeviceFigures> devices;
    for (int i = 3; i + 1 < argc; i += 2) {
      devices.push_back(
          {std::strtoull(argv[i], nullptr, 10), std::strtoull(argv[i + 1], nullptr, 10)});
    }
    StatsHandler handler(std::move(devices));
    vramshim::control::Config config;
    config.socket_path = socket_path;
    config.flush_signal = 0;
    config.report_signal = 0;
    config.report_enabled = false;
    vramshim::control::ControlThread control;
    if (!control.start(config, handler) || control.socket_path().empty()) return 1;
    say_ready();
    sigwait(&stop, &received);
    control.stop();
    return 0;
  }

  const int listener = listening_socket(socket_path);
  if (mode == "answer" && argc > 3) {
    const std::string line = std::string(argv[3]) + "\n";
    std::thread([listener, line] {
      for (;;) {
        const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        ssize_t ignored = ::write(client, line.data(), line.size());
        (void)ignored;
        ::close(client);
      }
    }).detach();
  } else if (mode != "silent") {
    std::fprintf(stderr, "stats_server: unknown mode %s\n", mode.c_str());
    return 2;
  }
  say_ready();
  sigwait(&stop, &received);
  ::unlink(socket_path.c_str());
  return 0;
}
