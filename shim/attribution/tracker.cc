#include "shim/attribution/tracker.h"

#include <time.h>

#include <algorithm>

#include "shim/support/deferred_cancellation.h"
#include "shim/support/room_for_one_more.h"

namespace vramshim::attribution {
namespace {

// The coarse clock (a few ms resolution) costs a fraction of the precise one, and the peak's time
// needs no finer resolution.
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
      sampler_(options.sample_bytes, options.sample_seed),
      stacks_(options.stack_table_bytes) {}

int32_t Tracker::capture_stack() {
  if (options_.stacks == StackMode::kOff) return -1;
  StackCapture::Buffer buffer;
  const StackCapture::Frames native = [&] {
    // libunwind may read a file or validate an address through a pipe: cancellation points.
    const support::DeferredCancellation deferred;
    return capture_.capture(buffer);
  }();
  if (options_.rewrite_stack != nullptr) {
    // Room for the deepest stack and the frame that says it was cut.
    uint64_t rewritten[StackCapture::kMaxDepth + 1];
    RewrittenStack kept = options_.rewrite_stack(native, rewritten, capture_.depth());
    if (kept.cut) rewritten[kept.depth++] = StackTable::kCutAddress;
    return static_cast<int32_t>(stacks_.intern(rewritten, kept.depth));
  }
  if (!native.cut) return static_cast<int32_t>(stacks_.intern(native.frames, native.depth));
  // The frame past the depth, in the buffer, makes room for the one that says it was cut.
  uint64_t* const kept = buffer.data() + (native.frames - buffer.data());
  kept[native.depth] = StackTable::kCutAddress;
  return static_cast<int32_t>(stacks_.intern(kept, native.depth + 1));
}

void Tracker::on_alloc(uint64_t key, uint64_t size, AllocationKind kind, int device,
                       uint64_t stream) noexcept {
  if (key == 0) return;
  if (options_.stacks == StackMode::kSample && !sampler_.should_sample(size)) return;
  try {
    record_alloc(key, size, kind, device, stream, capture_stack());
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

uint32_t Tracker::tag_locked(uint64_t request, uint64_t size, int device, int32_t* site,
                             SiteLedger* ledger) noexcept {
  const int index = partition_of_device(device);
  Partition& partition = partitions_[index];
  uint32_t tag = 0;
  try {
    tag = tag_for_key(partition, index, request);
  } catch (...) {
    *site = -1;
    return 0;  // out of host memory for a new site: untracked
  }
  add(tag, weight_of(size));
  *site = static_cast<int32_t>(partition.global_site[local_of_tag(tag)]);
  if (ledger != nullptr && ledger->lock() != nullptr) {
    std::lock_guard<support::AdaptiveMutex> guard(*ledger->lock());
    if (ledger->find(request) == nullptr && ledger->add(request, tag, *site) == nullptr) {
      // Full: fold and start over with the sites the thread uses now.
      fold_ledger(partition, *ledger);
      ledger->clear();
      ledger->add(request, tag, *site);
    }
  }
  return tag;
}

SiteLedger* Tracker::open_ledger(int device, support::AdaptiveMutex& cache_lock) noexcept {
  const int index = partition_of_device(device);
  Partition& partition = partitions_[index];
  SiteLedger* chosen = nullptr;
  for (const auto& ledger : partition.ledgers) {
    if (ledger->lock() == nullptr) {
      chosen = ledger.get();
      break;
    }
  }
  if (chosen == nullptr) {
    try {
      support::make_room_for_one_more(partition.ledgers);
      partition.ledgers.push_back(std::make_unique<SiteLedger>(index));
    } catch (...) {
      return nullptr;
    }
    chosen = partition.ledgers.back().get();
  }
  chosen->assign(&cache_lock);
  return chosen;
}

void Tracker::close_ledger(SiteLedger& ledger) noexcept {
  Partition& partition = partitions_[ledger.partition()];
  {
    std::lock_guard<support::AdaptiveMutex> guard(*ledger.lock());
    fold_ledger(partition, ledger);
    ledger.clear();
  }
  ledger.assign(nullptr);
}

uint64_t Tracker::request_of_tag(uint32_t tag) const {
  return partitions_[partition_of_tag(tag)].site_key[local_of_tag(tag)];
}

void Tracker::fold_ledgers(Partition& partition) const {
  for (const auto& ledger : partition.ledgers) {
    if (ledger->lock() == nullptr || !ledger->owes()) continue;
    std::lock_guard<support::AdaptiveMutex> guard(*ledger->lock());
    fold_ledger(partition, *ledger);
  }
}

void Tracker::fold_ledger(Partition& partition, SiteLedger& ledger) const {
  ledger.set_owes(false);
  ledger.for_each([&partition](SiteLedger::Entry& entry) {
    Site& site = partition.sites[local_of_tag(entry.tag)];
    sync_peak_snapshot(partition, site);
    // Credit only ever lowers the live bytes: no peak moves.
    site.live_bytes -= entry.credit_bytes;
    site.live_units += static_cast<uint64_t>(entry.live_units);
    site.total_bytes += entry.total_bytes;
    site.total_units += entry.total_units;
    partition.in_use_bytes -= entry.credit_bytes;
    entry.credit_bytes = 0;
    entry.live_units = 0;
    entry.total_bytes = 0;
    entry.total_units = 0;
  });
}

int32_t Tracker::untag_locked(uint32_t tag, uint64_t size) noexcept {
  return subtract(tag, weight_of(size));
}

void Tracker::untag(uint32_t tag, uint64_t size) noexcept {
  std::lock_guard<support::AdaptiveMutex> lock(partitions_[partition_of_tag(tag)].mutex);
  subtract(tag, weight_of(size));
}

void Tracker::on_alloc_with_frames(uint64_t key, uint64_t size, AllocationKind kind, int device,
                                   uint64_t stream, const uint64_t* frames, int depth) noexcept {
  if (key == 0) return;
  if (options_.stacks == StackMode::kSample && !sampler_.should_sample(size)) return;
  try {
    const int32_t stack =
        options_.stacks == StackMode::kOff
            ? -1
            : static_cast<int32_t>(stacks_.intern(frames, std::clamp(depth, 0, capture_.depth())));
    record_alloc(key, size, kind, device, stream, stack);
  } catch (...) {
    // Out of host memory: this allocation goes untracked, as if it were not sampled.
  }
}

void Tracker::record_alloc(uint64_t key, uint64_t size, AllocationKind kind, int device,
                           uint64_t stream, int32_t stack) {
  const int index = partition_of_device(device);
  Partition& partition = partitions_[index];
  uint32_t tag;
  {
    std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
    tag = tag_for_key(partition, index, site_key(stack, kind));
    add(tag, weight_of(size));
  }
  std::optional<LiveAllocation> replaced;
  try {
    replaced = live_.insert(LiveAllocation{key, size, stream, tag, device});
  } catch (...) {
    untag(tag, size);
    throw;
  }
  if (replaced) {
    // The key was handed out again without a free we saw: retire the old allocation.
    untag(replaced->site, replaced->size);
  }
}

void Tracker::on_free(uint64_t key) noexcept {
  if (const std::optional<LiveAllocation> freed = take(key)) end_free(*freed);
}

std::optional<LiveAllocation> Tracker::take(uint64_t key) noexcept {
  if (key == 0) return std::nullopt;
  return live_.erase(key);
}

void Tracker::end_free(const LiveAllocation& taken) noexcept { untag(taken.site, taken.size); }

void Tracker::restore(const LiveAllocation& taken) noexcept {
  try {
    if (const std::optional<LiveAllocation> replaced = live_.insert(taken)) {
      untag(replaced->site, replaced->size);
    }
  } catch (...) {
    end_free(taken);  // out of host memory: the allocation goes untracked from now
  }
}

std::optional<LiveAllocation> Tracker::find(uint64_t key) const {
  if (key == 0) return std::nullopt;
  std::optional<LiveAllocation> live = live_.find(key);
  if (live) live = with_global_site(*live);
  return live;
}

LiveAllocation Tracker::with_global_site(LiveAllocation live) const {
  const Partition& partition = partitions_[partition_of_tag(live.site)];
  std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
  live.site = partition.global_site[local_of_tag(live.site)];
  return live;
}

uint64_t Tracker::site_key(int32_t stack, AllocationKind kind) {
  // Stacks start at -1 (none), so the key is never 0, which marks an empty slot (and "untracked").
  return (static_cast<uint64_t>(static_cast<int64_t>(stack) + 2) << 3) |
         static_cast<uint64_t>(kind);
}

int32_t Tracker::stack_of_key(uint64_t key) {
  return static_cast<int32_t>(static_cast<int64_t>(key >> 3) - 2);
}

AllocationKind Tracker::kind_of_key(uint64_t key) { return static_cast<AllocationKind>(key & 7); }

uint32_t Tracker::make_tag(int partition, uint32_t local) {
  return (static_cast<uint32_t>(partition) << kLocalBits) | (local + 1);
}

int Tracker::partition_of_device(int device) { return std::clamp(device, 0, kPartitions - 1); }

uint32_t Tracker::tag_for_key(Partition& partition, int index, uint64_t key) {
  if (const SiteEntry* entry = partition.local_by_key.find(key)) return entry->site;
  const auto local = static_cast<uint32_t>(partition.sites.size());
  if (local + 1 >= (1u << kLocalBits)) throw std::bad_alloc();
  const uint32_t global = global_site_for_key(key);
  support::make_room_for_one_more(partition.global_site);
  support::make_room_for_one_more(partition.site_key);
  partition.sites.push_back(Site{0, 0, 0, 0, 0, 0, partition.peak_epoch});
  partition.global_site.push_back(global);
  partition.site_key.push_back(key);
  const uint32_t tag = make_tag(index, local);
  try {
    partition.local_by_key.insert({key, tag});
  } catch (...) {
    partition.sites.pop_back();
    partition.global_site.pop_back();
    partition.site_key.pop_back();
    throw;
  }
  return tag;
}

uint32_t Tracker::global_site_for_key(uint64_t key) {
  std::lock_guard<std::mutex> lock(sites_mutex_);
  if (const SiteEntry* entry = global_by_key_.find(key)) return entry->site;
  const auto global = static_cast<uint32_t>(site_keys_.size());
  site_keys_.push_back(key);
  try {
    global_by_key_.insert({key, global});
  } catch (...) {
    site_keys_.pop_back();
    throw;
  }
  return global;
}

void Tracker::sync_peak_snapshot(const Partition& partition, Site& site) {
  if (site.at_peak_epoch == partition.peak_epoch) return;
  site.at_peak_bytes = site.live_bytes;
  site.at_peak_epoch = partition.peak_epoch;
}

inline void Tracker::add(uint32_t tag, AllocationWeight weight) {
  Partition& partition = partitions_[partition_of_tag(tag)];
  Site& site = partition.sites[local_of_tag(tag)];
  // With ledgers' credit outstanding the figures are above the true ones: a new peak, the device's
  // or the site's, is made only with every ledger folded in, so it is the true one and every
  // site's bytes at it are too.
  if (!partition.ledgers.empty() &&
      (partition.in_use_bytes + weight.bytes > partition.peak_in_use_bytes ||
       site.live_bytes + weight.bytes > site.peak_bytes)) {
    fold_ledgers(partition);
  }
  sync_peak_snapshot(partition, site);
  site.live_bytes += weight.bytes;
  site.live_units += weight.count_units;
  site.total_bytes += weight.bytes;
  site.total_units += weight.count_units;
  site.peak_bytes = std::max(site.peak_bytes, site.live_bytes);
  partition.in_use_bytes += weight.bytes;
  if (partition.in_use_bytes > partition.peak_in_use_bytes) {
    partition.peak_in_use_bytes = partition.in_use_bytes;
    // Read only at a new peak: a pool hit below the peak pays no clock read.
    partition.peak_time_ns = realtime_ns();
    ++partition.peak_epoch;
  }
}

int32_t Tracker::subtract(uint32_t tag, AllocationWeight weight) {
  Partition& partition = partitions_[partition_of_tag(tag)];
  const uint32_t local = local_of_tag(tag);
  Site& site = partition.sites[local];
  sync_peak_snapshot(partition, site);
  site.live_bytes -= weight.bytes;
  site.live_units -= weight.count_units;
  partition.in_use_bytes -= weight.bytes;
  return static_cast<int32_t>(partition.global_site[local]);
}

TrackerSnapshot Tracker::snapshot() const {
  TrackerSnapshot snapshot{};
  for (Partition& partition : partitions_) {
    std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
    fold_ledgers(partition);
    for (size_t local = 0; local < partition.sites.size(); ++local) {
      const uint32_t global = partition.global_site[local];
      if (global >= snapshot.sites.size()) snapshot.sites.resize(global + 1);
      const Site& site = partition.sites[local];
      SiteFigures& figures = snapshot.sites[global];
      figures.live_bytes += site.live_bytes;
      figures.live_count += site.live_units;  // units until the end
      figures.total_bytes += site.total_bytes;
      figures.total_count += site.total_units;
      figures.peak_bytes += site.peak_bytes;
      figures.bytes_at_peak +=
          site.at_peak_epoch == partition.peak_epoch ? site.at_peak_bytes : site.live_bytes;
    }
    snapshot.in_use_bytes += partition.in_use_bytes;
    snapshot.peak_in_use_bytes += partition.peak_in_use_bytes;
    snapshot.peak_time_ns = std::max(snapshot.peak_time_ns, partition.peak_time_ns);
  }
  {
    // Sites that a device added since are in site_keys_ too; those no device has used yet are not.
    std::lock_guard<std::mutex> lock(sites_mutex_);
    snapshot.sites.resize(std::max(snapshot.sites.size(), site_keys_.size()));
    for (size_t global = 0; global < snapshot.sites.size(); ++global) {
      SiteFigures& figures = snapshot.sites[global];
      figures.stack = stack_of_key(site_keys_[global]);
      figures.kind = kind_of_key(site_keys_[global]);
      figures.live_count = units_to_count(figures.live_count);
      figures.total_count = units_to_count(figures.total_count);
    }
  }
  snapshot.stack_count = stacks_.stack_count();
  return snapshot;
}

template <typename Visit>
void Tracker::visit_sites_in_holds(Visit visit, int device) const {
  const int first = device >= 0 ? partition_of_device(device) : 0;
  const int last = device >= 0 ? first : kPartitions - 1;
  for (int index = first; index <= last; ++index) {
    Partition& partition = partitions_[index];
    for (size_t begin = 0;; begin += kSitesPerHold) {
      if (begin != 0 && options_.between_site_holds != nullptr) {
        options_.between_site_holds(index);
      }
      std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
      if (begin == 0) fold_ledgers(partition);
      const size_t end = std::min(partition.sites.size(), begin + kSitesPerHold);
      for (size_t local = begin; local < end; ++local) visit(partition, local);
      if (end == partition.sites.size()) break;
    }
  }
}

void Tracker::live_bytes_by_site(std::vector<uint64_t>* out) const {
  out->clear();
  visit_sites_in_holds([out](const Partition& partition, size_t local) {
    const uint32_t global = partition.global_site[local];
    if (global >= out->size()) out->resize(global + 1);
    (*out)[global] += partition.sites[local].live_bytes;
  });
}

Tracker::LiveLeaders Tracker::live_leaders(size_t count, LeaderScope scope) const {
  LiveLeaders leaders;
  std::vector<uint64_t> live, live_units;  // by global site
  visit_sites_in_holds(
      [&live, &live_units](const Partition& partition, size_t local) {
        const uint32_t global = partition.global_site[local];
        if (global >= live.size()) {
          live.resize(global + 1);
          live_units.resize(global + 1);
        }
        live[global] += partition.sites[local].live_bytes;
        live_units[global] += partition.sites[local].live_units;
      },
      scope.device);
  std::vector<uint64_t> keys;
  {
    std::lock_guard<std::mutex> lock(sites_mutex_);
    keys.assign(site_keys_.begin(), site_keys_.begin() + live.size());
  }
  std::vector<uint32_t> top;  // global sites, most live bytes first, at most `count`
  top.reserve(count + 1);
  for (uint32_t global = 0; global < live.size(); ++global) {
    const AllocationKind kind = kind_of_key(keys[global]);
    leaders.live_bytes_by_kind[static_cast<int>(kind)] += live[global];
    if (live[global] == 0 || (scope.device_memory_only && kind == AllocationKind::kHost)) continue;
    ++leaders.live_sites;
    if (top.size() == count && live[top.back()] >= live[global]) continue;
    auto at = std::upper_bound(top.begin(), top.end(), global,
                               [&](uint32_t a, uint32_t b) { return live[a] > live[b]; });
    top.insert(at, global);
    if (top.size() > count) top.pop_back();
  }
  for (uint32_t global : top) {
    SiteFigures figures{};
    figures.stack = stack_of_key(keys[global]);
    figures.kind = kind_of_key(keys[global]);
    figures.live_bytes = live[global];
    figures.live_count = units_to_count(live_units[global]);
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
  for (const Partition& partition : partitions_) {
    std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
    memory.site_bytes += partition.sites.capacity() * sizeof(Site) +
                         partition.global_site.capacity() * sizeof(uint32_t) +
                         partition.site_key.capacity() * sizeof(uint64_t) +
                         partition.local_by_key.memory_bytes() +
                         partition.ledgers.size() * sizeof(SiteLedger);
  }
  std::lock_guard<std::mutex> lock(sites_mutex_);
  memory.sites = site_keys_.size();
  memory.site_bytes += site_keys_.capacity() * sizeof(uint64_t) + global_by_key_.memory_bytes();
  return memory;
}

uint64_t Tracker::in_use_bytes() const {
  uint64_t total = 0;
  for (Partition& partition : partitions_) {
    std::lock_guard<support::AdaptiveMutex> lock(partition.mutex);
    fold_ledgers(partition);
    total += partition.in_use_bytes;
  }
  return total;
}

}  // namespace vramshim::attribution
