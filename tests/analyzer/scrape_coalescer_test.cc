// Concurrent scrapes of the exporter share a collection; every collection gets the exporter's
// budget whatever a scraper asks; none waits past its own wait for one it joined; collections
// start at most once per interval.
#include "analyzer/live/scrape_coalescer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

namespace vramshim::live {
namespace {

using namespace std::chrono_literals;

TEST(ScrapeCoalescerTest, AScrapeThatWillNotWaitGetsTheLastCollectionAndShortensNone) {
  std::atomic<int> collections{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> second_started;
  ScrapeCoalescer coalescer(
      [&](int budget_ms) {
        const int number = ++collections;
        if (number == 2) {
          second_started.set_value();
          released.wait();  // a process that takes the whole budget to answer
        }
        return "collection " + std::to_string(number) + " within " + std::to_string(budget_ms);
      },
      2000);
  EXPECT_EQ(*coalescer.scrape(2000), "collection 1 within 2000");
  // A scraper that waits 50 ms starts the next collection, with the whole budget, and gets the
  // previous text once its 50 ms are over; so does one that joins it.
  EXPECT_EQ(*coalescer.scrape(50), "collection 1 within 2000");
  second_started.get_future().wait();
  EXPECT_EQ(*coalescer.scrape(50), "collection 1 within 2000");
  std::future<ScrapeCoalescer::Text> patient =
      std::async(std::launch::async, [&] { return coalescer.scrape(10000); });
  EXPECT_EQ(patient.wait_for(100ms), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(*patient.get(), "collection 2 within 2000");
  EXPECT_EQ(collections, 2);
}

TEST(ScrapeCoalescerTest, CollectsAtMostOncePerInterval) {
  std::atomic<int> collections{0};
  ScrapeCoalescer coalescer([&](int) { return "collection " + std::to_string(++collections); },
                            1000, 1000ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(*coalescer.scrape(1000), "collection 1");
  // Scrapes one after another within the interval: the first collection's text.
  while (std::chrono::steady_clock::now() - start < 500ms) {
    EXPECT_EQ(*coalescer.scrape(1000), "collection 1");
  }
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(*coalescer.scrape(1000), "collection 2");
  EXPECT_EQ(collections, 2);
}

TEST(ScrapeCoalescerTest, NothingYetForAScrapeThatWillNotWaitForTheFirstCollection) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ScrapeCoalescer coalescer(
      [&](int) {
        released.wait();
        return std::string("collection");
      },
      2000);
  EXPECT_EQ(coalescer.scrape(50), nullptr);
  EXPECT_EQ(coalescer.scrape(0), nullptr);
  release.set_value();
  EXPECT_EQ(*coalescer.scrape(2000), "collection");
}

TEST(ScrapeCoalescerTest, AFailedCollectionFailsItsScrapesAndIsNotKept) {
  std::atomic<int> collections{0};
  ScrapeCoalescer coalescer(
      [&](int) -> std::string {
        if (++collections == 2) throw std::runtime_error("no sockets");
        return "collection " + std::to_string(collections);
      },
      1000, 0ms);
  EXPECT_EQ(*coalescer.scrape(1000), "collection 1");
  // Waited for in full, the failed collection's error; the last text is still the first.
  EXPECT_THROW(coalescer.scrape(1000), std::runtime_error);
  EXPECT_EQ(*coalescer.scrape(1000), "collection 3");
}

}  // namespace
}  // namespace vramshim::live
