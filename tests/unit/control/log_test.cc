// The shim's logger: prefixed lines on stderr, filtered by level.
#include "shim/control/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

namespace vramshim::control {
namespace {

// Everything log() writes to stderr while `body` runs.
template <typename Body>
std::string stderr_of(Body body) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  const int saved = ::dup(2);
  ::dup2(pipe_fds[1], 2);
  body();
  ::dup2(saved, 2);
  ::close(saved);
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  ::close(pipe_fds[0]);
  return text;
}

TEST(LogTest, OneLineWhateverTheMessageQuotes) {
  set_log_level(LogLevel::kWarn);
  EXPECT_EQ(stderr_of([] {
              log(LogLevel::kWarn, "report written to %s", "/r/rk.1\n2\x1b]0;t\x07.json");
            }),
            "vramshim: report written to /r/rk.1?2?]0;t?.json\n");
  // C1: CSI as U+009B in UTF-8 and as a lone byte; other characters, UTF-8 included, kept.
  EXPECT_EQ(stderr_of([] {
              log(LogLevel::kWarn, "%s",
                  "a\xc2\x9b"
                  "2Jb\x9b"
                  "c caf\xc3\xa9 \xe4\xb8\xad");
            }),
            "vramshim: a??2Jb?c caf\xc3\xa9 \xe4\xb8\xad\n");
}

TEST(LogTest, PrefixedLinesAtOrAboveTheLevel) {
  set_log_level(LogLevel::kWarn);
  EXPECT_EQ(stderr_of([] {
              log(LogLevel::kWarn, "pool of %d bytes", 512);
              log(LogLevel::kInfo, "not shown");
              log(LogLevel::kError, "shown");
            }),
            "vramshim: pool of 512 bytes\nvramshim: shown\n");
  set_log_level(LogLevel::kError);
  EXPECT_EQ(stderr_of([] { log(LogLevel::kWarn, "hidden"); }), "");
  set_log_level(LogLevel::kDebug);
  EXPECT_EQ(stderr_of([] { log(LogLevel::kDebug, "detail"); }), "vramshim: detail\n");
  set_log_level(LogLevel::kWarn);
}

TEST(LogTest, LongMessagesAreCutToOneLine) {
  const std::string long_text(5000, 'x');
  const std::string printed = stderr_of([&] { log(LogLevel::kError, "%s", long_text.c_str()); });
  EXPECT_LT(printed.size(), 1100u);
  EXPECT_EQ(printed.rfind("vramshim: xxx", 0), 0u);
  EXPECT_EQ(printed.back(), '\n');
  EXPECT_EQ(printed.find('\n'), printed.size() - 1);
}

TEST(LogTest, LongItemListsWrapWithoutCuttingAnItem) {
  std::vector<std::string> items;
  for (int i = 0; i < 120; ++i)
    items.push_back("cuHook" + std::to_string(i) + "=" + std::string(12, '7'));
  set_log_level(LogLevel::kDebug);
  const std::string printed = stderr_of([&] { log_items(LogLevel::kDebug, "calls", items); });
  set_log_level(LogLevel::kWarn);
  std::istringstream lines(printed);
  std::string line;
  std::vector<std::string> seen;
  int line_count = 0;
  while (std::getline(lines, line)) {
    ++line_count;
    EXPECT_LT(line.size(), 1024u);
    ASSERT_EQ(line.rfind("vramshim: calls ", 0), 0u) << line;
    std::istringstream words(line.substr(16));
    for (std::string word; words >> word;) seen.push_back(word);
  }
  EXPECT_GT(line_count, 1);
  EXPECT_EQ(seen, items);
}

TEST(LogTest, AnEmptyItemListIsTheBarePrefix) {
  set_log_level(LogLevel::kDebug);
  EXPECT_EQ(stderr_of([] { log_items(LogLevel::kDebug, "calls", {}); }), "vramshim: calls\n");
  EXPECT_EQ(stderr_of([] { log_items(LogLevel::kInfo, "calls", {"a=1"}); }),
            "vramshim: calls a=1\n");
  set_log_level(LogLevel::kWarn);
  EXPECT_EQ(stderr_of([] { log_items(LogLevel::kDebug, "calls", {"a=1"}); }), "");
}

}  // namespace
}  // namespace vramshim::control
