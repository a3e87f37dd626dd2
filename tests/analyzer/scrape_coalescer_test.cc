// Concurrent scrapes of the exporter share a collection, and none waits past its own budget for
// one that another scrape started with a longer budget.
#include "analyzer/live/scrape_coalescer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

namespace vramshim::live {
namespace {

TEST(ScrapeCoalescerTest, AScrapeJoiningALongerCollectionGetsTheLastOneAfterItsBudget) {
  std::atomic<int> collections{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> second_started;
  ScrapeCoalescer coalescer([&](int budget_ms) {
    const int number = ++collections;
    if (number == 2) {
      second_started.set_value();
      released.wait();  // a process that takes the whole of a long budget to answer
    }
    return "collection " + std::to_string(number) + " within " + std::to_string(budget_ms);
  });
  EXPECT_EQ(coalescer.scrape(2000), "collection 1 within 2000");
  std::future<std::string> long_scrape =
      std::async(std::launch::async, [&] { return coalescer.scrape(2000); });
  second_started.get_future().wait();
  // Joins the running collection, gives up on it after 50 ms: the previous text, while the
  // collection joined still runs.
  EXPECT_EQ(coalescer.scrape(50), "collection 1 within 2000");
  EXPECT_EQ(long_scrape.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(long_scrape.get(), "collection 2 within 2000");
  EXPECT_EQ(collections, 2);
}

TEST(ScrapeCoalescerTest, CollectsAtMostOncePerInterval) {
  std::atomic<int> collections{0};
  ScrapeCoalescer coalescer([&](int) { return "collection " + std::to_string(++collections); },
                            std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(coalescer.scrape(1000), "collection 1");
  // Scrapes one after another within the interval: the first collection's text.
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) {
    EXPECT_EQ(coalescer.scrape(1000), "collection 1");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(coalescer.scrape(1000), "collection 2");
  EXPECT_EQ(collections, 2);
}

}  // namespace
}  // namespace vramshim::live
