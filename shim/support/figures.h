// The device and site figures of device_figures.def and site_figures.def as tables, and the types
// and merge rule the code generated from those lists shares (the shim and the analyzer).
#pragma once

#include <algorithm>
#include <optional>
#include <type_traits>

namespace vramshim::support {

enum class FigureType { kCounter, kGauge };
enum class FigureMerge { kSum, kMax };
enum class FigureUnit { kBytes, kCount };
enum class FigurePresence { kAlways, kOptional };

// One row of device_figures.def (its header says what each column means).
struct DeviceFigureInfo {
  const char* name;
  FigureType type;
  FigureMerge merge;
  FigureUnit unit;
  FigurePresence presence;
  int line;
  int group;
  const char* label;
  const char* help;
};

// clang-format off
inline constexpr DeviceFigureInfo kDeviceFigures[] = {
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, unit, presence, line, group, label, help) \
  {#name, FigureType::type, FigureMerge::merge, FigureUnit::unit, FigurePresence::presence,  \
   line, group, label, help},
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
};
// clang-format on

// One row of site_figures.def.
struct SiteFigureInfo {
  const char* name;
  FigureUnit unit;
  const char* help;
};

inline constexpr SiteFigureInfo kSiteFigures[] = {
#define VRAMSHIM_SITE_FIGURE(name, unit, help) {#name, FigureUnit::unit, help},
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
};

// The C++ type of a figure: Value, or std::optional<Value> for an optional one.
template <typename Value, FigurePresence presence>
using FigureValue =
    std::conditional_t<presence == FigurePresence::kOptional, std::optional<Value>, Value>;

// Figures summed as they are (the shim's own, which cannot overflow).
struct PlainSum {
  template <typename Value>
  Value operator()(Value a, Value b) const {
    return a + b;
  }
};

// Combines `from` into `into` by the figure's merge rule; a sum is `sum(into, from)` (the analyzer
// saturates figures it read from files).
template <typename Value, typename Sum = PlainSum>
void merge_figure(Value& into, Value from, FigureMerge merge, Sum sum = {}) {
  into = merge == FigureMerge::kMax ? std::max(into, from) : sum(into, from);
}

// An absent figure adds nothing; a present one merges into an absent one as into zero.
template <typename Value, typename Sum = PlainSum>
void merge_figure(std::optional<Value>& into, const std::optional<Value>& from, FigureMerge merge,
                  Sum sum = {}) {
  if (!from) return;
  if (!into) {
    into = from;
    return;
  }
  merge_figure(*into, *from, merge, sum);
}

}  // namespace vramshim::support
