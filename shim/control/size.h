// SIZE values of the environment and of the control requests: "4096", "512K", "1.5GiB".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vramshim::control {

// Parses a byte count: digits, optionally a decimal fraction, then an optional suffix,
// case-insensitive: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB. Every suffix is a power of 1024 (as
// nvidia-smi and PyTorch count GPU memory), so 1K = 1KiB = 1024. A fraction needs a suffix and is
// rounded down to whole bytes. Returns nullopt for anything else, including overflow past 2^64-1.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The largest cap on bytes in use (VRAMSHIM_LIMIT, the `limit` request): 2^62, past which no
// device reaches and the figures' readers take a number for no figure.
inline constexpr std::uint64_t kMaxLimitBytes = std::uint64_t{1} << 62;

}  // namespace vramshim::control
