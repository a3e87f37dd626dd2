// Collections for concurrent scrapes: a scrape that arrives while a collection runs waits for that
// one instead of starting its own, so that any number of scrapers ask each process at most one
// `stats` at a time; one whose own budget runs out first (the collection joined may have a longer
// one) gets the last collection finished. Collections start at most once per `min_interval`: a
// scrape sooner than that after the last one started gets its text, so that scrapers hammering the
// exporter cannot make it ask the processes (whose jobs it must not slow) more often.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>

namespace vramshim::live {

class ScrapeCoalescer {
 public:
  // `collect(budget_ms)` makes one collection's text.
  explicit ScrapeCoalescer(std::function<std::string(int budget_ms)> collect,
                           std::chrono::milliseconds min_interval = {})
      : collect_(std::move(collect)), min_interval_(min_interval) {}

  // The text of the collection running now (or, once `budget_ms` has passed, of the last one
  // finished, if any), or of a new one with `budget_ms`.
  std::string scrape(int budget_ms);

 private:
  const std::function<std::string(int)> collect_;
  const std::chrono::milliseconds min_interval_;
  std::mutex mutex_;
  std::shared_future<std::string> running_;  // valid while a collection runs
  std::optional<std::string> last_;          // the text of the last collection that finished
  std::chrono::steady_clock::time_point last_started_;  // of the last collection that finished
};

}  // namespace vramshim::live
