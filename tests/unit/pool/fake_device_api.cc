#include "tests/unit/pool/fake_device_api.h"

#include <algorithm>
#include <atomic>

namespace vramshim::pool::testing {

namespace {

// Each fake context hands out addresses of its own, as separate contexts' allocations never
// overlap.
CUdeviceptr next_address_range() {
  static std::atomic<uint64_t> instances{0};
  return 0x100000000000 + (instances.fetch_add(1) % 64) * 0x10000000000;
}

}  // namespace

FakeDeviceApi::FakeDeviceApi(uint64_t capacity_bytes, const CaptureState* capture)
    : capture_(capture), capacity_(capacity_bytes), next_ptr_(next_address_range()) {}

FakeDeviceApi::~FakeDeviceApi() = default;

void FakeDeviceApi::note_capture_violation() {
  if (capture_ != nullptr && capture_->active()) ++counters_.during_capture;
}

CUresult FakeDeviceApi::allocate(size_t bytes, CUdeviceptr* ptr) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.allocate;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (live_bytes_ + bytes > capacity_) {
    ++counters_.failed_allocate;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *ptr = next_ptr_;
  // Leave a gap so that two allocations are never adjacent.
  next_ptr_ += (bytes + (size_t{4} << 20)) & ~((size_t{2} << 20) - 1);
  allocations_[*ptr] = bytes;
  live_bytes_ += bytes;
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::free(CUdeviceptr ptr) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.free;
  note_capture_violation();
  const auto it = allocations_.find(ptr);
  if (it == allocations_.end()) {
    ++counters_.bad_free;
    return CUDA_ERROR_INVALID_VALUE;
  }
  live_bytes_ -= it->second;
  freed_bytes_ += it->second;
  allocations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::free_segment(CUdeviceptr ptr) {
  if (capture_ != nullptr && capture_->active()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return free(ptr);
}

CUresult FakeDeviceApi::create_event(CUevent* event) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.create_event;
  *event = reinterpret_cast<CUevent>(next_event_++);
  events_[*event] = EventState{};
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::record_event(CUevent event, CUstream stream) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.record_event;
  note_capture_violation();
  const auto it = events_.find(event);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (is_legacy(stream)) stream = CU_STREAM_LEGACY;
  // A record takes part in its stream's order (on the legacy stream it waits for the blocking
  // streams) but is no work of its own: it completes once what it is ordered after has finished.
  it->second = {stream, order(stream, /*counts_as_work=*/false)};
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::query_event(CUevent event) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.query_event;
  note_capture_violation();
  const auto it = events_.find(event);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  for (const auto& [stream, seq] : it->second.after) {
    if (streams_[stream].finished < seq) return CUDA_ERROR_NOT_READY;
  }
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::synchronize_event(CUevent event) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.synchronize_event;
  note_capture_violation();
  const auto it = events_.find(event);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  finish(it->second.after);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::wait_event(CUstream stream, CUevent event) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.wait_event;
  const auto it = events_.find(event);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (is_legacy(stream)) stream = CU_STREAM_LEGACY;
  // Later work of the stream is ordered after what the event is ordered after.
  Clock& tail = streams_[stream].tail;
  for (const auto& [other, seq] : it->second.after) tail[other] = std::max(tail[other], seq);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::destroy_event(CUevent event) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.destroy_event;
  return events_.erase(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeDeviceApi::synchronize_context() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.synchronize_context;
  note_capture_violation();
  for (auto& [stream, state] : streams_) {
    if (state.other_context == nullptr) state.finished = state.queued;
  }
  forget_finished_writes();
  return CUDA_SUCCESS;
}

CUresult FakeDeviceApi::synchronize_other_context(CUcontext other) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.synchronize_other_context;
  note_capture_violation();
  for (auto& [stream, state] : streams_) {
    if (state.other_context == other) state.finished = state.queued;
  }
  forget_finished_writes();
  return CUDA_SUCCESS;
}

uint64_t FakeDeviceApi::trim_stream_ordered_pools() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.trim;
  return 0;
}

bool FakeDeviceApi::push_current() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (push_fails_) return false;
  ++counters_.push;
  return true;
}

void FakeDeviceApi::set_push_fails(bool fails) {
  std::lock_guard<std::mutex> guard(mutex_);
  push_fails_ = fails;
}

