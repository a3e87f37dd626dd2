// Text from reports and processes printed to a terminal: what a terminal would act on shows as
// '?', and every printable character, UTF-8 included, is kept.
#include "analyzer/render/terminal_safe.h"

#include <gtest/gtest.h>

#include <sstream>

namespace vramshim::analyzer {
namespace {

TEST(TerminalSafe, ShowsControlsAsQuestionMarks) {
  // A window title, a clipboard write (OSC 52), a screen clear, a bell, DEL, a carriage return.
  EXPECT_EQ(terminal_safe("\x1b]0;TITLE\x07main"), "?]0;TITLE?main");
  EXPECT_EQ(terminal_safe("\x1b]52;c;ZXZpbA==\x07"), "?]52;c;ZXZpbA==?");
  EXPECT_EQ(terminal_safe("a\x1b[2Jb\x7f\r"), "a?[2Jb??");
  // C1 controls: U+009B (CSI) in UTF-8, and a lone 0x9B byte (CSI to an 8-bit terminal).
  EXPECT_EQ(terminal_safe("x\xc2\x9b"
                          "2Jy"),
            "x?2Jy");
  EXPECT_EQ(terminal_safe("x\x9b"
                          "2Jy"),
            "x?2Jy");
  EXPECT_EQ(terminal_safe(std::string("n\0ul", 4)), "n?ul");
}

TEST(TerminalSafe, KeepsTextAndUtf8) {
  EXPECT_EQ(terminal_safe("train.py:42 step()\n\tat fw\n"), "train.py:42 step()\n\tat fw\n");
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x94\xa5 \xc2\xa0"),
            "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x94\xa5 \xc2\xa0");
  // A character cut short, in the middle and at the end; bytes that begin no character.
  EXPECT_EQ(terminal_safe("a\xe4\xb8"
                          "b\xe4"),
            "a?b?");
  EXPECT_EQ(terminal_safe("\xc0\xaf\xff"), "???");
}

// Bidirectional controls reorder the text around them: "evil\u202Edrawrof" would read as
// "evilforward".
TEST(TerminalSafe, ShowsBidirectionalControlsAsQuestionMarks) {
  EXPECT_EQ(terminal_safe("evil\u202Edrawrof"), "evil?drawrof");
  for (const char* control : {"\u200E", "\u200F", "\u202A", "\u202B", "\u202C", "\u202D", "\u2066",
                              "\u2067", "\u2068", "\u2069"}) {
    EXPECT_EQ(terminal_safe(std::string("a") + control + "b"), "a?b") << control;
  }
  // Their neighbours are text.
  EXPECT_EQ(terminal_safe("\u2010\u2030\u2070"), "\u2010\u2030\u2070");
}

TEST(TerminalSafe, ShowsIllFormedUtf8AsQuestionMarks) {
  // ESC and CSI spelled overlong in three and four bytes, which a lax decoder reads as controls;
  // a surrogate; a character past U+10FFFF. Each byte shows as '?'.
  EXPECT_EQ(terminal_safe("a\xe0\x80\x9b"
                          "b"),
            "a???b");
  EXPECT_EQ(terminal_safe("a\xf0\x80\x80\x9b"
                          "b"),
            "a????b");
  EXPECT_EQ(terminal_safe("a\xe0\x82\x9b"
                          "b"),
            "a???b");
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "???");
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "????");
  // The edges of each range are kept: U+0800, U+D7FF, U+E000, U+10000, U+10FFFF.
  const std::string edges =
      "\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf";
  EXPECT_EQ(terminal_safe(edges), edges);
}

TEST(TerminalSafe, FiltersAStreamWrittenInPieces) {
  std::ostringstream target;
  {
    TerminalSafeStream out(target);
    out << "caf\xc3";  // a character split across writes
    out << "\xa9 \x1b"
        << "[31m" << 42 << '\n';
  }
  EXPECT_EQ(target.str(), "caf\xc3\xa9 ?[31m42\n");
}

}  // namespace
}  // namespace vramshim::analyzer
