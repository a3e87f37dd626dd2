#include "analyzer/live/scrape_coalescer.h"

#include <algorithm>

namespace vramshim::live {

ScrapeCoalescer::~ScrapeCoalescer() {
  if (collector_.joinable()) collector_.join();
}

ScrapeCoalescer::Text ScrapeCoalescer::scrape(int wait_ms) {
  std::shared_future<Text> running;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    if (last_ != nullptr && now - last_started_ < min_interval_) return last_;
    if (!running_.valid()) {
      std::promise<Text> promise;
      running_ = promise.get_future().share();
      // The last collector has cleared running_, its last use of the lock: it ends at once.
      if (collector_.joinable()) collector_.join();
      try {
        collector_ =
            std::thread(&ScrapeCoalescer::collect_in_background, this, std::move(promise), now);
      } catch (...) {
        running_ = {};
        throw;
      }
    }
    running = running_;
  }
  if (running.wait_for(std::chrono::milliseconds(std::max(0, wait_ms))) !=
      std::future_status::ready) {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }
  return running.get();
}

void ScrapeCoalescer::collect_in_background(std::promise<Text> promise, Clock::time_point started) {
  Text text;
  std::exception_ptr error;
  try {
    text = std::make_shared<const std::string>(collect_(budget_ms_));
  } catch (...) {
    error = std::current_exception();  // a failed collection is not kept; its scrapers get this
  }
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = {};
  if (text != nullptr) {
    last_ = text;
    last_started_ = started;
    promise.set_value(std::move(text));
  } else {
    promise.set_exception(error);
  }
}

}  // namespace vramshim::live
