#include "analyzer/model/trace_reader.h"

#include <stdexcept>

#include "analyzer/model/snapshot_file.h"
#include "analyzer/model/torch_snapshot.h"

namespace vramshim::analyzer {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

}  // namespace

AllocationTrace read_allocation_trace(const std::string& path) {
  const std::string data = read_snapshot_file(path);
  if (data.empty()) fail(path, "empty");
  if (data[0] == '{') {
    fail(path,
         "a JSON file, such as a vramshim report, which records no event trace yet; "
         "replay reads PyTorch memory snapshots (torch.cuda.memory._dump_snapshot)");
  }
  const PickleValue::Ref snapshot = parse_snapshot_pickle(path, data);
  try {
    return trace_from_torch_snapshot(*snapshot);
  } catch (const std::runtime_error& e) {
    fail(path, e.what());
  }
}

}  // namespace vramshim::analyzer
