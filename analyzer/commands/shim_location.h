// Where the CLI finds the shim and the files built next to it.
#pragma once

#include <string>

namespace vramshim::cli {

// The directory of the running vramshim executable.
std::string directory_of_executable();

// VRAMSHIM_LIB (its real path), else libvramshim.so next to this executable, else
// ../lib/libvramshim.so (an installation: bin/vramshim and lib/libvramshim.so, as in the release
// tarball and the wheel), else ../shim/libvramshim.so (Bazel's layout: bazel-bin/analyzer/vramshim
// and bazel-bin/shim/libvramshim.so). Throws with a one-line message when none is readable, when
// its path holds ':' or white space (LD_PRELOAD would split it into other paths), or, run as root,
// when the one found belongs to another user or is in reach of one (trusted_file).
std::string find_shim();

}  // namespace vramshim::cli
