#include "shim/pool/mem_info.h"

#include <algorithm>

namespace vramshim::pool {

MemInfo adjust_mem_info(MemInfo driver, uint64_t reclaimable_bytes, uint64_t in_use_bytes,
                        std::optional<uint64_t> limit) {
  const uint64_t available = std::min<uint64_t>(driver.free + reclaimable_bytes, driver.total);
  if (!limit) return {static_cast<size_t>(available), driver.total};
  const uint64_t under_limit = *limit > in_use_bytes ? *limit - in_use_bytes : 0;
  return {static_cast<size_t>(std::min(under_limit, available)),
          static_cast<size_t>(std::min<uint64_t>(*limit, driver.total))};
}

size_t adjust_total_mem(size_t driver_total, std::optional<uint64_t> limit) {
  return limit ? static_cast<size_t>(std::min<uint64_t>(*limit, driver_total)) : driver_total;
}

}  // namespace vramshim::pool
