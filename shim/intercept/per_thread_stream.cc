#include "shim/intercept/per_thread_stream.h"

namespace vramshim::intercept {

std::atomic<bool> g_per_thread_stream_used{false};

}  // namespace vramshim::intercept
