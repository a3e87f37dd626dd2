#include "shim/oom/verdict.h"

#include <algorithm>

#include "shim/oom/human_bytes.h"

namespace vramshim::oom {

namespace {

// What this process holds of the device as far as the shim knows: its pool and what the driver
// serves it directly.
uint64_t held_by_this_process(const OutOfMemoryFacts& facts) {
  return facts.reserved_bytes + facts.direct_bytes;
}

bool larger_than_the_device(const OutOfMemoryFacts& facts) {
  return facts.device_total_bytes && facts.request.bytes > *facts.device_total_bytes;
}

}  // namespace

uint64_t held_elsewhere_bytes(const OutOfMemoryFacts& facts) {
  if (!facts.device_total_bytes || !facts.device_free_bytes) return 0;
  const uint64_t total = *facts.device_total_bytes;
  const uint64_t used = total > *facts.device_free_bytes ? total - *facts.device_free_bytes : 0;
  // The driver's own memory for this process (its context, its modules: hundreds of MiB on a GPU)
  // is no other process's.
  const uint64_t mine = std::max(held_by_this_process(facts), facts.own_used_bytes.value_or(0));
  return used > mine ? used - mine : 0;
}

Verdict judge(const OutOfMemoryFacts& facts) {
  const uint64_t requested = facts.request.bytes;
  if (facts.request.cause == pool::OutOfMemoryCause::kLimit) return Verdict::kLimit;
  if (facts.request.cause == pool::OutOfMemoryCause::kTooLarge || larger_than_the_device(facts)) {
    return Verdict::kTooLarge;
  }
  const uint64_t elsewhere = held_elsewhere_bytes(facts);
  if (elsewhere >= requested && elsewhere >= held_by_this_process(facts)) {
    return Verdict::kHeldElsewhere;
  }
  if (facts.pool_free_bytes >= requested && facts.pool_largest_free_block < requested) {
    return Verdict::kFragmentation;
  }
  return Verdict::kExhaustion;
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLimit:
      return "limit";
    case Verdict::kTooLarge:
      return "too_large";
    case Verdict::kHeldElsewhere:
      return "held_elsewhere";
    case Verdict::kFragmentation:
      return "fragmentation";
    case Verdict::kExhaustion:
      return "exhaustion";
  }
  return "exhaustion";
}

std::string describe(Verdict verdict, const OutOfMemoryFacts& facts) {
  const std::string request = human_bytes(facts.request.bytes);
  // A capture forbids handing the cache back to the driver, which would have made room, and the
  // fences that make blocks freed during it reusable: those wait for its end.
  const std::string capture =
      facts.request.during_capture && facts.cached_bytes > 0
          ? "; a stream capture was running, so the pool could not hand back its " +
                human_bytes(facts.cached_bytes) +
                " cached (free blocks, and blocks freed during the capture, which wait for its "
                "end)"
          : "";
  switch (verdict) {
    case Verdict::kLimit: {
      std::string text = "limit: VRAMSHIM_LIMIT is " + human_bytes(facts.limit_bytes.value_or(0)) +
                         " and this process has " +
                         human_bytes(facts.in_use_bytes + facts.direct_charged_bytes) + " in use";
      if (facts.direct_charged_bytes > 0) {
        text += " (" + human_bytes(facts.direct_charged_bytes) +
                " of it stream-ordered or VMM memory the driver serves)";
      }
      return text;
    }
    case Verdict::kTooLarge:
      if (larger_than_the_device(facts)) {
        return "too large: " + request + " is more than the device's " +
               human_bytes(*facts.device_total_bytes) + " in all";
      }
      return "too large: no allocation can be " + request;
    case Verdict::kHeldElsewhere:
      return "memory held elsewhere: the device's used memory exceeds this process's by " +
             human_bytes(held_elsewhere_bytes(facts)) + capture;
    case Verdict::kFragmentation:
      return "fragmentation: the pool holds " + human_bytes(facts.pool_free_bytes) +
             " free, but no free block of " + request + " (the largest is " +
             human_bytes(facts.pool_largest_free_block) + ")" + capture;
    case Verdict::kExhaustion: {
      std::string text = "exhaustion by this process: it holds " +
                         human_bytes(held_by_this_process(facts)) + " of the device";
      if (const uint64_t elsewhere = held_elsewhere_bytes(facts); elsewhere > 0) {
        // Without NVML's figure for this process, its own CUDA context counts as elsewhere.
        text += " (" + human_bytes(elsewhere) + " more in use elsewhere: " +
                (facts.own_used_bytes ? "other processes)" : "other processes, CUDA contexts)");
      }
      return text + capture;
    }
  }
  return {};
}

}  // namespace vramshim::oom
