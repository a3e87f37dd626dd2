#include "analyzer/files/output_file.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "analyzer/files/atomic_file.h"

namespace vramshim::analyzer {

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (!is_standard_output(path)) {
    write_file_atomically(path, write);
    return;
  }
  errno = 0;
  write(std::cout);
  std::cout.flush();
  if (!std::cout) {
    throw std::runtime_error(std::string("standard output: ") +
                             (errno != 0 ? std::strerror(errno) : "cannot be written"));
  }
}

}  // namespace vramshim::analyzer
