#include "tests/unit/pool/training_workload.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>

namespace vramshim::pool::testing {

namespace {

constexpr int kLayers = 8;
constexpr int kActivationsPerLayer = 4;
constexpr int kForwardTemporaries = 4;
constexpr int kBackwardTemporaries = 6;
constexpr int kGradientsPerLayer = 4;
constexpr int kOptimizerTemporaries = 31;

// Builds one step as operations on slot numbers; sizes are per slot and the same every step.
class StepBuilder {
 public:
  explicit StepBuilder(uint32_t seed) : rng_(seed) {}

  std::vector<WorkloadOp> build() {
    // Every layer has the same shapes, so one set of sizes per role serves all layers.
    const std::vector<size_t> activation_sizes = draw_sizes(kActivationsPerLayer);
    const std::vector<size_t> forward_sizes = draw_sizes(kForwardTemporaries);
    const std::vector<size_t> backward_sizes = draw_sizes(kBackwardTemporaries);
    const std::vector<size_t> gradient_sizes = draw_sizes(kGradientsPerLayer);
    std::vector<std::vector<int>> activations(kLayers);
    for (int layer = 0; layer < kLayers; ++layer) {
      for (size_t bytes : activation_sizes) activations[layer].push_back(allocate(bytes));
      interleave(new_slots(forward_sizes));
    }
    std::vector<int> gradients;
    for (int layer = kLayers - 1; layer >= 0; --layer) {
      interleave(new_slots(backward_sizes));
      for (size_t bytes : gradient_sizes) gradients.push_back(allocate(bytes));
      free_shuffled(activations[layer]);
    }
    // The optimizer frees gradients while it allocates and frees temporaries of its own sizes.
    std::shuffle(gradients.begin(), gradients.end(), rng_);
    size_t next_gradient = 0;
    for (int slot : new_slots(draw_sizes(kOptimizerTemporaries))) {
      allocate_slot(slot);
      free_slot(slot);
      if (next_gradient < gradients.size()) free_slot(gradients[next_gradient++]);
    }
    while (next_gradient < gradients.size()) free_slot(gradients[next_gradient++]);
    return ops_;
  }

 private:
  // Log-uniform over 512 B .. 64 MiB; odd sizes exercise rounding. The first two pin the ends.
  std::vector<size_t> draw_sizes(int count) {
    std::uniform_real_distribution<double> exponent(std::log(512.0), std::log(64.0 * (1 << 20)));
    std::vector<size_t> sizes;
    for (int i = 0; i < count; ++i) {
      if (drawn_ == 0) {
        sizes.push_back(size_t{64} << 20);
      } else if (drawn_ == 1) {
        sizes.push_back(512);
      } else {
        sizes.push_back(static_cast<size_t>(std::exp(exponent(rng_))) & ~size_t{3});
      }
      ++drawn_;
    }
    return sizes;
  }
  int allocate(size_t bytes) {
    const int slot = static_cast<int>(sizes_.size());
    sizes_.push_back(bytes);
    allocate_slot(slot);
    return slot;
  }
  std::vector<int> new_slots(const std::vector<size_t>& sizes) {
    std::vector<int> slots;
    for (size_t bytes : sizes) {
      slots.push_back(static_cast<int>(sizes_.size()));
      sizes_.push_back(bytes);
    }
    return slots;
  }
  void allocate_slot(int slot) {
    ops_.push_back({true, static_cast<uint32_t>(slot), sizes_[slot]});
  }
  void free_slot(int slot) { ops_.push_back({false, static_cast<uint32_t>(slot), sizes_[slot]}); }
  void free_shuffled(std::vector<int> slots) {
    std::shuffle(slots.begin(), slots.end(), rng_);
    for (int slot : slots) free_slot(slot);
  }
  // Allocates `slots` in order, freeing already allocated ones at random points in between, and the
  // rest at the end.
  void interleave(const std::vector<int>& slots) {
    std::vector<int> live;
    std::bernoulli_distribution free_now(0.5);
    for (int slot : slots) {
      allocate_slot(slot);
      live.push_back(slot);
      while (live.size() > 1 && free_now(rng_)) {
        std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
        const size_t index = pick(rng_);
        free_slot(live[index]);
        live.erase(live.begin() + index);
      }
    }
    free_shuffled(live);
  }

  std::mt19937 rng_;
  int drawn_ = 0;
  std::vector<size_t> sizes_;
  std::vector<WorkloadOp> ops_;
};

}  // namespace

std::vector<WorkloadOp> training_workload(uint32_t seed, int steps) {
  const std::vector<WorkloadOp> step = StepBuilder(seed).build();
  uint32_t slots = 0;
  for (const WorkloadOp& op : step) slots = std::max(slots, op.id + 1);
  std::vector<WorkloadOp> ops;
  ops.reserve(step.size() * steps);
  for (int i = 0; i < steps; ++i) {
    for (WorkloadOp op : step) {
      op.id += static_cast<uint32_t>(i) * slots;
      ops.push_back(op);
    }
  }
  return ops;
}

size_t count_allocations(const std::vector<WorkloadOp>& ops) {
  return std::count_if(ops.begin(), ops.end(), [](const WorkloadOp& op) { return op.allocate; });
}

uint64_t peak_live_bytes(const std::vector<WorkloadOp>& ops, size_t granularity) {
  uint64_t live = 0;
  uint64_t peak = 0;
  for (const WorkloadOp& op : ops) {
    const uint64_t bytes = (op.bytes + granularity - 1) / granularity * granularity;
    if (op.allocate) {
      live += bytes;
      peak = std::max(peak, live);
    } else {
      live -= bytes;
    }
  }
  return peak;
}

}  // namespace vramshim::pool::testing
