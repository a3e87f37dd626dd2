#include "shim/oom/verdict.h"

#include "shim/oom/human_bytes.h"

namespace vramshim::oom {

uint64_t held_elsewhere_bytes(const OutOfMemoryFacts& facts) {
  if (!facts.device_total_bytes || !facts.device_free_bytes) return 0;
  const uint64_t total = *facts.device_total_bytes;
  const uint64_t used = total > *facts.device_free_bytes ? total - *facts.device_free_bytes : 0;
  const uint64_t mine = facts.reserved_bytes + facts.direct_bytes;
  return used > mine ? used - mine : 0;
}

Verdict judge(const OutOfMemoryFacts& facts) {
  const uint64_t requested = facts.request.bytes;
  if (facts.request.cause == pool::OutOfMemoryCause::kLimit) return Verdict::kLimit;
  if (facts.request.cause == pool::OutOfMemoryCause::kTooLarge) return Verdict::kTooLarge;
  const uint64_t elsewhere = held_elsewhere_bytes(facts);
  const uint64_t mine = facts.reserved_bytes + facts.direct_bytes;
  if (elsewhere >= requested && elsewhere >= mine) return Verdict::kHeldElsewhere;
  if (facts.pool_free_bytes >= requested && facts.pool_largest_free_block < requested) {
    return Verdict::kFragmentation;
  }
  if (elsewhere >= requested) return Verdict::kHeldElsewhere;
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
  switch (verdict) {
    case Verdict::kLimit:
      return "limit: VRAMSHIM_LIMIT is " + human_bytes(facts.limit_bytes.value_or(0)) +
             " and this process has " + human_bytes(facts.in_use_bytes) + " in use";
    case Verdict::kTooLarge:
      return "too large: no allocation can be " + request;
    case Verdict::kHeldElsewhere:
      return "memory held elsewhere: the device's used memory exceeds this process's by " +
             human_bytes(held_elsewhere_bytes(facts));
    case Verdict::kFragmentation:
      return "fragmentation: the pool holds " + human_bytes(facts.pool_free_bytes) +
             " free, but no free block of " + request + " (the largest is " +
             human_bytes(facts.pool_largest_free_block) + ")";
    case Verdict::kExhaustion:
      return "exhaustion by this process: it holds " +
             human_bytes(facts.reserved_bytes + facts.direct_bytes) + " of the device";
  }
  return {};
}

}  // namespace vramshim::oom
