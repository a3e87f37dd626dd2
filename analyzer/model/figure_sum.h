// Sums of report figures (bytes, counts) that cannot overflow: the reader bounds each value, but
// a merge, a view or an import adds up any number of them, and a hostile file chooses them.
#pragma once

#include <cstdint>

namespace vramshim::analyzer {

// The bound on every integer of a report (report_reader.h). Sums stop at it, so that a merged or
// imported report stays readable and a difference of two sums still fits an int64_t.
inline constexpr int64_t kFigureLimit = int64_t{1} << 62;

// An exact sum, held within [-kFigureLimit, kFigureLimit]: for a running sum that must come back
// down exactly when figures are taken out of it again (a saturated one would not), kept in 128
// bits and bounded as it is stored.
inline int64_t bounded_figure(__int128 exact) {
  if (exact > kFigureLimit) return kFigureLimit;
  if (exact < -kFigureLimit) return -kFigureLimit;
  return static_cast<int64_t>(exact);
}

// a + b, held within [-kFigureLimit, kFigureLimit].
inline int64_t saturating_add(int64_t a, int64_t b) {
  return bounded_figure(static_cast<__int128>(a) + b);
}

}  // namespace vramshim::analyzer
