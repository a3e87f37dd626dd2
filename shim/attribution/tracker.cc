#include "shim/attribution/tracker.h"

#include <time.h>

#include <algorithm>

namespace vramshim::attribution {
namespace {

// The coarse clock (a few ms resolution) costs a fraction of the precise one, and an allocation's
// time and the peak's time need no finer resolution.
uint64_t realtime_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec);
}

uint64_t units_to_count(uint64_t units) { return (units + kCountUnit / 2) / kCountUnit; }

}  // namespace

const char* stack_mode_name(StackMode mode) {
  switch (mode) {
    case StackMode::kAll:
      return "all";
    case StackMode::kOff:
      return "off";
    case StackMode::kSample:
      return "sample";
  }
  return "all";
}

Tracker::Tracker(const TrackerOptions& options)
    : options_(options),
      capture_(options.stack_depth, options.unwinder, options.own_module),
      sampler_(options.sample_bytes, options.sample_seed) {}

AllocationWeight Tracker::weight_of(uint64_t size) const {
  if (options_.stacks == StackMode::kSample) return sampler_.weight_of(size);
  return {size, kCountUnit};
}

int32_t Tracker::capture_stack() {
  if (options_.stacks == StackMode::kOff) return -1;
  uint64_t frames[StackCapture::kMaxDepth];
  const int depth = capture_.capture(frames);
  if (options_.rewrite_stack != nullptr) {
    uint64_t rewritten[StackCapture::kMaxDepth];
    const int rewritten_depth = options_.rewrite_stack(frames, depth, rewritten, capture_.depth());
    return static_cast<int32_t>(stacks_.intern(rewritten, rewritten_depth));
  }
  return static_cast<int32_t>(stacks_.intern(frames, depth));
}

void Tracker::on_alloc(uint64_t key, uint64_t size, uint64_t requested, AllocationKind kind,
                       int device, uint64_t stream) noexcept {
  if (key == 0) return;
  if (options_.stacks == StackMode::kSample && !sampler_.should_sample(size)) return;
  try {
    record_alloc(key, size, requested, kind, device, stream, capture_stack());
  } catch (...) {
    // Out of host memory: this allocation goes untracked, as if it were not sampled.
  }
}

uint64_t Tracker::prepare(uint64_t size, AllocationKind kind) noexcept {
  if (options_.stacks == StackMode::kSample && !sampler_.should_sample(size)) return 0;
  try {
    return site_key(capture_stack(), kind);
  } catch (...) {
    return 0;  // out of host memory: untracked, as if not sampled
  }
}

int32_t Tracker::stack_of_this_call() noexcept {
  try {
    return capture_stack();
  } catch (...) {
    return -1;
  }
}

uint32_t Tracker::tag(uint64_t request, uint64_t size) noexcept {
  try {
    std::lock_guard<std::mutex> lock(figures_mutex_);
    const uint32_t site = site_for_key(request);
    add(site, weight_of(size));
    return site + 1;
  } catch (...) {
    return 0;  // out of host memory for a new site: untracked
  }
}

void Tracker::untag(uint32_t tag, uint64_t size) noexcept {
  std::lock_guard<std::mutex> lock(figures_mutex_);
  subtract(tag - 1, weight_of(size));
}

void Tracker::on_alloc_with_frames(uint64_t key, uint64_t size, uint64_t requested,
                                   AllocationKind kind, int device, uint64_t stream,
                                   const uint64_t* frames, int depth) noexcept {
  if (key == 0) return;
  if (options_.stacks == StackMode::kSample && !sampler_.should_sample(size)) return;
  try {
    const int32_t stack =
        options_.stacks == StackMode::kOff
            ? -1
            : static_cast<int32_t>(stacks_.intern(frames, std::clamp(depth, 0, capture_.depth())));
    record_alloc(key, size, requested, kind, device, stream, stack);
  } catch (...) {
    // Out of host memory: this allocation goes untracked, as if it were not sampled.
  }
}

void Tracker::record_alloc(uint64_t key, uint64_t size, uint64_t requested, AllocationKind kind,
                           int device, uint64_t stream, int32_t stack) {
  const uint64_t now = realtime_ns();
  uint32_t site;
  {
    std::lock_guard<std::mutex> lock(figures_mutex_);
    site = site_for(stack, kind);
    add(site, weight_of(size));
  }
  std::optional<LiveAllocation> replaced;
  try {
    replaced = live_.insert(LiveAllocation{key, size, requested, stream, now, site, device});
  } catch (...) {
    std::lock_guard<std::mutex> lock(figures_mutex_);
    subtract(site, weight_of(size));
    throw;
  }
  if (replaced) {
    // The key was handed out again without a free we saw: retire the old allocation.
    std::lock_guard<std::mutex> lock(figures_mutex_);
    subtract(replaced->site, weight_of(replaced->size));
  }
}

void Tracker::on_free(uint64_t key) noexcept {
  if (key == 0) return;
  const std::optional<LiveAllocation> freed = live_.erase(key);
  if (!freed) return;
  std::lock_guard<std::mutex> lock(figures_mutex_);
  subtract(freed->site, weight_of(freed->size));
}

std::optional<LiveAllocation> Tracker::find(uint64_t key) const {
  if (key == 0) return std::nullopt;
  return live_.find(key);
}

uint64_t Tracker::site_key(int32_t stack, AllocationKind kind) {
  // Stacks start at -1 (none), so the key is never 0, which marks an empty slot (and "untracked").
  return (static_cast<uint64_t>(static_cast<int64_t>(stack) + 2) << 3) |
         static_cast<uint64_t>(kind);
}

