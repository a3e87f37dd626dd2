#include "analyzer/model/report_reader.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "analyzer/model/figure_sum.h"
#include "analyzer/model/json_guard.h"
#include "analyzer/model/report_parser.h"

namespace vramshim::analyzer {
namespace {

// The slots a history may have: the shim's (SiteHistory::kMaxSlots).
constexpr size_t kMaxHistorySlots = 4096;
// The kinds of allocation a site may be of (shim/attribution/allocation_kind.cc).
constexpr std::string_view kKinds[] = {"device", "pitched", "async", "managed", "host", "vmm"};

using nlohmann::json;

// Converts one JSON document into the model, naming the offending field (e.g. "sites[3].kind") when
// a required field is missing or has the wrong type.
class Converter {
 public:
  explicit Converter(std::string source) : source_(std::move(source)) {}

  Report convert(const json& doc, std::optional<std::vector<Stack>> parsed_stacks) {
    if (!doc.is_object()) fail("", "is not a JSON object");
    Report report;
    report.source = source_;
    const json& format = require(doc, "format", "");
    if (!format.is_string() || format.get<std::string>() != "vramshim-report") {
      std::string found = format.dump(-1, ' ', false, json::error_handler_t::replace);
      if (found.size() > 60) found = found.substr(0, 57) + "...";
      fail("", "not a vramshim report (format is " + found + ")");
    }
    report.version = integer(doc, "version", "");
    if (report.version > kReportVersion) {
      fail("", "report version " + std::to_string(report.version) +
                   " is newer than this vramshim reads (" + std::to_string(kReportVersion) +
                   "); upgrade vramshim");
    }
    if (report.version < 1) fail("version", "must be at least 1");
    report.reason = optional_string(doc, "reason", "");
    report.sequence = optional_integer(doc, "sequence", "", 0);
    report.process = process(require_object(doc, "process", ""), "process");
    report.process.crash = ending_signal(doc, "crash", "");
    report.process.terminated = ending_signal(doc, "terminated", "");
    if (auto it = doc.find("config"); it != doc.end() && it->is_object()) {
      report.config = config(*it);
    }
    report.devices = devices(doc, "");
    if (auto it = doc.find("peak"); it != doc.end() && !it->is_null()) {
      if (!it->is_object()) fail("peak", "must be an object");
      report.peak_in_use_bytes = count(*it, "in_use_bytes", "peak");
      report.peak_time = optional_time(*it, "time", "peak");
    }
    modules(require_array(doc, "modules", ""), report);
    frames(require_array(doc, "frames", ""), report);
    if (!parsed_stacks) fail("stacks", "missing");
    report.stacks = std::move(*parsed_stacks);
    check_stacks(report);
    const auto stacks = static_cast<int64_t>(report.stacks.size());
    report.oom = optional_out_of_memory(doc, "", stacks);
    if (auto it = doc.find("merged_from"); it != doc.end()) {
      if (!it->is_array()) fail("merged_from", "must be an array");
      for (size_t i = 0; i < it->size(); ++i) {
        const std::string where = "merged_from[" + std::to_string(i) + "]";
        if (!(*it)[i].is_object()) fail(where, "must be an object");
        report.merged_from.push_back(merged_process((*it)[i], where, stacks));
      }
    }
    sites(require_array(doc, "sites", ""), report);
    const json& segments = optional_array(doc, "segments", "");
    for (size_t i = 0; i < segments.size(); ++i) {
      report.segments.push_back(
          pool_segment(segments[i], "segments[" + std::to_string(i) + "]", stacks));
    }
    if (auto it = doc.find("history"); it != doc.end() && !it->is_null()) {
      report.history = history(*it, static_cast<int64_t>(report.sites.size()));
    }
    if (auto it = doc.find("trace"); it != doc.end() && !it->is_null()) {
      report.trace = trace(*it, stacks, "trace");
    }
    if (auto it = doc.find("timeline"); it != doc.end() && !it->is_null()) {
      if (!it->is_object()) fail("timeline", "must be an object");
      report.timeline_interval_ms = optional_integer(*it, "interval_ms", "timeline", 0);
      if (auto s = it->find("samples"); s != it->end()) {
        report.timeline = timeline(*s, "timeline.samples");
      }
    }
    return report;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw std::runtime_error(source_ + ": " + (where.empty() ? "" : where + ": ") + why);
  }

