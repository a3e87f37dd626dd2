#include "shim/attribution/site_ledger.h"

namespace vramshim::attribution {

SiteLedger::Entry* SiteLedger::add(uint64_t key, uint32_t tag, int32_t site) {
  if (count_ == kMaxEntries) return nullptr;
  size_t i = home_of(key);
  while (slots_[i].key != 0) i = (i + 1) & (kSlots - 1);
  ++count_;
  slots_[i] = Entry{key, tag, site, 0, 0, 0, 0};
  return &slots_[i];
}

void SiteLedger::clear() {
  for (Entry& entry : slots_) entry = Entry{};
  count_ = 0;
}

}  // namespace vramshim::attribution
