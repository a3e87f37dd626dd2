#include "analyzer/render/terminal_safe.h"

#include <cstdio>
#include <sstream>

namespace vramshim::analyzer {
namespace {

// The length of the UTF-8 character that `lead` begins, or 0 when it begins none.
size_t utf8_length(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `second` may follow `lead` in well-formed UTF-8 (The Unicode Standard, table 3-7): no
// overlong form (which could spell a control in a decoder that accepts it), no surrogate, nothing
// past U+10FFFF.
bool may_follow(unsigned char lead, unsigned char second) {
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  return second >= low && second <= high;
}

// Whether the three bytes of `character` spell a bidirectional control (U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069): shown as written they reorder the text around them, so that a
// name reads as another ("Trojan Source").
bool is_bidi_control(const std::string& character) {
  if (character.size() != 3 || static_cast<unsigned char>(character[0]) != 0xE2) return false;
  const auto second = static_cast<unsigned char>(character[1]);
  const auto third = static_cast<unsigned char>(character[2]);
  if (second == 0x80) return third == 0x8E || third == 0x8F || (third >= 0xAA && third <= 0xAE);
  return second == 0x81 && third >= 0xA6 && third <= 0xA9;
}

}  // namespace

void print_diagnostic(const std::string& message) {
  // Messages about a file start with its name ("NAME: why"): an empty one is shown as "".
  std::string line = message.rfind(": ", 0) == 0 ? "\"\"" + message : message;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "vramshim: %s\n", terminal_safe(line).c_str());
}

std::string terminal_safe(const std::string& text) {
  std::ostringstream safe;
  {
    TerminalSafeStream out(safe);
    out << text;
  }
  return safe.str();
}

TerminalSafeStream::TerminalSafeStream(std::ostream& target)
    : std::ostream(nullptr), filter_(target.rdbuf()) {
  rdbuf(&filter_);
}

TerminalSafeStream::~TerminalSafeStream() {
  filter_.finish();
  filter_.pubsync();
}

TerminalSafeStream::Filter::int_type TerminalSafeStream::Filter::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  feed(static_cast<unsigned char>(traits_type::to_char_type(c)));
  write_batch();
  return c;
}

std::streamsize TerminalSafeStream::Filter::xsputn(const char* text, std::streamsize length) {
  for (std::streamsize i = 0; i < length; ++i) feed(static_cast<unsigned char>(text[i]));
  write_batch();
  return length;
}

void TerminalSafeStream::Filter::write_batch() {
  if (batch_.empty()) return;
  target_->sputn(batch_.data(), static_cast<std::streamsize>(batch_.size()));
  batch_.clear();
}

void TerminalSafeStream::Filter::feed(unsigned char byte) {
  if (!pending_.empty()) {
    const auto lead = static_cast<unsigned char>(pending_[0]);
    if ((byte & 0xC0) == 0x80 && (pending_.size() > 1 || may_follow(lead, byte))) {
      pending_ += static_cast<char>(byte);
      // U+0080-U+009F: C2 80 .. C2 9F.
      if (pending_.size() == 2 && lead == 0xC2 && byte <= 0x9F) {
        put('?');
        pending_.clear();
      } else if (pending_.size() == pending_expected_) {
        if (is_bidi_control(pending_)) {
          put('?');
        } else {
          batch_ += pending_;
        }
        pending_.clear();
      }
      return;
    }
    put('?');  // a character cut short, or ill-formed (its other bytes are each shown as '?')
    pending_.clear();
  }
  if (const size_t length = utf8_length(byte)) {
    pending_ = static_cast<char>(byte);
    pending_expected_ = length;
  } else if (byte == '\n' || byte == '\t' || (byte >= 0x20 && byte < 0x7F)) {
    put(static_cast<char>(byte));
  } else {
    put('?');  // a control, DEL, or a byte that begins no UTF-8 character
  }
}

int TerminalSafeStream::Filter::sync() { return target_->pubsync(); }

void TerminalSafeStream::Filter::finish() {
  if (!pending_.empty()) put('?');
  pending_.clear();
  write_batch();
}

}  // namespace vramshim::analyzer
