// A file that appears at its final path complete or not at all: written through a buffer into a
// temporary file in the same directory, then fsynced and renamed over the final path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vramshim::report {

class AtomicFile {
 public:
  // Creates the temporary file `<dir>/.<name>.tmp.<pid>.<n>`; check error() before appending.
  explicit AtomicFile(std::string path);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Empty while every step so far succeeded; otherwise what failed, e.g. "cannot create …: …".
  const std::string& error() const { return error_; }

  void append(std::string_view bytes);
  void append(char byte) {
    if (used_ == buffer_.size()) flush();
    buffer_[used_++] = byte;
  }

  // Flushes, fsyncs, renames the temporary file to the final path and fsyncs the directory.
  // Returns error(): empty on success.
  const std::string& commit();

 private:
  void flush();
  void fail(const char* what, const std::string& path, int error_number);

  std::string path_;
  std::string temporary_path_;
  int fd_ = -1;
  bool committed_ = false;
  std::string error_;
  std::vector<char> buffer_;
  size_t used_ = 0;
};

}  // namespace vramshim::report
