// vramshim exporter: serves /metrics in the Prometheus text format, collected at scrape time from
// every process running under vramshim on this node (README.md, "Prometheus"). Built into its own
// executable, vramshim-exporter (exporter_launcher.cc says why).
#include <signal.h>
#include <sys/socket.h>

#include <httplib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "analyzer/commands/command.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/scrape_coalescer.h"
#include "analyzer/live/shimmed_sockets.h"
#include "analyzer/render/prometheus.h"

namespace vramshim::cli {
namespace {

// Outside the 9100–9999 range of Prometheus's default port allocations, which is taken.
constexpr int kDefaultPort = 10046;
// Requests served at once; more wait for a thread. Scrapes mostly wait for the collection they
// joined, so many threads cost little and let a burst of scrapers share few collections.
constexpr size_t kServingThreads = 32;
// Prometheus tells its scrape timeout; the collection ends this much before it.
constexpr int kTimeoutMarginMs = 250;
constexpr int kMinimumBudgetMs = 50;

struct ExporterOptions {
  std::string listen = "127.0.0.1:" + std::to_string(kDefaultPort);
  int budget_ms = 2000;
  int top_sites = 10;
  std::string only_directory;
};

// Each distinct complaint (an untrusted directory, a skipped process) once, not at every scrape.
class OnceLog {
 public:
  void warn(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (said_.size() < 10000 && said_.insert(line).second) {
      std::fprintf(stderr, "vramshim: %s\n", line.c_str());
    }
  }

 private:
  std::mutex mutex_;
  std::set<std::string> said_;
};

// The budget of one scrape: ours, or less when Prometheus says it gives up sooner.
int scrape_budget(const httplib::Request& request, int budget_ms) {
  const std::string timeout = request.get_header_value("X-Prometheus-Scrape-Timeout-Seconds");
  if (timeout.empty()) return budget_ms;
  char* end = nullptr;
  const double seconds = std::strtod(timeout.c_str(), &end);
  if (end == timeout.c_str() || !(seconds > 0) || seconds > 3600) return budget_ms;
  const int theirs = static_cast<int>(seconds * 1000) - kTimeoutMarginMs;
  return std::max(kMinimumBudgetMs, std::min(budget_ms, theirs));
}

void serve(const ExporterOptions& options) {
  const size_t colon = options.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::runtime_error("--listen needs HOST:PORT, got \"" + options.listen + "\"");
  }
  std::string host = options.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(options.listen.substr(colon + 1), &used);
    if (used != options.listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) {
    throw std::runtime_error("--listen needs a port from 0 to 65535, got \"" + options.listen +
                             "\"");
  }

  // SIGTERM and SIGINT end the server; blocked before any thread starts, awaited by one.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto log = std::make_shared<OnceLog>();
  live::ScrapeCoalescer coalescer([&options, log](int budget_ms) {
    std::vector<std::string> refused;
    const std::vector<SocketEntry> sockets =
        live::shimmed_sockets(options.only_directory, &refused);
    for (const std::string& why : refused) log->warn(why);
    live::CollectOptions collect;
    collect.budget_ms = budget_ms;
    collect.top_sites = options.top_sites;
    const live::Collection collection = live::collect(sockets, collect);
    for (const std::string& problem : collection.problems) log->warn(problem + "; skipped");
    return to_prometheus(collection);
  });

  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kServingThreads); };
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_timeout(5);
  server.set_payload_max_length(64 << 10);
  // cpp-httplib listens with a backlog of 5, compiled into Debian's library: a burst of scrapers
  // overflows it, and connections past it wait for the kernel's SYN-ACK retries (1, 3, 7 ... s)
  // and are reset after about a minute. The socket is listened on again, with the system's
  // maximum, once bound (Linux updates a listening socket's backlog in place). SO_REUSEADDR
  // alone, not httplib's SO_REUSEPORT: a second exporter on the same port fails to start instead
  // of silently taking half the scrapes.
  int listening_fd = -1;
  server.set_socket_options([&listening_fd](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listening_fd = fd;
  });
  server.Get("/metrics", [&](const httplib::Request& request, httplib::Response& response) {
    response.set_content(coalescer.scrape(scrape_budget(request, options.budget_ms)),
                         "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("vramshim exporter: the metrics are at /metrics\n", "text/plain");
  });

  if (port == 0) {
    port = server.bind_to_any_port(host);
    if (port < 0) throw std::runtime_error("cannot listen on " + options.listen);
  } else if (!server.bind_to_port(host, port)) {
    throw std::runtime_error("cannot listen on " + options.listen);
  }
  if (::listen(listening_fd, SOMAXCONN) != 0) {
    throw std::runtime_error("cannot listen on " + options.listen + ": " + std::strerror(errno));
  }
  std::fprintf(stderr, "vramshim: exporter serving http://%s:%d/metrics\n",
               host.find(':') != std::string::npos ? ("[" + host + "]").c_str() : host.c_str(),
               port);
  std::thread stopper([&server, stop_signals] {
    int received = 0;
    sigwait(&stop_signals, &received);
    server.stop();
  });
  const bool served = server.listen_after_bind();
  if (!served) {
    ::kill(::getpid(), SIGTERM);  // ends the stopper
  }
  stopper.join();
  if (!served) throw std::runtime_error("the server on " + options.listen + " failed");
}

}  // namespace

void configure_exporter(CLI::App& command) {
  auto options = std::make_shared<ExporterOptions>();
  command
      .add_option("--listen", options->listen,
                  "HOST:PORT to serve on (port 0: any free port, printed on stderr)")
      ->capture_default_str();
  command
      .add_option("--budget", options->budget_ms,
                  "Milliseconds a scrape may spend asking the processes (less when Prometheus's "
                  "scrape timeout is shorter); those that have not answered are skipped and "
                  "counted")
      ->check(CLI::Range(kMinimumBudgetMs, 600000))
      ->capture_default_str();
  command
      .add_option("--top-sites", options->top_sites, "Sites per process, by live bytes (0: none)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command.add_option("--dir", options->only_directory, "Look only in this socket directory");
  command.callback([options] { serve(*options); });
}

}  // namespace vramshim::cli
