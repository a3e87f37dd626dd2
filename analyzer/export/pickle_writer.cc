#include "analyzer/export/pickle_writer.h"

#include <cstring>

#include "analyzer/model/pickle_opcodes.h"

namespace vramshim::analyzer {
namespace {

using namespace pickle_opcodes;

// `text` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  for (size_t at = 0; at < text.size();) {
    const uint8_t lead = byte(at);
    size_t length = lead < 0x80                   ? 1
                    : lead >= 0xc2 && lead < 0xe0 ? 2
                    : lead >= 0xe0 && lead < 0xf0 ? 3
                    : lead >= 0xf0 && lead < 0xf5 ? 4
                                                  : 0;
    if (length > text.size() - at) length = 0;
    for (size_t i = 1; i < length; ++i) {
      if ((byte(at + i) & 0xc0) != 0x80) length = 0;
    }
    if (length == 3) {  // overlong forms and surrogates
      const uint8_t second = byte(at + 1);
      if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second >= 0xa0)) length = 0;
    } else if (length == 4) {  // overlong forms and code points past U+10FFFF
      const uint8_t second = byte(at + 1);
      if ((lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second >= 0x90)) length = 0;
    }
    if (length == 0) {
      out += "\xef\xbf\xbd";
      ++at;
    } else {
      out.append(text.substr(at, length));
      at += length;
    }
  }
  return out;
}

}  // namespace

PickleWriter::PickleWriter() {
  opcode(kProto);
  opcode(4);
}

void PickleWriter::little_endian(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((value >> (8 * i)) & 0xff);
}

void PickleWriter::none() { opcode(kNone); }

void PickleWriter::boolean(bool value) { opcode(value ? kNewTrue : kNewFalse); }

void PickleWriter::integer(int64_t value) {
  if (value >= 0 && value < 0x100) {
    opcode(kBinInt1);
    little_endian(static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value < 0x10000) {
    opcode(kBinInt2);
    little_endian(static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    opcode(kBinInt);
    little_endian(static_cast<uint64_t>(value), 4);
  } else {
    // LONG1: the fewest little-endian two's-complement bytes that keep the sign, as Python's
    // encode_long writes them.
    int bytes = 1;
    while (bytes < 8) {
      const int64_t low = -(int64_t{1} << (8 * bytes - 1));
      const int64_t high = (int64_t{1} << (8 * bytes - 1)) - 1;
      if (value >= low && value <= high) break;
      ++bytes;
    }
    opcode(kLong1);
    opcode(static_cast<uint8_t>(bytes));
    little_endian(static_cast<uint64_t>(value), bytes);
  }
}

void PickleWriter::real(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  opcode(kBinFloat);
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);  // big-endian
}

void PickleWriter::string(std::string_view text) {
  const std::string utf8 = valid_utf8(text);
  if (utf8.size() < 0x100) {
    opcode(kShortBinUnicode);
    little_endian(utf8.size(), 1);
  } else {
    opcode(kBinUnicode);
    little_endian(utf8.size(), 4);
  }
  out_ += utf8;
}

void PickleWriter::begin_dict() {
  opcode(kEmptyDict);
  opcode(kMark);
}

void PickleWriter::end_dict() { opcode(kSetItems); }

void PickleWriter::begin_list() {
  opcode(kEmptyList);
  opcode(kMark);
}

void PickleWriter::end_list() { opcode(kAppends); }

void PickleWriter::begin_tuple() { opcode(kMark); }

void PickleWriter::end_tuple() { opcode(kTuple); }

uint32_t PickleWriter::remember() {
  const uint32_t index = memo_size_++;
  if (index < 0x100) {
    opcode(kBinPut);
    little_endian(index, 1);
  } else {
    opcode(kLongBinPut);
    little_endian(index, 4);
  }
  return index;
}

void PickleWriter::recall(uint32_t index) {
  if (index < 0x100) {
    opcode(kBinGet);
    little_endian(index, 1);
  } else {
    opcode(kLongBinGet);
    little_endian(index, 4);
  }
}

std::string PickleWriter::finish() {
  opcode(kStop);
  return std::move(out_);
}

}  // namespace vramshim::analyzer
