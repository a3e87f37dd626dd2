#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vramshim::pool::testing {

// One allocation or free of a replayed workload. `id` names the tensor (unique over the whole
// replay).
struct WorkloadOp {
  bool allocate;
  uint32_t id;
  size_t bytes;
};

// A workload shaped like training steps of an 8-layer network, generated deterministically from
// `seed`: per step 175 allocations of 512 B to 64 MiB (forward activations kept for backward,
// temporaries, weight gradients kept until the optimizer step), freed in an order that differs from
// the allocation order. Every step repeats the same tensor sizes, as training does.
std::vector<WorkloadOp> training_workload(uint32_t seed, int steps);

size_t count_allocations(const std::vector<WorkloadOp>& ops);
// The most bytes live at once, summing the requested sizes rounded up to `granularity`.
uint64_t peak_live_bytes(const std::vector<WorkloadOp>& ops, size_t granularity);

}  // namespace vramshim::pool::testing