  static std::string join(const std::string& where, const char* key) {
    return where.empty() ? key : where + "." + key;
  }

  const json& require(const json& object, const char* key, const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end()) fail(join(where, key), "missing");
    return *it;
  }

  const json& require_object(const json& object, const char* key, const std::string& where) const {
    const json& value = require(object, key, where);
    if (!value.is_object()) fail(join(where, key), "must be an object");
    return value;
  }

  const json& require_array(const json& object, const char* key, const std::string& where) const {
    const json& value = require(object, key, where);
    if (!value.is_array()) fail(join(where, key), "must be an array");
    return value;
  }

  // `key`, when given, names the field inside `where`; paths are only joined for a message.
  // Integers lie within +-2^62 (kFigureLimit), so that differences and magnitudes of a few of them
  // cannot overflow; sums of them saturate at that bound (figure_sum.h).
  int64_t as_integer(const json& value, const std::string& where, const char* key = nullptr) const {
    if (value.is_number_unsigned()) {
      const auto v = value.get<uint64_t>();
      if (v > static_cast<uint64_t>(kFigureLimit))
        fail(key ? join(where, key) : where, "number out of range");
      return static_cast<int64_t>(v);
    }
    if (value.is_number_integer()) {
      const auto v = value.get<int64_t>();
      if (v < -kFigureLimit) fail(key ? join(where, key) : where, "number out of range");
      return v;
    }
    if (value.is_number_float()) {
      // Writers may print large integers in exponent form; accept exact integral values.
      const double d = value.get<double>();
      if (d >= -4.6e18 && d <= 4.6e18 && static_cast<double>(static_cast<int64_t>(d)) == d) {
        return static_cast<int64_t>(d);
      }
    }
    fail(key ? join(where, key) : where, "must be an integer");
  }

  int64_t integer(const json& object, const char* key, const std::string& where) const {
    return as_integer(require(object, key, where), where, key);
  }

  // An address, stream or base: never negative (a writer of the report would print it back as
  // 2^64 - 1, which no reader takes).
  uint64_t non_negative(int64_t value, const std::string& where) const {
    if (value < 0) fail(where, "must not be negative");
    return static_cast<uint64_t>(value);
  }

  int64_t count(const json& object, const char* key, const std::string& where) const {
    const int64_t v = integer(object, key, where);
    if (v < 0) fail(join(where, key), "must not be negative");
    return v;
  }

  int64_t optional_integer(const json& object, const char* key, const std::string& where,
                           int64_t fallback) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    return as_integer(*it, where, key);
  }

  std::optional<int64_t> nullable_integer(const json& object, const char* key,
                                          const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    return as_integer(*it, where, key);
  }

  // A time: seconds since the Unix epoch (FORMAT.md), from 0 to kMaxTime. Beyond, an export in
  // microseconds would overflow (it wrote INT64_MIN) and a view would print 30-digit numbers.
  static constexpr double kMaxTime = 1e11;  // the year 5138
  double as_time(const json& value, const std::string& where) const {
    if (!value.is_number()) fail(where, "must be a number");
    const double t = value.get<double>();
    if (!(t >= 0 && t <= kMaxTime)) fail(where, "is not a time (seconds since 1970, up to 1e11)");
    return t;
  }

  double optional_time(const json& object, const char* key, const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return 0;
    return as_time(*it, join(where, key));
  }

  std::string optional_string(const json& object, const char* key, const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    if (!it->is_string()) fail(join(where, key), "must be a string");
    return it->get<std::string>();
  }

  std::string required_string(const json& object, const char* key, const std::string& where) const {
    const json& value = require(object, key, where);
    if (!value.is_string()) fail(join(where, key), "must be a string");
    return value.get<std::string>();
  }

