// Merges the reports of many processes (the ranks of a distributed job) into one merged report
// (FORMAT.md, "Merged reports").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/report.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {

// Folds reports in one at a time, so that only the merged report and the one being added are in
// memory. Modules are re-interned by path and build-id, frames by symbolized identity (function and
// file:line, so the same code matches in every process), stacks by their merged frames; sites with
// the same stack and kind are summed and keep each process's figures in `ranks`; a process's
// out-of-memory section, segments and trace stay with its process, their stacks re-interned. Merged
// inputs are flattened.
class ReportMerger {
 public:
  // keep_events false: the processes' segments and event traces are left out (each process's trace
  // is as large as its report's; a merge of hundreds of ranks would hold them all).
  explicit ReportMerger(Symbolizer& symbolizer, bool keep_events = true);

  void add(const Report& input);
  // `input` is of processes added already (an out-of-memory report beside their exit report): the
  // out-of-memory section of each that has none yet is kept, its stacks re-interned; nothing else
  // of it is added. False when it had none to keep.
  bool add_out_of_memory(const Report& input);
  // The merged report; the merger is spent afterwards.
  Report finish();

 private:
  // Interns `input`'s modules, frames and stacks: each of its stacks' id in the merged report.
  std::vector<int64_t> intern_stacks(const Report& input);

  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };

  Symbolizer& symbolizer_;
  const bool keep_events_;
  Report merged_;
  std::map<std::pair<std::string, std::string>, uint32_t> modules_;
  std::unordered_map<std::string, uint32_t> frames_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> stacks_;
  std::map<std::pair<int64_t, std::string>, size_t> sites_;
  std::unordered_map<int64_t, size_t> device_indices_;  // in merged_.devices, by device number
};

}  // namespace vramshim::analyzer
