#include "analyzer/model/shown_name.h"

namespace vramshim::analyzer {

std::string shown_name(std::string_view name) {
  if (name.size() <= kMaxShownNameBytes) return std::string(name);
  size_t cut = kMaxShownNameBytes;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut)) + "\u2026";
}

}  // namespace vramshim::analyzer