  int64_t count_or_zero(const json& object, const char* key, const std::string& where) const {
    const int64_t v = optional_integer(object, key, where, 0);
    if (v < 0) fail(join(where, key), "must not be negative");
    return v;
  }

  std::optional<int64_t> nullable_count(const json& object, const char* key,
                                        const std::string& where) const {
    const std::optional<int64_t> value = nullable_integer(object, key, where);
    if (value && *value < 0) fail(join(where, key), "must not be negative");
    return value;
  }

  // A CUDA device ordinal (shim/report/FORMAT.md): views and exports index by it.
  int64_t device_number(int64_t device, const std::string& where) const {
    if (device < 0 || device >= kMaxDeviceNumber) fail(where, "not a device number");
    return device;
  }

  // An optional list: empty when missing or null.
  const json& optional_array(const json& object, const char* key, const std::string& where) const {
    static const json kEmpty = json::array();
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return kEmpty;
    if (!it->is_array()) fail(join(where, key), "must be an array");
    return *it;
  }

  // A stack id: one of the report's `stacks` stacks, or -1 for none.
  int64_t stack_id(const json& object, const char* key, const std::string& where, int64_t stacks,
                   bool required) const {
    const int64_t stack =
        required ? integer(object, key, where) : optional_integer(object, key, where, -1);
    if (stack < -1 || stack >= stacks) fail(join(where, key), "no such stack");
    return stack;
  }

  // A "crash" or "terminated" object (FORMAT.md); absent when missing or null.
  std::optional<EndingSignal> ending_signal(const json& object, const char* key,
                                            const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    const std::string at = join(where, key);
    if (!it->is_object()) fail(at, "must be an object");
    EndingSignal ending;
    ending.signal = count(*it, "signal", at);
    ending.signal_name = optional_string(*it, "signal_name", at);
    ending.code = optional_integer(*it, "code", at, 0);
    if (std::string address = optional_string(*it, "address", at); !address.empty()) {
      ending.address = std::move(address);
    }
    ending.sender_pid = nullable_count(*it, "sender_pid", at);
    ending.thread_id = nullable_count(*it, "thread_id", at);
    return ending;
  }

  ProcessInfo process(const json& p, const std::string& where) const {
    ProcessInfo info;
    info.pid = integer(p, "pid", where);
    if (auto it = p.find("cmdline"); it != p.end() && !it->is_null()) {
      if (!it->is_array()) fail(join(where, "cmdline"), "must be an array of strings");
      for (const json& arg : *it) {
        if (!arg.is_string()) fail(join(where, "cmdline"), "must be an array of strings");
        info.cmdline.push_back(arg.get<std::string>());
      }
    }
    info.exe = optional_string(p, "exe", where);
    info.host = optional_string(p, "host", where);
    info.rank = nullable_count(p, "rank", where);
    info.start_time = optional_time(p, "start_time", where);
    info.report_time = optional_time(p, "report_time", where);
    return info;
  }

  ProcessInfo merged_process(const json& p, const std::string& where, int64_t stacks) const {
    ProcessInfo info = process(p, where);
    info.reason = optional_string(p, "reason", where);
    info.devices = devices(p, where);
    info.peak_in_use_bytes = count_or_zero(p, "peak_in_use_bytes", where);
    if (auto it = p.find("timeline"); it != p.end() && !it->is_null()) {
      info.timeline = timeline(*it, join(where, "timeline"));
    }
    info.oom = optional_out_of_memory(p, where, stacks);
    info.crash = ending_signal(p, "crash", where);
    info.terminated = ending_signal(p, "terminated", where);
    const json& segments = optional_array(p, "segments", where);
    for (size_t i = 0; i < segments.size(); ++i) {
      info.segments.push_back(pool_segment(
          segments[i], join(where, "segments") + "[" + std::to_string(i) + "]", stacks));
    }
    if (auto it = p.find("trace"); it != p.end() && !it->is_null()) {
      info.trace = trace(*it, stacks, join(where, "trace"));
    }
    return info;
  }

