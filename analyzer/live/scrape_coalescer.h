// Collections for concurrent scrapes: a scrape that arrives while a collection runs waits for that
// one instead of starting its own, so that any number of scrapers ask each process at most one
// `stats` at a time. Every collection gets the exporter's budget, whatever a scraper says: a
// scraper that will not wait that long (Prometheus's scrape timeout, or a client that claims a
// short one) gets the last collection finished once its own wait is over, and cannot make the
// collection that every scraper then shares skip the slower processes. Collections start at most
// once per `min_interval`: a scrape sooner than that after the last one started gets its text, so
// that scrapers hammering the exporter cannot make it ask the processes (whose jobs it must not
// slow) more often. A collection runs on a thread of its own, so that it ends, and is kept, however
// long its scrapers wait.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace vramshim::live {

class ScrapeCoalescer {
 public:
  // Shared: every scraper of one collection sends the same text.
  using Text = std::shared_ptr<const std::string>;

  // `collect(budget_ms)` makes one collection's text.
  ScrapeCoalescer(std::function<std::string(int budget_ms)> collect, int budget_ms,
                  std::chrono::milliseconds min_interval = {})
      : collect_(std::move(collect)), budget_ms_(budget_ms), min_interval_(min_interval) {}
  ~ScrapeCoalescer();  // waits for a collection still running
  ScrapeCoalescer(const ScrapeCoalescer&) = delete;
  ScrapeCoalescer& operator=(const ScrapeCoalescer&) = delete;

  // The last collection's text if it started less than min_interval ago; else that of the
  // collection running now, or of a new one, or, once `wait_ms` has passed, of the last one
  // finished: null if none has. Throws what a failed collection threw.
  Text scrape(int wait_ms);

 private:
  using Clock = std::chrono::steady_clock;
  void collect_in_background(std::promise<Text> promise, Clock::time_point started);

  const std::function<std::string(int)> collect_;
  const int budget_ms_;
  const std::chrono::milliseconds min_interval_;
  std::mutex mutex_;
  std::shared_future<Text> running_;  // valid while a collection runs
  Text last_;                         // the text of the last collection that finished
  Clock::time_point last_started_;    // when that collection started
  std::thread collector_;             // of the running or last collection
};

}  // namespace vramshim::live
