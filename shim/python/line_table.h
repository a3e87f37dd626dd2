// Line numbers from a code object's line table, in the two formats CPython has used since 3.10.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vramshim::python {

// 3.10 co_linetable: pairs (unsigned byte delta, signed line delta; -128 = no line). `byte_offset`
// is the instruction's offset in bytes (f_lasti * 2). Returns the line, or -1 when the entry has
// no line or the offset lies past the table.
int line_from_line_deltas(const uint8_t* table, size_t size, int firstlineno, int byte_offset);

// 3.11+ co_linetable (PEP 657 location table). `unit_offset` is the instruction's index in code
// units. Returns the line, or -1 when the entry has no location or the offset lies past the table.
// Tolerates a truncated or malformed table (never reads past `size`).
int line_from_locations(const uint8_t* table, size_t size, int firstlineno, int unit_offset);

}  // namespace vramshim::python
