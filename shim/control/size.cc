#include "shim/control/size.h"

#include <cctype>
#include <limits>

namespace vramshim::control {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// The multiplier a suffix names, or 0 if it names none.
std::uint64_t suffix_multiplier(std::string_view suffix) {
  if (suffix.empty() || equals_ignoring_case(suffix, "b")) return 1;
  static constexpr const char* kUnits[] = {"k", "m", "g", "t"};
  std::uint64_t multiplier = 1;
  for (const char* unit : kUnits) {
    multiplier *= 1024;
    const std::string_view u(unit);
    if (equals_ignoring_case(suffix, u)) return multiplier;
    const char with_b[] = {unit[0], 'b'};
    const char with_ib[] = {unit[0], 'i', 'b'};
    if (equals_ignoring_case(suffix, std::string_view(with_b, 2))) return multiplier;
    if (equals_ignoring_case(suffix, std::string_view(with_ib, 3))) return multiplier;
  }
  return 0;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  size_t i = 0;
  std::uint64_t whole = 0;
  const size_t digits_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (whole > (kMax - digit) / 10) return std::nullopt;
    whole = whole * 10 + digit;
    ++i;
  }
  if (i == digits_start) return std::nullopt;

  // Up to 9 fraction digits are kept, as numerator / denominator.
  std::uint64_t fraction = 0;
  std::uint64_t denominator = 1;
  bool has_fraction = false;
  if (i < text.size() && text[i] == '.') {
    has_fraction = true;
    ++i;
    const size_t fraction_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (denominator < 1000000000) {
        fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
        denominator *= 10;
      }
      ++i;
    }
    if (i == fraction_start) return std::nullopt;
  }

  const std::string_view suffix = text.substr(i);
  const std::uint64_t multiplier = suffix_multiplier(suffix);
  if (multiplier == 0) return std::nullopt;
  if (has_fraction && multiplier == 1) return std::nullopt;
  if (whole > kMax / multiplier) return std::nullopt;
  std::uint64_t bytes = whole * multiplier;
  // fraction < denominator, so fraction_bytes < multiplier; the product needs 128 bits (10^9 *
  // 2^40).
  const auto fraction_bytes = static_cast<std::uint64_t>(static_cast<unsigned __int128>(fraction) *
                                                         multiplier / denominator);
  if (bytes > kMax - fraction_bytes) return std::nullopt;
  return bytes + fraction_bytes;
}

}  // namespace vramshim::control
