// The pools' AllocationTagger: device memory the pools hand out is attributed by the tracker, with
// the site's tag kept in the pool's block instead of the tracker's live table.
#pragma once

#include "shim/attribution/tracker.h"
#include "shim/pool/allocation_tagger.h"

namespace vramshim::runtime {

class TrackerTagger : public pool::AllocationTagger {
 public:
  explicit TrackerTagger(attribution::Tracker& tracker) : tracker_(tracker) {}
  uint32_t tag(uint64_t request, uint64_t size) noexcept override {
    return tracker_.tag(request, size);
  }
  void untag(uint32_t tag, uint64_t size) noexcept override { tracker_.untag(tag, size); }

 private:
  attribution::Tracker& tracker_;
};

}  // namespace vramshim::runtime
