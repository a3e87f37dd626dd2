#include "shim/python/line_table.h"

namespace vramshim::python {

int line_from_line_deltas(const uint8_t* table, size_t size, int firstlineno, int byte_offset) {
  if (byte_offset < 0) return firstlineno;
  int line = firstlineno;
  int end = 0;
  for (size_t i = 0; i + 1 < size; i += 2) {
    const int start = end;
    end += table[i];
    const int8_t line_delta = static_cast<int8_t>(table[i + 1]);
    int entry_line = -1;
    if (line_delta != -128) {
      line += line_delta;
      entry_line = line;
    }
    if (byte_offset >= start && byte_offset < end) return entry_line;
  }
  return -1;
}

namespace {

// Reads PEP 657's varint (6 bits per byte, bit 6 = more follows) at table[*at].
bool read_varint(const uint8_t* table, size_t size, size_t* at, uint32_t* value) {
  if (*at >= size) return false;
  uint8_t byte = table[(*at)++];
  uint32_t result = byte & 63;
  int shift = 0;
  while ((byte & 64) != 0) {
    if (*at >= size || shift > 24) return false;
    byte = table[(*at)++];
    shift += 6;
    result |= static_cast<uint32_t>(byte & 63) << shift;
  }
  *value = result;
  return true;
}

bool read_signed_varint(const uint8_t* table, size_t size, size_t* at, int* value) {
  uint32_t raw = 0;
  if (!read_varint(table, size, at, &raw)) return false;
  *value = (raw & 1) != 0 ? -static_cast<int>(raw >> 1) : static_cast<int>(raw >> 1);
  return true;
}

enum LocationCode : int {
  kNoColumns = 13,   // line delta only
  kLongForm = 14,    // line delta, end line, columns
  kNoLocation = 15,  // no line at all
  kOneLineFirst = 10,
  kOneLineLast = 12,  // line delta = code - 10, one-byte columns
};

}  // namespace

int line_from_locations(const uint8_t* table, size_t size, int firstlineno, int unit_offset) {
  int line = firstlineno;
  int end = 0;
  size_t at = 0;
  while (at < size) {
    const uint8_t first = table[at++];
    if ((first & 0x80) == 0) return -1;  // not at the start of an entry: malformed
    const int code = (first >> 3) & 15;
    const int start = end;
    end += (first & 7) + 1;
    int entry_line = line;
    if (code == kNoLocation) {
      entry_line = -1;
    } else if (code == kNoColumns || code == kLongForm) {
      int delta = 0;
      if (!read_signed_varint(table, size, &at, &delta)) return -1;
      line += delta;
      entry_line = line;
    } else if (code >= kOneLineFirst && code <= kOneLineLast) {
      line += code - kOneLineFirst;
      entry_line = line;
    }
    if (unit_offset >= start && unit_offset < end) return entry_line;
    // Skip the rest of the entry (columns, end line): continuation bytes have bit 7 clear.
    while (at < size && (table[at] & 0x80) == 0) ++at;
  }
  return -1;
}

}  // namespace vramshim::python
