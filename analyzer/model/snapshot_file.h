// Reading a PyTorch memory snapshot file: its bytes, from a regular file of bounded size, and its
// pickle, read by the strict reader (pickle_reader.h).
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer {

inline constexpr uint64_t kMaxTraceFileBytes = uint64_t{4} << 30;

// The whole file. Throws std::runtime_error("PATH: …") when it is not a regular file, cannot be
// read or is larger than kMaxTraceFileBytes.
std::string read_snapshot_file(const std::string& path);

// The pickle `data` (the file `path`) holds. Throws std::runtime_error("PATH: …") when it is not a
// pickle of protocol 2 or later, or one the reader refuses (truncated, code, …).
PickleValue::Ref parse_snapshot_pickle(const std::string& path, const std::string& data);

// Both, for vramshim import; also refuses an empty file and a JSON one (a vramshim report?).
PickleValue::Ref read_snapshot_pickle(const std::string& path);

}  // namespace vramshim::analyzer
