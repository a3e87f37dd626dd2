// Where a command's output goes: `-o FILE` writes FILE whole through write_file_atomically (an
// existing file is replaced, a link at the name too, never written through; a terminal, a device
// such as /dev/null or a pipe is written into); `-o -` writes to standard output.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace vramshim::analyzer {

// The output name that means standard output.
inline constexpr const char* kStandardOutput = "-";

inline bool is_standard_output(const std::string& path) { return path == kStandardOutput; }

// Has `write` write the output named `path`: standard output for "-", else a file written
// atomically. Throws std::runtime_error("PATH: …") when it cannot be written (standard output:
// "standard output: …"), or rethrows what `write` threw.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace vramshim::analyzer
