#include "tests/fakecuda/simulated_delay.h"

#include <chrono>
#include <thread>

namespace vramshim::fakecuda {

std::atomic<uint64_t> g_alloc_delay_us{0};
std::atomic<uint64_t> g_op_delay_us{0};

void delayMicros(uint64_t us) {
  if (us == 0) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  // Long delays sleep most of the way; the last stretch spins for accuracy.
  if (us > 2000) std::this_thread::sleep_for(std::chrono::microseconds(us - 1000));
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace vramshim::fakecuda
