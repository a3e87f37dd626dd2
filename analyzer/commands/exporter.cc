// vramshim exporter: serves /metrics in the Prometheus text format, collected at scrape time from
// every process running under vramshim on this node (README.md, "Prometheus"), by the bounded
// server of analyzer/http/.
#include <signal.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/http/http_server.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/scrape_coalescer.h"
#include "analyzer/live/shimmed_sockets.h"
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
        std::vector<std::string> refused;
        std::set<uid_t> listings_cut;
        const std::vector<SocketEntry> sockets =
            live::shimmed_sockets(options.only_directory, &refused, &listings_cut);
        for (const std::string& why : refused) log->warn(why);
        live::CollectOptions collect;
        collect.budget_ms = budget_ms;
        collect.top_sites = options.top_sites;
        const live::Collection collection = live::collect(sockets, collect);
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
  try {
    port = server.listen(host, port);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error("cannot listen on " + options.listen + ": " + error.what());
  }
  std::fprintf(stderr, "vramshim: exporter serving http://%s:%d/metrics\n",
               host.find(':') != std::string::npos ? ("[" + host + "]").c_str() : host.c_str(),
               port);
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
