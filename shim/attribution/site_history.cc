#include "shim/attribution/site_history.h"

#include <algorithm>

namespace vramshim::attribution {

SiteHistory::SiteHistory(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {
  slot_times_.reserve(kMaxSlots);
}

size_t SiteHistory::memory_bytes_locked() const {
  return sites_.capacity() * sizeof(SiteState) + records_.capacity() * sizeof(Record) +
         slot_times_.capacity() * sizeof(double);
}

size_t SiteHistory::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_bytes_locked();
}

void SiteHistory::add_sites(size_t count) {
  const size_t fixed = kMaxSlots * sizeof(double);
  const size_t half = budget_bytes_ / 2;
  const size_t most = half > fixed ? (half - fixed) / sizeof(SiteState) : 0;
  const size_t wanted = std::min(count, most);
  if (wanted > sites_.capacity()) {
    sites_.reserve(std::min(most, std::max(wanted, sites_.capacity() * 2)));
  }
  while (sites_.size() < wanted) {
    // A site new since the peak held nothing then.
    sites_.push_back(SiteState{0, 0, peak_epoch_, kNoRecord});
  }
  untracked_sites_ = static_cast<uint32_t>(count - sites_.size());
  fit_records();
}

size_t SiteHistory::record_room() const {
  const size_t others = sites_.capacity() * sizeof(SiteState) + kMaxSlots * sizeof(double);
  return budget_bytes_ > others ? (budget_bytes_ - others) / sizeof(Record) : 0;
}

void SiteHistory::fit_records() {
  const size_t most = record_room();
  if (records_.capacity() <= most) return;
  while (records_.size() > most && slot_times_.size() > 1) halve();
  // A new array of the room (more only when one slot's records do not fit).
  std::vector<Record> fitted;
  fitted.reserve(std::max(most, records_.size()));
  fitted.assign(records_.begin(), records_.end());
  records_.swap(fitted);
}

bool SiteHistory::make_room() {
  while (records_.size() == records_.capacity()) {
    const size_t most = record_room();
    if (records_.capacity() < most) {
      records_.reserve(std::min(most, std::max<size_t>(records_.capacity() * 2, 1024)));
      return true;
    }
    if (slot_times_.size() <= 1) return false;
    halve();
  }
  return true;
}

void SiteHistory::halve() {
  ++halvings_;
  // Each pair of slots becomes one, timed by its later tick.
  const size_t slots = (slot_times_.size() + 1) / 2;
  for (size_t k = 0; k < slots; ++k) {
    slot_times_[k] = slot_times_[std::min(2 * k + 1, slot_times_.size() - 1)];
  }
  slot_times_.resize(slots);
  current_slot_ >>= 1;
  // Records are in slot order, so a site's record of the merged slot, if any, is its newest one
  // written so far; stale last_record indices are told apart by their site and slot.
  size_t kept = 0;
  for (size_t i = 0; i < records_.size(); ++i) {
    Record record = records_[i];
    record.slot >>= 1;
    SiteState& site = sites_[record.site];
    if (site.last_record < kept && records_[site.last_record].site == record.site &&
        records_[site.last_record].slot == record.slot) {
      Record& into = records_[site.last_record];
      into.last = record.last;
      into.max = std::max(into.max, record.max);
      continue;
    }
    site.last_record = static_cast<uint32_t>(kept);
    records_[kept++] = record;
  }
  records_.resize(kept);
}

bool SiteHistory::update_current_record(uint32_t index, uint64_t value) {
  const SiteState& site = sites_[index];
  if (site.last_record >= records_.size()) return false;
  Record& record = records_[site.last_record];
  if (record.site != index || record.slot != current_slot_) return false;
  record.last = value;
  record.max = std::max(record.max, value);
  return true;
}

void SiteHistory::append(uint32_t index, uint64_t value) {
  if (update_current_record(index, value)) return;
  if (!make_room()) return;
  // Making room may have halved the slots in the middle of the tick: the site's record of the
  // slot before the current one may now be of the current one (two points of one slot made a
  // report its reader refuses).
  if (update_current_record(index, value)) return;
  sites_[index].last_record = static_cast<uint32_t>(records_.size());
  records_.push_back(Record{index, current_slot_, value, value});
}

void SiteHistory::begin_tick(double time, size_t site_count) {
  if (!slot_times_.empty() && (ticks_ >> halvings_) == current_slot_) {
    slot_times_.back() = time;
  } else {
    if (slot_times_.size() == kMaxSlots) halve();
    current_slot_ = static_cast<uint32_t>(ticks_ >> halvings_);  // == slot_times_.size()
    slot_times_.push_back(time);
  }
  ++ticks_;
  if (site_count > sites_.size()) add_sites(site_count);
}

void SiteHistory::set(uint32_t index, uint64_t value) {
  if (index >= sites_.size()) return;  // past the budget
  SiteState& site = sites_[index];
  if (value == site.now) return;
  // The first change since the latest peak: what the site held at the peak is its value now.
  if (site.at_peak_epoch != peak_epoch_) {
    site.at_peak = site.now;
    site.at_peak_epoch = peak_epoch_;
  }
  total_now_ = total_now_ - site.now + value;
  site.now = value;
  append(index, value);
}

void SiteHistory::end_tick(double time) {
  if (total_now_ > peak_total_) {
    peak_total_ = total_now_;
    peak_time_ = time;
    ++peak_epoch_;
  }
}

void SiteHistory::tick(double time, const uint64_t* live_bytes, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  begin_tick(time, count);
  const size_t known = std::min(count, sites_.size());
  for (uint32_t i = 0; i < known; ++i) set(i, live_bytes[i]);
  end_tick(time);
}

History SiteHistory::read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  History history;
  history.budget_bytes = budget_bytes_;
  history.ticks = ticks_;
  history.ticks_per_slot = uint64_t{1} << halvings_;
  history.slot_times = slot_times_;
  history.peak_time = peak_time_;
  history.peak_bytes = peak_total_;
  history.untracked_sites = untracked_sites_;
  std::vector<uint32_t> series_of(sites_.size(), UINT32_MAX);
  for (const Record& record : records_) {
    uint32_t& series = series_of[record.site];
    if (series == UINT32_MAX) {
      series = static_cast<uint32_t>(history.sites.size());
      const SiteState& site = sites_[record.site];
      history.sites.push_back(
          {record.site, {}, site.at_peak_epoch == peak_epoch_ ? site.at_peak : site.now});
    }
    history.sites[series].points.push_back({record.slot, record.last, record.max});
  }
  std::sort(history.sites.begin(), history.sites.end(),
            [](const SiteSeries& a, const SiteSeries& b) { return a.site < b.site; });
  return history;
}

}  // namespace vramshim::attribution
