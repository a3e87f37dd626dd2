#include "analyzer/export/pprof_profile.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/export/profile.pb.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {
namespace {

namespace pprof = perftools::profiles;

// The most location ids the samples may list in all (256 MiB of them in memory). pprof has each
// sample list its whole stack, and a merged report one sample per site and rank: a 4,096-frame
// stack of a site of 80,000 ranks took 4.3 GB.
constexpr uint64_t kMaxSampleLocations = uint64_t{1} << 25;

// The report's time in nanoseconds since the epoch, as time_nanos holds it: a time past 2^63 ns
// (the year 2262; the reader takes times up to 1e11 s) is held at the most there is.
int64_t nanoseconds(double seconds) {
  const double nanos = seconds * 1e9;
  if (!(nanos > 0)) return 0;
  return nanos < 0x1p63 ? static_cast<int64_t>(nanos) : INT64_MAX;
}

// The string table, index 0 the empty string as the format requires.
class Strings {
 public:
  explicit Strings(pprof::Profile& profile) : profile_(profile) { index(""); }
  int64_t index(const std::string& text) {
    const auto [it, added] = indices_.try_emplace(text, profile_.string_table_size());
    if (added) profile_.add_string_table(text);
    return it->second;
  }

 private:
  pprof::Profile& profile_;
  std::unordered_map<std::string, int64_t> indices_;
};

class ProfileBuilder {
 public:
  ProfileBuilder(const Report& report, const FrameTable& table, const SiteFilter& filter)
      : report_(report), table_(table), strings_(profile_) {
    kept_.reserve(report.sites.size());
    for (const Site& site : report.sites) kept_.push_back(filter_keeps(filter, table, site.stack));
  }

  pprof::Profile build() {
    // In the order of add_sample's values.
    static constexpr std::pair<const char*, const char*> kSampleTypes[] = {
        {"inuse_space", "bytes"},
        {"inuse_objects", "count"},
        {"peak_space", "bytes"},
        {"alloc_space", "bytes"},
        {"alloc_objects", "count"}};
    for (const auto& [type, unit] : kSampleTypes) {
      pprof::ValueType* value_type = profile_.add_sample_type();
      value_type->set_type(strings_.index(type));
      value_type->set_unit(strings_.index(unit));
    }
    profile_.set_default_sample_type(strings_.index("inuse_space"));
    profile_.set_time_nanos(nanoseconds(report_.process.report_time));
    check_sample_locations();
    for (size_t i = 0; i < report_.modules.size(); ++i) add_mapping(i);
    for (size_t i = 0; i < report_.sites.size(); ++i) {
      if (!kept_[i]) continue;
      const Site& site = report_.sites[i];
      if (site.ranks.empty()) {
        add_sample(site.stack, site.kind, figures_of(site), report_.process.pid,
                   report_.process.rank);
      }
      for (const RankFigures& rank : site.ranks) {
        const ProcessInfo& process = report_.merged_from.at(static_cast<size_t>(rank.process));
        add_sample(site.stack, site.kind, figures_of(rank), process.pid, process.rank);
      }
    }
    return std::move(profile_);
  }

 private:
  // Refuses a report whose samples would list more than kMaxSampleLocations location ids, before
  // any is made.
  void check_sample_locations() const {
    uint64_t locations = 0;
    for (size_t i = 0; i < report_.sites.size(); ++i) {
      if (!kept_[i]) continue;
      const Site& site = report_.sites[i];
      const uint64_t frames =
          site.stack >= 0 ? report_.stacks.at(static_cast<size_t>(site.stack)).frames.size() : 0;
      // At most kMaxStackFrames times the ranks, checked before the next: no wrap.
      locations += std::max<uint64_t>(frames, 1) * std::max<uint64_t>(site.ranks.size(), 1);
      if (locations > kMaxSampleLocations) {
        throw std::runtime_error(
            "a pprof profile of this report would list more than " +
            std::to_string(kMaxSampleLocations) +
            " stack frames in its samples (one sample per site and rank, each with its whole "
            "stack)");
      }
    }
  }

  void add_mapping(size_t module_index) {
    const Module& module = report_.modules[module_index];
    pprof::Mapping* mapping = profile_.add_mapping();
    mapping->set_id(module_index + 1);
    mapping->set_memory_start(module.base);
    // The report keeps no module size: the mapping ends past its highest frame (set below).
    mapping->set_memory_limit(module.base + 1);
    mapping->set_filename(strings_.index(module.path));
    mapping->set_build_id(strings_.index(module.build_id));
    mapping->set_has_functions(true);
    mapping->set_has_filenames(true);
    mapping->set_has_line_numbers(true);
    mapping->set_has_inline_frames(true);
  }

