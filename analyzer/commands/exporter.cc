// vramshim exporter: serves /metrics in the Prometheus text format, collected at scrape time from
// every process running under vramshim on this node (README.md, "Prometheus"), by the bounded
// server of analyzer/http/.
#include <signal.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "analyzer/commands/command.h"
#include "analyzer/http/http_server.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/scrape_coalescer.h"
#include "analyzer/render/prometheus.h"
#include "analyzer/render/terminal_safe.h"

namespace vramshim::cli {
namespace {

// Outside the 9100–9999 range of Prometheus's default port allocations, which is taken.
constexpr int kDefaultPort = 10046;
// Requests served at once; more wait for a thread. Scrapes mostly wait for the collection they
// joined, so many threads cost little and let a burst of scrapers share few collections.
constexpr size_t kServingThreads = 32;
// Prometheus tells its scrape timeout; the scrape stops waiting this much before it. Also the time
// a collection is given, past its budget, to end and be written.
constexpr int kTimeoutMarginMs = 250;
constexpr int kMinimumBudgetMs = 50;

struct ExporterOptions {
  std::string listen = "127.0.0.1:" + std::to_string(kDefaultPort);
  int budget_ms = 2000;
  int top_sites = 10;
  int min_interval_ms = 1000;
  std::string only_directory;
};

// Each distinct complaint (an untrusted directory, a skipped process) once, not at every scrape.
class OnceLog {
 public:
  void warn(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (said_.size() < 10000 && said_.insert(line).second) {
      analyzer::print_diagnostic(line);
    }
  }

 private:
  std::mutex mutex_;
  std::set<std::string> said_;
};

// How long one scrape may still wait for a collection: its budget and a margin for the collection
// to end and be written, or less when Prometheus says it gives up sooner; counted from its
// request's arrival, so that time spent queued for a thread (behind a burst of scrapes) is spent.
int scrape_wait(const http::Request& request, int budget_ms) {
  int wait = budget_ms + kTimeoutMarginMs;
  const std::string timeout = request.field("X-Prometheus-Scrape-Timeout-Seconds");
  char* end = nullptr;
  const double seconds = std::strtod(timeout.c_str(), &end);
  if (!timeout.empty() && end != timeout.c_str() && seconds > 0 && seconds <= 3600) {
    wait = std::max(kMinimumBudgetMs,
                    std::min(wait, static_cast<int>(seconds * 1000) - kTimeoutMarginMs));
  }
  const auto queued = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - request.arrived);
  return wait - static_cast<int>(std::min<int64_t>(queued.count(), wait));
}

// The scrape's answer: the collection's text, or 503 when no collection has finished within its
// wait (the first of all, behind a process that takes the whole budget).
http::Response metrics_response(live::ScrapeCoalescer::Text text) {
  if (text == nullptr) {
    return http::text_response(503, "no collection has finished yet; scrape again\n");
  }
  return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)};
}

// --listen's HOST:PORT: the host without brackets (empty: every address) and the port, digits
// only, at most 65535 (0: any free port).
std::pair<std::string, int> listen_address(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw UsageError("exporter: --listen needs HOST:PORT or :PORT, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string digits = listen.substr(colon + 1);
  const bool number =
      !digits.empty() && digits.size() <= 5 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int port = number ? std::stoi(digits) : -1;
  if (port < 0 || port > 65535) {
    throw UsageError("exporter: --listen needs a port from 0 to 65535, got \"" + listen + "\"");
  }
  return {host, port};
}

// Listens on `host`, or on every address when it is empty: IPv6's "::", which takes IPv4 too where
// the system maps it (net.ipv6.bindv6only=0, Linux's default), else IPv4's "0.0.0.0" (no IPv6).
// Returns the port and the address served, as printed.
std::pair<int, std::string> listen_on(http::Server& server, const std::string& host, int port) {
  if (!host.empty()) {
    return {server.listen(host, port),
            host.find(':') != std::string::npos ? "[" + host + "]" : host};
  }
  try {
    return {server.listen("::", port), "[::]"};
  } catch (const std::runtime_error&) {
    return {server.listen("0.0.0.0", port), "0.0.0.0"};
  }
}

void serve(const ExporterOptions& options) {
  const auto [host, requested_port] = listen_address(options.listen);

  // SIGTERM and SIGINT end the server: blocked before any thread starts, read from a signalfd.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int stop_fd = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (stop_fd < 0) {
    throw std::runtime_error(std::string("cannot make a signalfd: ") + std::strerror(errno));
  }

  auto log = std::make_shared<OnceLog>();
  live::ScrapeCoalescer coalescer(
      [&options, log](int budget_ms) {
        live::CollectOptions collect;
        collect.budget_ms = budget_ms;
        collect.top_sites = options.top_sites;
        std::vector<std::string> refused;
        std::set<uid_t> listings_cut;
        const live::Collection collection =
            live::collect_all(options.only_directory, collect, &refused, &listings_cut);
        for (const std::string& why : refused) log->warn(why);
        for (const std::string& problem : collection.problems) log->warn(problem + "; skipped");
        return to_prometheus(collection, listings_cut);
      },
      options.budget_ms, std::chrono::milliseconds(options.min_interval_ms));

  http::ServerLimits limits;
  limits.handler_threads = kServingThreads;
  http::Server server(
      [&](const http::Request& request) -> http::Response {
        if (request.path == "/metrics") {
          return metrics_response(coalescer.scrape(scrape_wait(request, options.budget_ms)));
        }
        if (request.path == "/") {
          return http::text_response(200, "vramshim exporter: the metrics are at /metrics\n");
        }
        return http::text_response(404, "not found: the metrics are at /metrics\n");
      },
      limits);
  std::pair<int, std::string> served;
  try {
    served = listen_on(server, host, requested_port);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error("cannot listen on " + options.listen + ": " + error.what());
  }
  std::fprintf(stderr, "vramshim: exporter serving http://%s:%d/metrics\n", served.second.c_str(),
               served.first);
  server.serve(stop_fd);
}

}  // namespace

void add_exporter_command(CLI::App& app) {
  CLI::App& command = *app.add_subcommand(
      "exporter",
      "Serve /metrics for Prometheus: every process running under vramshim on this node (every "
      "user's, for root), asked at scrape time");
  auto options = std::make_shared<ExporterOptions>();
  command
      .add_option("--listen", options->listen,
                  "HOST:PORT to serve on ([ADDRESS]:PORT for IPv6; :PORT: every address; port 0: "
                  "any free port, printed on stderr)")
      ->capture_default_str();
  command
      .add_option("--budget", options->budget_ms,
                  "Milliseconds a collection may spend asking the processes; those that have "
                  "not answered are skipped and counted (a scraper's shorter timeout shortens "
                  "only its own wait, never the collection the scrapes share)")
      ->check(CLI::Range(kMinimumBudgetMs, 600000))
      ->capture_default_str();
  command
      .add_option("--top-sites", options->top_sites, "Sites per process, by live bytes (0: none)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command
      .add_option("--min-interval", options->min_interval_ms,
                  "Milliseconds between the starts of two collections: a scrape sooner than that "
                  "after the last one gets its figures, so that no scraper makes the processes "
                  "answer more often")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  command.add_option("--dir", options->only_directory, "Look only in this socket directory");
  command.callback([options] { serve(*options); });
}

}  // namespace vramshim::cli
