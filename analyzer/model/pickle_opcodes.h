// The pickle opcodes vramshim reads (pickle_reader) and writes (analyzer/export/pickle_writer), as
// Python's Lib/pickle.py names them.
#pragma once

#include <cstdint>

namespace vramshim::analyzer::pickle_opcodes {

enum Opcode : uint8_t {
  kMark = '(',
  kStop = '.',
  kNone = 'N',
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kBinFloat = 'G',
  kShortBinUnicode = 0x8c,
  kBinUnicode = 'X',
  kBinUnicode8 = 0x8d,
  kShortBinBytes = 'C',
  kBinBytes = 'B',
  kBinBytes8 = 0x8e,
  kEmptyList = ']',
  kAppend = 'a',
  kAppends = 'e',
  kEmptyTuple = ')',
  kTuple = 't',
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kEmptyDict = '}',
  kSetItem = 's',
  kSetItems = 'u',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kMemoize = 0x94,
  kBinGet = 'h',
  kLongBinGet = 'j',
  kProto = 0x80,
  kFrame = 0x95,
  kGlobal = 'c',
  kReduce = 'R',
};

}  // namespace vramshim::analyzer::pickle_opcodes
