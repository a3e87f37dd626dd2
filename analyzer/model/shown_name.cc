#include "analyzer/model/shown_name.h"

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace vramshim::analyzer {
namespace {

std::atomic<uint64_t> g_cuts{0};

}  // namespace

uint64_t shown_name_cuts() { return g_cuts.load(std::memory_order_relaxed); }

std::string shown_name(std::string_view name) {
  if (name.size() <= kMaxShownNameBytes) return std::string(name);
  g_cuts.fetch_add(1, std::memory_order_relaxed);
  // Cut so that the name with its tail ("…", 3 bytes, "#" and 8 digits) is at most the bound: a
  // name cut once is kept as it is by the next cut (an export read back by an import).
  constexpr size_t kTailBytes = 3 + 9;
  size_t cut = kMaxShownNameBytes - kTailBytes;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  // Names that share their first 4 KiB (long template names can) stay apart: a hash of the whole.
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  char tail[10];
  std::snprintf(tail, sizeof tail, "#%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
  return std::string(name.substr(0, cut)) + "\u2026" + tail;
}

}  // namespace vramshim::analyzer
