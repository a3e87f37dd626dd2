#include "shim/attribution/allocation_kind.h"

namespace vramshim::attribution {

const char* allocation_kind_name(AllocationKind kind) {
  switch (kind) {
    case AllocationKind::kDevice:
      return "device";
    case AllocationKind::kPitched:
      return "pitched";
    case AllocationKind::kAsync:
      return "async";
    case AllocationKind::kManaged:
      return "managed";
    case AllocationKind::kHost:
      return "host";
    case AllocationKind::kVmm:
      return "vmm";
  }
  return "device";
}

}  // namespace vramshim::attribution
