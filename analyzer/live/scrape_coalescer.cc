#include "analyzer/live/scrape_coalescer.h"

namespace vramshim::live {

std::string ScrapeCoalescer::scrape(int budget_ms) {
  std::promise<std::string> promise;
  std::shared_future<std::string> joined;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_.valid()) {
      joined = running_;
    } else {
      running_ = promise.get_future().share();
    }
  }
  if (joined.valid()) return joined.get();
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
  }
  return mine.get();
}

}  // namespace vramshim::live
