#include "shim/attribution/site_ledger.h"

#include "shim/support/address_table.h"

namespace vramshim::attribution {

size_t SiteLedger::home_of(uint64_t key) {
  return static_cast<size_t>(support::mix_key(key) & (kSlots - 1));
}

SiteLedger::Entry* SiteLedger::find(uint64_t key) {
  for (size_t i = home_of(key);; i = (i + 1) & (kSlots - 1)) {
    if (slots_[i].key == key) return &slots_[i];
    if (slots_[i].key == 0) return nullptr;  // never full: at most kMaxEntries of kSlots
  }
}

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
