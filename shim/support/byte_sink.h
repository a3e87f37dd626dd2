// Where a writer's bytes go: a string (the control socket's answers) or a file (the report's
// AtomicFile). Writers format; sinks store, and report their own errors.
#pragma once

#include <string>
#include <string_view>

namespace vramshim::support {

class ByteSink {
 public:
  virtual void append(std::string_view bytes) = 0;
  virtual void append(char byte) = 0;

 protected:
  ~ByteSink() = default;
};

// Keeps the bytes in memory.
class StringSink final : public ByteSink {
 public:
  void append(std::string_view bytes) override { text_.append(bytes); }
  void append(char byte) override { text_ += byte; }

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace vramshim::support
