// A file that appears at its final path complete or not at all: written through a buffer into a
// temporary file in the same directory, then fsynced and renamed over the final path.
//
// The temporary's name, `.<name>.vramshim-tmp.<pid>@<where>.<random>`, cannot be predicted, so
// names planted in a shared directory neither block the write nor redirect it (it is created with
// O_EXCL, which follows no link). A process killed while writing leaves its temporary behind; the
// next AtomicFile in that directory removes such leftovers: the same marker, written where pids
// mean what they mean here (<where>: pid_namespace_tag()), a writer pid that no longer runs, a
// regular file owned by this user. Ranks on other nodes sharing the directory (NFS) or in other
// containers keep theirs. A final name too long for that is cut in the temporary's name.
//
// The directory is resolved once (open_checked_directory: no link or directory of another user's)
// and every step works relative to it. The temporary is created 0600 and, before anything is
// written, given its final mode: the permission bits of the file it replaces (no wider than a new
// file's when that file is another user's), or those of a new file.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shim/support/byte_sink.h"

namespace vramshim::report {

// Bytes any AtomicFile of this process has written so far: whether a report being written still
// makes progress (Runtime::at_exit waits for the exit report while it does).
uint64_t bytes_written_by_reports();

// 16 hex digits naming this host's boot and this process's pid namespace: where a pid names the
// same process; empty when neither can be read (no /proc).
std::string pid_namespace_tag();

// Who may read a new file: everyone (0644 less the umask), or its owner only (0600), e.g. a root
// job's out-of-memory report, which names other users' processes. A replaced file's readers stay.
enum class NewFileReaders { kEveryone, kOwnerOnly };

class AtomicFile final : public support::ByteSink {
 public:
  // Removes leftovers, then creates the temporary file; check error() before appending.
  explicit AtomicFile(std::string path, NewFileReaders readers = NewFileReaders::kEveryone);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Empty while every step so far succeeded; otherwise what failed, e.g. "cannot create …: …".
  const std::string& error() const { return error_; }

  void append(std::string_view bytes) override;
  void append(char byte) override {
    if (used_ == buffer_.size()) flush();
    buffer_[used_++] = byte;
  }

  // Flushes, fsyncs, renames the temporary file to the final path and fsyncs the directory.
  // Returns error(): empty on success.
  const std::string& commit();

 private:
  void flush();
  void fail(const char* what, const std::string& path, int error_number);
  void create_temporary(const std::string& here);
  void set_mode(NewFileReaders readers, const struct stat* replaced);

  std::string path_;
  std::string name_;  // the final name, in directory_fd_
  int directory_fd_ = -1;
  std::string temporary_name_;
  std::string temporary_path_;  // for messages
  int fd_ = -1;
  bool committed_ = false;
  std::string error_;
  std::vector<char> buffer_;
  size_t used_ = 0;
};

}  // namespace vramshim::report
