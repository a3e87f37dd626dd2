// Text bound for a terminal, with what a terminal would act on shown as '?': the C0 controls but
// newline and tab (ESC begins the sequences that retitle a window, write the clipboard or clear the
// screen), DEL, and the C1 controls (U+0080-U+009F, and bytes 0x80-0x9F outside a UTF-8 character,
// which 8-bit terminals read as controls), and every byte of ill-formed UTF-8 (an overlong form can
// spell a control to a lax decoder). Reports and processes name functions, files, hosts and
// commands that anyone could have chosen, and root reads them.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>

namespace vramshim::analyzer {

// `text` made safe as above (for a line printed at once).
std::string terminal_safe(const std::string& text);

// The CLI's diagnostics: "vramshim: MESSAGE" on stderr, one line (newlines become spaces), made
// safe as above, whatever it quotes; a message about a file whose name is empty (": why") names it
// "".
void print_diagnostic(const std::string& message);

// An ostream that writes through to `target`, made safe as above on the way.
class TerminalSafeStream : public std::ostream {
 public:
  explicit TerminalSafeStream(std::ostream& target);
  ~TerminalSafeStream() override;

 private:
  class Filter : public std::streambuf {
   public:
    explicit Filter(std::streambuf* target) : target_(target) {}
    void finish();  // a UTF-8 character cut short at the end is shown as '?'

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* text, std::streamsize length) override;
    int sync() override;

   private:
    void feed(unsigned char byte);  // into batch_, made safe
    void put(char c) { batch_ += c; }
    void write_batch();
    std::streambuf* target_;
    std::string batch_;            // safe bytes not yet handed to target_
    std::string pending_;          // the bytes of a UTF-8 character not yet whole
    size_t pending_expected_ = 0;  // how many bytes that character has in all
  };
  Filter filter_;
};

}  // namespace vramshim::analyzer