  uint64_t function_id(const DisplayFrame& frame) {
    const std::string name = frame.name();
    const auto [it, added] =
        functions_.try_emplace({name, frame.file}, profile_.function_size() + 1);
    if (added) {
      pprof::Function* function = profile_.add_function();
      function->set_id(it->second);
      function->set_name(strings_.index(name));
      // No system_name: the report keeps no linkage name. pprof demangles a function whose name
      // equals its system name, and one it cannot demangle it takes for demangled C++ when it
      // holds '<', '>', '[', ']' or "::" and cuts every (…) and <…> out of it: Python's <module>,
      // <listcomp> and <lambda> became <unknown>, one function, and a::(anonymous
      // namespace)::f a::::f. A name that differs from its system name is left as it is
      // (symbolizer.go, demangleSingleFunction), with -symbolize=demangle=… too.
      function->set_filename(strings_.index(frame.file));
    }
    return it->second;
  }

  // The location of a report frame, 0 when every display frame of it is hidden.
  uint64_t location_id(uint32_t report_frame) {
    if (const auto it = locations_.find(report_frame); it != locations_.end()) return it->second;
    const auto [first, last] = table_.visible_frames_of(report_frame);
    uint64_t id = 0;
    if (first != last) {
      id = static_cast<uint64_t>(profile_.location_size()) + 1;
      pprof::Location* location = profile_.add_location();
      location->set_id(id);
      const Frame& frame = report_.frames[report_frame];
      if (!frame.python && !frame.symbolized && frame.module >= 0) {
        const size_t module = static_cast<size_t>(frame.module);
        const uint64_t address = report_.modules[module].base + frame.offset;
        location->set_mapping_id(module + 1);
        location->set_address(address);
        pprof::Mapping* mapping = profile_.mutable_mapping(static_cast<int>(module));
        if (address >= mapping->memory_limit()) mapping->set_memory_limit(address + 1);
      } else if (!frame.python && !frame.symbolized) {
        location->set_address(frame.offset);  // an absolute address outside every module
      }
      for (const uint32_t* shown = first; shown != last; ++shown) {
        const DisplayFrame& display = table_.frame(*shown);
        pprof::Line* line = location->add_line();
        line->set_function_id(function_id(display));
        line->set_line(display.line);
      }
    }
    locations_.emplace(report_frame, id);
    return id;
  }

  void add_sample(int64_t stack, const std::string& kind, const SiteFigures& figures, int64_t pid,
                  std::optional<int64_t> rank) {
    pprof::Sample* sample = profile_.add_sample();
    if (stack >= 0) {
      for (uint32_t report_frame : report_.stacks.at(static_cast<size_t>(stack)).frames) {
        if (const uint64_t id = location_id(report_frame)) sample->add_location_id(id);
      }
    }
    if (sample->location_id_size() == 0) sample->add_location_id(no_stack_location());
    for (int64_t value : {figures.live_bytes, figures.live_count, figures.bytes_at_peak,
                          figures.total_bytes, figures.total_count}) {
      sample->add_value(value);
    }
    add_label(sample, "kind")->set_str(strings_.index(kind));
    // As strings: pprof drops numeric labels of value 0, and rank 0 is the usual first rank.
    add_label(sample, "pid")->set_str(strings_.index(std::to_string(pid)));
    if (rank) add_label(sample, "rank")->set_str(strings_.index(std::to_string(*rank)));
  }

  pprof::Label* add_label(pprof::Sample* sample, const char* key) {
    pprof::Label* label = sample->add_label();
    label->set_key(strings_.index(key));
    return label;
  }

  // Sites recorded with stacks off, or whose every frame is hidden, stand under one function.
  uint64_t no_stack_location() {
    if (no_stack_location_ == 0) {
      DisplayFrame frame;
      frame.function = "(no stack)";
      no_stack_location_ = static_cast<uint64_t>(profile_.location_size()) + 1;
      pprof::Location* location = profile_.add_location();
      location->set_id(no_stack_location_);
      location->add_line()->set_function_id(function_id(frame));
    }
    return no_stack_location_;
  }

  const Report& report_;
  const FrameTable& table_;
  std::vector<bool> kept_;  // by the filter, per site
  pprof::Profile profile_;
  Strings strings_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::unordered_map<uint32_t, uint64_t> locations_;
  uint64_t no_stack_location_ = 0;
};

std::string gzip(const std::string& bytes) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer, as pprof reads.
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("cannot start gzip compression");
  }
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) throw std::runtime_error("gzip compression failed");
  return out;
}

}  // namespace

std::string pprof_profile(const Report& report, const FrameTable& table, const SiteFilter& filter) {
  const pprof::Profile profile = ProfileBuilder(report, table, filter).build();
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize the profile");
  return gzip(bytes);
}

}  // namespace vramshim::analyzer