uint32_t Tracker::site_for(int32_t stack, AllocationKind kind) {
  return site_for_key(site_key(stack, kind));
}

uint32_t Tracker::site_for_key(uint64_t key) {
  if (const SiteEntry* entry = site_by_stack_and_kind_.find(key)) return entry->site;
  const auto site = static_cast<uint32_t>(sites_.size());
  const auto stack = static_cast<int32_t>(static_cast<int64_t>(key >> 3) - 2);
  const auto kind = static_cast<AllocationKind>(key & 7);
  sites_.push_back(Site{stack, kind, 0, 0, 0, 0, 0, 0, peak_epoch_});
  site_by_stack_and_kind_.insert({key, site});
  return site;
}

void Tracker::sync_peak_snapshot(Site& site) const {
  if (site.at_peak_epoch == peak_epoch_) return;
  site.at_peak_bytes = site.live_bytes;
  site.at_peak_epoch = peak_epoch_;
}

void Tracker::add(uint32_t index, AllocationWeight weight) {
  Site& site = sites_[index];
  sync_peak_snapshot(site);
  site.live_bytes += weight.bytes;
  site.live_units += weight.count_units;
  site.total_bytes += weight.bytes;
  site.total_units += weight.count_units;
  site.peak_bytes = std::max(site.peak_bytes, site.live_bytes);
  in_use_bytes_ += weight.bytes;
  if (in_use_bytes_ > peak_in_use_bytes_) {
    peak_in_use_bytes_ = in_use_bytes_;
    // Read only at a new peak: a pool hit below the peak pays no clock read.
    peak_time_ns_ = realtime_ns();
    ++peak_epoch_;
  }
}

void Tracker::subtract(uint32_t index, AllocationWeight weight) {
  Site& site = sites_[index];
  sync_peak_snapshot(site);
  site.live_bytes -= weight.bytes;
  site.live_units -= weight.count_units;
  in_use_bytes_ -= weight.bytes;
}

TrackerSnapshot Tracker::snapshot() const {
  TrackerSnapshot snapshot;
  std::lock_guard<std::mutex> lock(figures_mutex_);
  snapshot.sites.reserve(sites_.size());
  for (const Site& site : sites_) {
    const uint64_t at_peak =
        site.at_peak_epoch == peak_epoch_ ? site.at_peak_bytes : site.live_bytes;
    SiteFigures figures{};
    figures.stack = site.stack;
    figures.kind = site.kind;
    figures.live_bytes = site.live_bytes;
    figures.live_count = units_to_count(site.live_units);
    figures.total_bytes = site.total_bytes;
    figures.total_count = units_to_count(site.total_units);
    figures.peak_bytes = site.peak_bytes;
    figures.bytes_at_peak = at_peak;
    snapshot.sites.push_back(figures);
  }
  snapshot.in_use_bytes = in_use_bytes_;
  snapshot.peak_in_use_bytes = peak_in_use_bytes_;
  snapshot.peak_time_ns = peak_time_ns_;
  snapshot.stack_count = stacks_.stack_count();
  return snapshot;
}

void Tracker::live_bytes_by_site(std::vector<uint64_t>* out) const {
  constexpr size_t kSitesPerHold = 4096;
  out->clear();
  for (size_t begin = 0;; begin += kSitesPerHold) {
    std::lock_guard<std::mutex> lock(figures_mutex_);
    const size_t end = std::min(sites_.size(), begin + kSitesPerHold);
    for (size_t i = begin; i < end; ++i) out->push_back(sites_[i].live_bytes);
    if (end == sites_.size()) return;
  }
}

Tracker::LiveLeaders Tracker::live_leaders(size_t count) const {
  LiveLeaders leaders;
  std::vector<uint32_t> top;  // site indices, most live bytes first, at most `count`
  top.reserve(count + 1);
  std::lock_guard<std::mutex> lock(figures_mutex_);
  for (uint32_t index = 0; index < sites_.size(); ++index) {
    const Site& site = sites_[index];
    leaders.live_bytes_by_kind[static_cast<int>(site.kind)] += site.live_bytes;
    if (site.live_bytes == 0) continue;
    if (top.size() == count && sites_[top.back()].live_bytes >= site.live_bytes) continue;
    auto at = std::upper_bound(top.begin(), top.end(), index, [&](uint32_t a, uint32_t b) {
      return sites_[a].live_bytes > sites_[b].live_bytes;
    });
    top.insert(at, index);
    if (top.size() > count) top.pop_back();
  }
  for (uint32_t index : top) {
    const Site& site = sites_[index];
    SiteFigures figures{};
    figures.stack = site.stack;
    figures.kind = site.kind;
    figures.live_bytes = site.live_bytes;
    figures.live_count = units_to_count(site.live_units);
    leaders.sites.push_back(figures);
  }
  return leaders;
}

TrackerMemory Tracker::memory_usage() const {
  TrackerMemory memory{};
  memory.live_allocations = live_.size();
  memory.live_table_bytes = live_.memory_bytes();
  memory.stacks = stacks_.stack_count();
  memory.stack_table_bytes = stacks_.memory_bytes();
  std::lock_guard<std::mutex> lock(figures_mutex_);
  memory.sites = sites_.size();
  memory.site_bytes = sites_.capacity() * sizeof(Site) + site_by_stack_and_kind_.memory_bytes();
  return memory;
}

uint64_t Tracker::in_use_bytes() const {
  std::lock_guard<std::mutex> lock(figures_mutex_);
  return in_use_bytes_;
}

}  // namespace vramshim::attribution
