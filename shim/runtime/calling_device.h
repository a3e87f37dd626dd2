// The device whose pool the calling thread is calling into, set by the runtime before it calls a
// pool, so that what the pool reports back (TrackerTagger) can name the device.
#pragma once

namespace vramshim::runtime {

void set_calling_device(int device);
int calling_device();

}  // namespace vramshim::runtime