void FakeDeviceApi::pop_current() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++counters_.pop;
}

void FakeDeviceApi::make_non_blocking(CUstream stream) {
  std::lock_guard<std::mutex> guard(mutex_);
  streams_[stream].non_blocking = true;
}

void FakeDeviceApi::make_other_context_stream(CUstream stream, CUcontext other) {
  std::lock_guard<std::mutex> guard(mutex_);
  streams_[stream].other_context = other;
}

void FakeDeviceApi::destroy_stream(CUstream stream) {
  std::lock_guard<std::mutex> guard(mutex_);
  streams_[stream].destroyed = true;
}

const FakeDeviceApi::Clock& FakeDeviceApi::order(CUstream stream, bool counts_as_work) {
  StreamState& state = streams_[stream];
  Clock after = state.tail;
  auto merge = [&after](const Clock& other) {
    for (const auto& [s, seq] : other) after[s] = std::max(after[s], seq);
  };
  if (is_legacy(stream)) {
    for (const auto& [other, other_state] : streams_) {
      if (!is_legacy(other) && !other_state.non_blocking && !other_state.destroyed &&
          other_state.other_context == nullptr) {
        merge(other_state.tail);
      }
    }
  } else if (!state.non_blocking && state.other_context == nullptr) {
    merge(streams_[CU_STREAM_LEGACY].tail);
  }
  if (counts_as_work) after[stream] = ++state.queued;
  state.tail = std::move(after);
  return state.tail;
}

void FakeDeviceApi::finish(const Clock& clock) {
  for (const auto& [stream, seq] : clock) {
    StreamState& state = streams_[stream];
    state.finished = std::max(state.finished, seq);
  }
  forget_finished_writes();
}

void FakeDeviceApi::queue_work(CUstream stream, CUdeviceptr ptr, size_t bytes) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (is_legacy(stream)) stream = CU_STREAM_LEGACY;
  const Clock after = order(stream, /*counts_as_work=*/true);
  if (bytes == 0) return;
  for (const QueuedWrite& write : writes_) {
    const bool overlaps = write.ptr < ptr + bytes && ptr < write.ptr + write.bytes;
    const auto ordered = after.find(write.stream);
    if (overlaps && (ordered == after.end() || ordered->second < write.sequence)) {
      ++counters_.conflicts;
    }
  }
  writes_.push_back({stream, after.at(stream), ptr, bytes});
}

void FakeDeviceApi::finish_work(CUstream stream) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (is_legacy(stream)) stream = CU_STREAM_LEGACY;
  const Clock tail = streams_[stream].tail;
  finish(tail);
}

void FakeDeviceApi::finish_all_work() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& [stream, state] : streams_) state.finished = state.queued;
  writes_.clear();
}

void FakeDeviceApi::forget_finished_writes() {
  writes_.erase(std::remove_if(writes_.begin(), writes_.end(),
                               [this](const QueuedWrite& write) {
                                 return streams_[write.stream].finished >= write.sequence;
                               }),
                writes_.end());
}

bool FakeDeviceApi::has_unfinished_write(CUdeviceptr ptr, size_t bytes) const {
  std::lock_guard<std::mutex> guard(mutex_);
  for (const QueuedWrite& write : writes_) {
    if (write.ptr < ptr + bytes && ptr < write.ptr + write.bytes) return true;
  }
  return false;
}

void FakeDeviceApi::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> guard(mutex_);
  capacity_ = bytes;
}

void FakeDeviceApi::destroy_context() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (const auto& [ptr, size] : allocations_) freed_bytes_ += size;
  allocations_.clear();
  live_bytes_ = 0;
  events_.clear();
}

FakeDeviceApi::Counters FakeDeviceApi::counters() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return counters_;
}

uint64_t FakeDeviceApi::live_bytes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return live_bytes_;
}

uint64_t FakeDeviceApi::freed_bytes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return freed_bytes_;
}

size_t FakeDeviceApi::live_event_count() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return events_.size();
}

std::optional<FakeDeviceApi::Allocation> FakeDeviceApi::allocation_containing(
    CUdeviceptr ptr) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin()) return std::nullopt;
  --it;
  if (ptr >= it->first + it->second) return std::nullopt;
  return Allocation{it->first, it->second};
}

}  // namespace vramshim::pool::testing