  CaptureConfig config(const json& c) const {
    CaptureConfig out;
    if (auto it = c.find("pool"); it != c.end() && it->is_boolean()) out.pool = it->get<bool>();
    out.stacks = optional_string(c, "stacks", "config");
    if (out.stacks.empty()) out.stacks = "all";
    out.sample_bytes = count_or_zero(c, "sample_bytes", "config");
    out.stack_depth = count_or_zero(c, "stack_depth", "config");
    out.limit_bytes = nullable_count(c, "limit_bytes", "config");
    out.max_cached_bytes = nullable_count(c, "max_cached_bytes", "config");
    out.stack_table_bytes = nullable_count(c, "stack_table_bytes", "config");
    out.allocations_past_stack_table = count_or_zero(c, "allocations_past_stack_table", "config");
    return out;
  }

  // A missing device figure reads as 0, or as absent for an optional one; every one is a count of
  // bytes or of calls.
  void device_figure(const json& d, const char* key, const std::string& where, int64_t& out) const {
    out = count_or_zero(d, key, where);
  }
  void device_figure(const json& d, const char* key, const std::string& where,
                     std::optional<int64_t>& out) const {
    out = nullable_count(d, key, where);
  }

  std::vector<DeviceFigures> devices(const json& object, const std::string& where) const {
    std::vector<DeviceFigures> out;
    auto it = object.find("devices");
    if (it == object.end() || it->is_null()) return out;
    if (!it->is_array()) fail(join(where, "devices"), "must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& d = (*it)[i];
      const std::string at = join(where, "devices") + "[" + std::to_string(i) + "]";
      if (!d.is_object()) fail(at, "must be an object");
      DeviceFigures f;
      f.device = device_number(integer(d, "device", at), join(at, "device"));
#define VRAMSHIM_DEVICE_FIGURE(name, ...) device_figure(d, #name, at, f.name);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
      out.push_back(f);
    }
    return out;
  }

  // Entries carry an "id"; FORMAT.md makes ids dense indices, which this reader insists on.
  void check_id(const json& entry, size_t index, const std::string& where) const {
    if (auto it = entry.find("id"); it != entry.end()) {
      if (as_integer(*it, where + ".id") != static_cast<int64_t>(index)) {
        fail(where + ".id", "ids must be dense indices (expected " + std::to_string(index) + ")");
      }
    }
  }

