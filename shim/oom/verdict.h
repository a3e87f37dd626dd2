// Why an allocation failed, in one word and one sentence: the limit, fragmentation of the pool,
// memory held by other processes, or this process's own use.
#pragma once

#include <string>

#include "shim/oom/out_of_memory_facts.h"

namespace vramshim::oom {

enum class Verdict {
  kLimit,          // VRAMSHIM_LIMIT refused it
  kTooLarge,       // no allocation can be that large, or larger than the whole device
  kHeldElsewhere,  // other processes hold what the request needs
  kFragmentation,  // the pool holds enough free bytes, in blocks too small
  kExhaustion,     // this process holds the memory
};

// The rules, in order: the limit; a request too large for any allocation or for the whole device;
// other processes holding at least the request and at least as much of the device as this process;
// the pool's free bytes would serve it but no free block is large enough; else exhaustion by this
// process (which names what is held elsewhere too). "Elsewhere" is the device's used memory
// (total − free) beyond this process's: beyond what NVML says it uses where NVML says (its context
// and modules included), else beyond what it reserves and is served directly.
Verdict judge(const OutOfMemoryFacts& facts);

// Bytes of the device in use beyond this process's, 0 when the driver did not say.
uint64_t held_elsewhere_bytes(const OutOfMemoryFacts& facts);

// "fragmentation: the pool holds 2.5 GiB free, but no free block of 4.0 GiB", …
std::string describe(Verdict verdict, const OutOfMemoryFacts& facts);
const char* verdict_name(Verdict verdict);

}  // namespace vramshim::oom
