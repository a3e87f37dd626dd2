#include "analyzer/live/scrape_coalescer.h"

#include <chrono>

namespace vramshim::live {

std::string ScrapeCoalescer::scrape(int budget_ms) {
  std::promise<std::string> promise;
  std::shared_future<std::string> joined;
  const auto started = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (last_ && started - last_started_ < min_interval_) return *last_;
    if (running_.valid()) {
      joined = running_;
    } else {
      running_ = promise.get_future().share();
    }
  }
  if (joined.valid()) {
    // The collection joined may have a longer budget than this scrape's.
    if (joined.wait_for(std::chrono::milliseconds(budget_ms)) != std::future_status::ready) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (last_) return *last_;
    }
    return joined.get();  // the first collection of all: nothing older to give
  }
  try {
    promise.set_value(collect_(budget_ms));
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
  std::shared_future<std::string> mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mine = running_;
    running_ = {};
    try {
      last_ = mine.get();
      last_started_ = started;
    } catch (...) {
      // A failed collection is not kept; its scrape gets the error.
    }
  }
  return mine.get();
}

}  // namespace vramshim::live