  bool optional_flag(const json& object, const char* key, const std::string& where,
                     bool fallback) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(join(where, key), "must be true or false");
    return it->get<bool>();
  }

  // [vaddr, memsz, filesz, offset] of a module's PT_LOAD program header.
  LoadSegment load_segment(const json& s, const std::string& where) const {
    if (!s.is_array() || s.size() != 4) fail(where, "must be [vaddr, memsz, filesz, offset]");
    return {
        non_negative(as_integer(s[0], where), where), non_negative(as_integer(s[1], where), where),
        non_negative(as_integer(s[2], where), where), non_negative(as_integer(s[3], where), where)};
  }

  void modules(const json& list, Report& report) const {
    report.modules.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = "modules[" + std::to_string(i) + "]";
      const json& m = list[i];
      if (!m.is_object()) fail(at, "must be an object");
      check_id(m, i, at);
      Module module;
      const json& path = require(m, "path", at);
      if (!path.is_string()) fail(at + ".path", "must be a string");
      module.path = path.get<std::string>();
      module.base = non_negative(optional_integer(m, "base", at, 0), join(at, "base"));
      module.build_id = optional_string(m, "build_id", at);
      module.loaded = optional_flag(m, "loaded", at, true);
      module.deleted = optional_flag(m, "deleted", at, false);
      const json& segments = optional_array(m, "segments", at);
      for (size_t s = 0; s < segments.size(); ++s) {
        module.segments.push_back(
            load_segment(segments[s], join(at, "segments") + "[" + std::to_string(s) + "]"));
      }
      report.modules.push_back(std::move(module));
    }
  }

  void frames(const json& list, Report& report) const {
    report.frames.reserve(list.size());
    const auto modules = static_cast<int64_t>(report.modules.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = "frames[" + std::to_string(i) + "]";
      const json& f = list[i];
      if (!f.is_object()) fail(at, "must be an object");
      check_id(f, i, at);
      Frame frame;
      const auto flag = [&](const char* key) {
        auto it = f.find(key);
        return it != f.end() && it->is_boolean() && it->get<bool>();
      };
      if (flag("python") || flag("symbolized")) {
        frame.python = flag("python");
        frame.symbolized = !frame.python;
        frame.file = optional_string(f, "file", at);
        frame.line = optional_integer(f, "line", at, 0);
        frame.function = optional_string(f, "function", at);
      } else {
        frame.module = integer(f, "module", at);
        if (frame.module < -1 || frame.module >= modules) fail(at + ".module", "no such module");
        frame.offset = static_cast<uint64_t>(count(f, "offset", at));
        frame.function = optional_string(f, "function", at);
      }
      report.frames.push_back(std::move(frame));
    }
  }

  void check_stacks(const Report& report) const {
    const auto frames = report.frames.size();
    for (size_t i = 0; i < report.stacks.size(); ++i) {
      const size_t length = report.stacks[i].frames.size();
      if (length > kMaxStackFrames) {
        fail("stacks[" + std::to_string(i) + "].frames",
             std::to_string(length) + " frames, more than the " + std::to_string(kMaxStackFrames) +
                 " a stack may have");
      }
      for (uint32_t frame : report.stacks[i].frames) {
        if (frame >= frames) {
          fail("stacks[" + std::to_string(i) + "].frames",
               "no such frame " + std::to_string(frame));
        }
      }
    }
  }

  // The site figures, each required, of a site or of one process's share of it.
  template <typename Figures>
  void site_figures(const json& object, const std::string& where, Figures& out) const {
#define VRAMSHIM_SITE_FIGURE(name, ...) out.name = count(object, #name, where);
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  }

  void sites(const json& list, Report& report) const {
    report.sites.reserve(list.size());
    const auto stacks = static_cast<int64_t>(report.stacks.size());
    const auto processes = static_cast<int64_t>(report.merged_from.size());
    std::vector<uint8_t> kinds_seen(report.stacks.size() + 1);  // per stack, -1 first: a bit a kind
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = "sites[" + std::to_string(i) + "]";
      const json& s = list[i];
      if (!s.is_object()) fail(at, "must be an object");
      Site site;
      site.stack = integer(s, "stack", at);
      if (site.stack < -1 || site.stack >= stacks) fail(at + ".stack", "no such stack");
      const json& kind = require(s, "kind", at);
      if (!kind.is_string()) fail(at + ".kind", "must be a string");
      site.kind = kind.get<std::string>();
      // One site per stack and kind (FORMAT.md), of the kinds the shim writes: sites beyond
      // those, each holding its stack's frames in the views built from them, only cost memory
      // (50,000 sites of one 4,096-frame stack: 1.65 GB).
      const auto known = std::find(std::begin(kKinds), std::end(kKinds), site.kind);
      if (known == std::end(kKinds)) fail(at + ".kind", "is not a kind of allocation");
      uint8_t& kinds_of_stack = kinds_seen[static_cast<size_t>(site.stack + 1)];
      const auto kind_bit = static_cast<uint8_t>(1u << (known - std::begin(kKinds)));
      if (kinds_of_stack & kind_bit) fail(at, "a second site of the same stack and kind");
      kinds_of_stack |= kind_bit;
      site_figures(s, at, site);
      if (auto it = s.find("ranks"); it != s.end()) {
        if (!it->is_array()) fail(at + ".ranks", "must be an array");
        for (size_t r = 0; r < it->size(); ++r) {
          const json& e = (*it)[r];
          const std::string rat = at + ".ranks[" + std::to_string(r) + "]";
          if (!e.is_object()) fail(rat, "must be an object");
          RankFigures figures;
          figures.process = integer(e, "process", rat);
          if (figures.process < 0 || figures.process >= processes) {
            fail(rat + ".process", "no such entry in merged_from");
          }
          site_figures(e, rat, figures);
          site.ranks.push_back(figures);
        }
      }
      report.sites.push_back(std::move(site));
    }
  }

  // The "oom" member of `object` (FORMAT.md, "Out-of-memory reports"); absent when missing or null.
  std::optional<OutOfMemory> optional_out_of_memory(const json& object, const std::string& where,
                                                    int64_t stacks) const {
    auto it = object.find("oom");
    if (it == object.end() || it->is_null()) return std::nullopt;
    const std::string at = join(where, "oom");
    if (!it->is_object()) fail(at, "must be an object");
    const json& o = *it;
    OutOfMemory oom;
    const std::string request_at = join(at, "request");
    const json& r = require_object(o, "request", at);
    oom.request.bytes = count(r, "bytes", request_at);
    oom.request.kind = required_string(r, "kind", request_at);
    oom.request.device =
        device_number(integer(r, "device", request_at), join(request_at, "device"));
    oom.request.call = required_string(r, "call", request_at);
    oom.request.cause = required_string(r, "cause", request_at);
    oom.request.stack = stack_id(r, "stack", request_at, stacks, false);
    oom.time = optional_time(o, "time", at);
    oom.failures = optional_integer(o, "failures", at, 1);
    if (oom.failures < 1) fail(join(at, "failures"), "must be at least 1");
    oom.verdict = required_string(o, "verdict", at);
    oom.explanation = required_string(o, "explanation", at);
    oom.device_total_bytes = nullable_count(o, "device_total_bytes", at);
    oom.device_free_bytes = nullable_count(o, "device_free_bytes", at);
    oom.held_elsewhere_bytes = count_or_zero(o, "held_elsewhere_bytes", at);
    oom.in_use_bytes = count(o, "in_use_bytes", at);
    oom.cached_bytes = count(o, "cached_bytes", at);
    oom.reserved_bytes = count(o, "reserved_bytes", at);
    oom.direct_bytes = count_or_zero(o, "direct_bytes", at);
    oom.limit_bytes = nullable_count(o, "limit_bytes", at);
    oom.pool_free_bytes = count(o, "pool_free_bytes", at);
    oom.pool_largest_free_block = count(o, "pool_largest_free_block", at);
    const json& sites = optional_array(o, "leading_sites", at);
    for (size_t i = 0; i < sites.size(); ++i) {
      const std::string site_at = join(at, "leading_sites") + "[" + std::to_string(i) + "]";
      const json& s = sites[i];
      if (!s.is_object()) fail(site_at, "must be an object");
      oom.leading_sites.push_back(
          {stack_id(s, "stack", site_at, stacks, true), required_string(s, "kind", site_at),
           count(s, "live_bytes", site_at), count(s, "live_count", site_at)});
    }
    const json& processes = optional_array(o, "other_processes", at);
    for (size_t i = 0; i < processes.size(); ++i) {
      const std::string process_at = join(at, "other_processes") + "[" + std::to_string(i) + "]";
      const json& p = processes[i];
      if (!p.is_object()) fail(process_at, "must be an object");
      oom.other_processes.push_back(
          {integer(p, "pid", process_at), optional_string(p, "command", process_at),
           optional_string(p, "source", process_at), nullable_count(p, "in_use_bytes", process_at),
           nullable_count(p, "cached_bytes", process_at),
           nullable_count(p, "used_bytes", process_at)});
    }
    for (const json& note : optional_array(o, "unasked", at)) {
      if (!note.is_string()) fail(join(at, "unasked"), "must be an array of strings");
      oom.unasked.push_back(note.get<std::string>());
    }
    const json& segments = optional_array(o, "segments", at);
    for (size_t i = 0; i < segments.size(); ++i) {
      oom.segments.push_back(
          pool_segment(segments[i], join(at, "segments") + "[" + std::to_string(i) + "]", stacks));
    }
    return oom;
  }

  // Blocks are [offset, size, "free"|"pending"] (version 1: the blocks not allocated) or
  // [offset, size, state, requested, stack] (version 2: every block).
  PoolSegment pool_segment(const json& s, const std::string& where, int64_t stacks) const {
    if (!s.is_object()) fail(where, "must be an object");
    PoolSegment segment;
    segment.device = device_number(optional_integer(s, "device", where, 0), join(where, "device"));
    segment.base = static_cast<uint64_t>(count(s, "base", where));
    segment.size = count(s, "size", where);
    if (const auto it = s.find("expandable"); it != s.end()) {
      if (!it->is_boolean()) fail(join(where, "expandable"), "must be true or false");
      segment.expandable = it->get<bool>();
    }
    const json& blocks = require_array(s, "blocks", where);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::string at = join(where, "blocks") + "[" + std::to_string(i) + "]";
      const json& b = blocks[i];
      if (!b.is_array() || (b.size() != 3 && b.size() != 5) || !b[2].is_string()) {
        fail(at, "must be [offset, size, state] or [offset, size, state, requested, stack]");
      }
      SegmentBlock block;
      block.offset = as_integer(b[0], at);
      block.size = as_integer(b[1], at);
      const std::string state = b[2].get<std::string>();
      if (state != "free" && state != "pending" && state != "allocated") {
        fail(at, "state must be \"free\", \"pending\" or \"allocated\"");
      }
      block.pending = state == "pending";
      block.allocated = state == "allocated";
      if (b.size() == 5) {
        block.requested = as_integer(b[3], at);
        block.stack = as_integer(b[4], at);
        if (block.stack < -1 || block.stack >= stacks) fail(at, "no such stack");
      }
      if (block.offset < 0 || block.size <= 0 || block.offset > segment.size - block.size) {
        fail(at, "block lies outside its segment of " + std::to_string(segment.size) + " bytes");
      }
      if (block.requested < 0 || block.requested > block.size) {
        fail(at, "requested bytes outside 0 and the block's size");
      }
      // In address order, each after the one before (FORMAT.md): memory is in one block at most.
      if (!segment.blocks.empty() &&
          block.offset < segment.blocks.back().offset + segment.blocks.back().size) {
        fail(at, "overlaps the block before it (blocks are listed in address order)");
      }
      segment.blocks.push_back(block);
    }
    return segment;
  }

  History history(const json& h, int64_t sites) const {
    const std::string where = "history";
    if (!h.is_object()) fail(where, "must be an object");
    History out;
    out.budget_bytes = count_or_zero(h, "budget_bytes", where);
    out.ticks = count_or_zero(h, "ticks", where);
    out.ticks_per_slot = count(h, "ticks_per_slot", where);
    if (out.ticks_per_slot < 1) fail(join(where, "ticks_per_slot"), "must be at least 1");
    out.untracked_sites = count_or_zero(h, "untracked_sites", where);
    if (auto it = h.find("peak"); it != h.end() && it->is_object()) {
      out.peak_time = optional_time(*it, "time", "history.peak");
      out.peak_bytes = count_or_zero(*it, "in_use_bytes", "history.peak");
    }
    const json& times = require_array(h, "slot_times", where);
    // The shim halves its slots at 4096 (FORMAT.md); the growth analysis walks every slot of
    // every series, so more would only make a small file slow.
    if (times.size() > kMaxHistorySlots) {
      fail("history.slot_times", "more than " + std::to_string(kMaxHistorySlots) + " slots");
    }
    for (const json& t : times) {
      const double time = as_time(t, "history.slot_times");
      // The shim's clock (CLOCK_REALTIME) may step back, and two ticks may round to one double: a
      // time before the slot ahead of it is held at that slot's, never refused.
      out.slot_times.push_back(out.slot_times.empty() ? time
                                                      : std::max(time, out.slot_times.back()));
    }
    const auto slots = static_cast<int64_t>(out.slot_times.size());
    const json& series = require_array(h, "sites", where);
    std::vector<bool> has_series(static_cast<size_t>(std::max<int64_t>(sites, 0)));
    for (size_t i = 0; i < series.size(); ++i) {
      const std::string at = "history.sites[" + std::to_string(i) + "]";
      const json& s = series[i];
      if (!s.is_object()) fail(at, "must be an object");
      SiteHistory site;
      site.site = count(s, "site", at);
      if (site.site >= sites) fail(join(at, "site"), "no such site");
      if (has_series[static_cast<size_t>(site.site)]) {
        fail(join(at, "site"), "a site with two series");
      }
      has_series[static_cast<size_t>(site.site)] = true;
      site.at_peak = count_or_zero(s, "at_peak", at);
      int64_t previous_slot = -1;
      for (const json& p : require_array(s, "points", at)) {
        if (!p.is_array() || p.size() != 3) fail(join(at, "points"), "must be [slot, last, max]");
        HistoryPoint point{as_integer(p[0], at), as_integer(p[1], at), as_integer(p[2], at)};
        if (point.slot < 0 || point.slot < previous_slot || point.slot >= slots) {
          fail(join(at, "points"), "slots must rise and name a slot time");
        }
        if (point.last < 0 || point.max < point.last) {
          fail(join(at, "points"), "values must be at least 0, max at least last");
        }
        if (point.slot == previous_slot) {
          // Two points of one slot: shims before this fix wrote them for a site whose record
          // filled the history's budget in the middle of a tick (the history then halved). They
          // are one point: the later last, the larger max.
          HistoryPoint& into = site.points.back();
          into.last = point.last;
          into.max = std::max(into.max, point.max);
          continue;
        }
        previous_slot = point.slot;
        site.points.push_back(point);
      }
      out.sites.push_back(std::move(site));
    }
    return out;
  }

  Trace trace(const json& t, int64_t stacks, const std::string& where) const {
    if (!t.is_object()) fail(where, "must be an object");
    Trace out;
    out.capacity = count_or_zero(t, "capacity", where);
    out.recorded = count_or_zero(t, "recorded", where);
    const json& events = require_array(t, "events", where);
    out.events.reserve(events.size());
    static const char* const kTypes[] = {"alloc",        "free",        "segment_alloc",
                                         "segment_free", "segment_map", "segment_unmap",
                                         "flush",        "trim",        "oom"};
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      const std::string at = join(where, "events") + "[" + std::to_string(i) + "]";
      if (!e.is_array() || e.size() != 7 || !e[0].is_number() || !e[1].is_string()) {
        fail(at, "must be [time, type, address, size, device, stream, stack]");
      }
      TraceEvent event;
      event.time = as_time(e[0], at);
      event.type = e[1].get<std::string>();
      if (std::find(std::begin(kTypes), std::end(kTypes), event.type) == std::end(kTypes)) {
        fail(at, "unknown event type \"" + event.type.substr(0, 32) + "\"");
      }
      event.address = e[2].is_null() ? 0 : non_negative(as_integer(e[2], at), at + " address");
      event.size = as_integer(e[3], at);
      event.device = e[4].is_null() ? -1 : device_number(as_integer(e[4], at), at);
      event.stream = e[5].is_null() ? 0 : non_negative(as_integer(e[5], at), at + " stream");
      event.stack = as_integer(e[6], at);
      if (event.stack < -1 || event.stack >= stacks) fail(at, "no such stack");
      if (event.size < 0) fail(at, "size must not be negative");
      out.events.push_back(std::move(event));
    }
    return out;
  }

  std::vector<TimelineSample> timeline(const json& samples, const std::string& where) const {
    if (!samples.is_array()) fail(where, "must be an array");
    std::vector<TimelineSample> out;
    out.reserve(samples.size());
    for (const json& s : samples) {
      if (!s.is_array() || s.size() < 3 || !s[0].is_number()) {
        fail(where, "samples must be [time, in_use_bytes, cached_bytes]");
      }
      const TimelineSample sample{as_time(s[0], where), as_integer(s[1], where),
                                  as_integer(s[2], where)};
      if (sample.in_use_bytes < 0 || sample.cached_bytes < 0) {
        fail(where, "samples' bytes must not be negative");
      }
      out.push_back(sample);
    }
    return out;
  }

  std::string source_;
};

}  // namespace

Report read_report(const std::string& path) {
  const std::string text = read_checked_json(path);
  ParsedReport parsed = parse_report_text(text, path);
  return Converter(path).convert(parsed.document, std::move(parsed.stacks));
}

}  // namespace vramshim::analyzer
