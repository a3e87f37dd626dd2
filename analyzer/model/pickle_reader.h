// A strict reader of Python pickles that hold only plain data, for memory snapshots written by
// PyTorch (`torch.cuda.memory._dump_snapshot`), which are untrusted input.
#pragma once

#include <string_view>

#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer {

struct PickleLimits {
  // Containers nested inside each other; a PyTorch snapshot nests 6 deep.
  int max_depth = 64;
};

// Reads one pickle of protocol 2 to 5 that the whole of `data` holds, as Python's pickle writes
// None, bool, int (up to 64 bits), float, str, bytes, list, tuple and dict, with its memo and
// frames. Everything else is refused, never run: opcodes that import or call Python objects
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, persistent ids, extensions) — except
// the two names protocol 2 uses to rebuild bytes (`_codecs.encode`, `bytes`), which are
// interpreted here — sets, bytearrays, out-of-band buffers, protocols 0 and 1, containers that
// contain themselves, nesting past `limits.max_depth`, a str that is not UTF-8, and truncated or
// trailing data. Throws std::runtime_error("at byte N: …") naming the offending opcode.
PickleValue::Ref read_pickle(std::string_view data, const PickleLimits& limits = {});

}  // namespace vramshim::analyzer
