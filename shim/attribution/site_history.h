// Every site's live bytes over the whole run, in bounded memory (docs/design.md, "Memory over
// time"): the control thread hands it every site's live bytes at each tick, and it keeps a point
// for each site that changed. When its memory reaches the budget it halves its resolution (pairs of
// slots become one), keeping for each slot a site's last value and its largest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace vramshim::attribution {

// A site changed during the slot: `last` is what it held at the slot's last tick, `max` the most
// it held at a tick of the slot from its first change in the slot on (before that change it held
// the previous point's `last`).
struct HistoryPoint {
  uint32_t slot;
  uint64_t last;
  uint64_t max;
};

struct SiteSeries {
  uint32_t site;  // the tracker's site index (the report's "sites" order)
  std::vector<HistoryPoint> points;
  uint64_t at_peak;  // what the site held at the peak tick (exact whatever the halving)
};

struct History {
  uint64_t budget_bytes = 0;
  uint64_t ticks = 0;              // ticks recorded
  uint64_t ticks_per_slot = 1;     // 2^halvings
  std::vector<double> slot_times;  // the time of each slot's last tick, oldest first
  double peak_time = 0;            // the tick at which the sites together held the most
  uint64_t peak_bytes = 0;
  uint32_t untracked_sites = 0;   // sites past what the budget holds (none have series)
  std::vector<SiteSeries> sites;  // sites that ever held bytes, by site index
};

class SiteHistory {
 public:
  // Default VRAMSHIM_HISTORY budget.
  static constexpr uint64_t kDefaultBudgetBytes = uint64_t{8} << 20;
  // Slots kept before halving, whatever the budget: 409.6 s at full resolution at 100 ms ticks.
  static constexpr size_t kMaxSlots = 4096;

  explicit SiteHistory(uint64_t budget_bytes);
  SiteHistory(const SiteHistory&) = delete;
  SiteHistory& operator=(const SiteHistory&) = delete;

  // One tick: `live_bytes[i]` is site i's live bytes now. Records a point for each site whose
  // value changed since the last tick. Sites only ever get added, but a caller may have read its
  // figures before another thread's tick saw newer sites: the sites past `count` keep their
  // values.
  void tick(double time, const uint64_t* live_bytes, size_t count);

  History read() const;
  // Host memory held, counted as the budget counts it.
  size_t memory_bytes() const;

 private:
  struct Record {
    uint32_t site;
    uint32_t slot;
    uint64_t last;
    uint64_t max;
  };
  struct SiteState {
    uint64_t now;
    uint64_t at_peak;  // valid while at_peak_epoch == peak_epoch_, else `now`
    uint32_t at_peak_epoch;
    uint32_t last_record;  // its newest record's index, or a stale one (checked before use)
  };

  static constexpr uint32_t kNoRecord = UINT32_MAX;

  size_t memory_bytes_locked() const;
  // Room for one more record, halving as often as needed; false when even one slot cannot hold it
  // (never while site states take at most half the budget, as add_sites keeps them).
  bool make_room();
  // Starts the states of sites [sites_.size(), count) as far as half the budget allows.
  void add_sites(size_t count);
  // The records the budget has room for beside the sites' states and the slot times.
  size_t record_room() const;
  // After the sites grew: the records, halved as often as needed, in an array of the room left
  // (grown earlier, they took the room the sites now take: up to 30 % over the budget).
  void fit_records();
  void halve();
  // Requires mutex_: starts the tick's slot and its sites; then set() each change, end_tick().
  void begin_tick(double time, size_t site_count);
  void set(uint32_t site, uint64_t value);
  void end_tick(double time);
  void append(uint32_t site, uint64_t value);
  // Updates the site's record of the current slot; false when it has none.
  bool update_current_record(uint32_t site, uint64_t value);

  const uint64_t budget_bytes_;
  mutable std::mutex mutex_;
  std::vector<SiteState> sites_;
  std::vector<Record> records_;  // in slot order
  std::vector<double> slot_times_;
  uint64_t ticks_ = 0;
  unsigned halvings_ = 0;
  uint32_t current_slot_ = 0;
  uint64_t total_now_ = 0;
  uint64_t peak_total_ = 0;
  double peak_time_ = 0;
  uint32_t peak_epoch_ = 0;
  uint32_t untracked_sites_ = 0;
};

}  // namespace vramshim::attribution
