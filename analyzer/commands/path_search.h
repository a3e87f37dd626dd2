// Programs looked up by name as the shell does, on PATH, for the commands that run one (jupyter,
// flush --deep).
#pragma once

#include <string>
#include <vector>

namespace vramshim::cli {

// Whether `path` is a regular file this process may execute.
bool is_executable_file(const std::string& path);

// PATH's absolute directories, in order: an empty or relative entry names wherever this runs,
// which is not where root should look for a program to run.
std::vector<std::string> absolute_path_directories();

}  // namespace vramshim::cli
