// Writes a vramshim report (shim/report/FORMAT.md) about its own allocations, with real return
// addresses of its own functions, so that the analyzer's symbolization can be checked against real
// DWARF. Built with -g -O0: the function names and lines below are what the tests expect to see.
//
//   fixture_report --out FILE [--pid N] [--rank R] [--scale K] [--extra-leak] [--oom]
//   fixture_report --out FILE --synthetic STACKS FRAMES LIVE_ALLOCATIONS
//
// --oom: an out-of-memory report, whose allocation failed after the training run.
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

constexpr int64_t kMiB = 1 << 20;
constexpr double kStartTime = 1795980000.0;
constexpr int64_t kSegmentBase = 0x7f2e00000000;  // where the out-of-memory report's pool lies

struct ModuleInfo {
  std::string path;
  uintptr_t base = 0;       // load bias: an address minus base is the ELF virtual address
  uintptr_t map_start = 0;  // start of its first mapping, as dladdr reports it
  std::string build_id;
  uintptr_t text_begin = 0;  // the executable segment, for synthetic frames
  uintptr_t text_end = 0;
};

std::string hex(const unsigned char* bytes, size_t n) {
  std::string out;
  char digit[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(digit, sizeof digit, "%02x", bytes[i]);
    out += digit;
  }
  return out;
}

// The main program's path, load bias and build-id.
ModuleInfo describe_executable() {
  ModuleInfo info;
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) info.path.assign(path, static_cast<size_t>(n));
  Dl_info dl{};
  dladdr(reinterpret_cast<void*>(&describe_executable), &dl);
  info.map_start = reinterpret_cast<uintptr_t>(dl.dli_fbase);
  dl_iterate_phdr(
      [](dl_phdr_info* phdr, size_t, void* data) {
        auto* out = static_cast<ModuleInfo*>(data);
        out->base = phdr->dlpi_addr;
        for (int i = 0; i < phdr->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = phdr->dlpi_phdr[i];
          if (p.p_type == PT_LOAD && (p.p_flags & PF_X)) {
            out->text_begin = phdr->dlpi_addr + p.p_vaddr;
            out->text_end = out->text_begin + p.p_memsz;
          }
          if (p.p_type != PT_NOTE) continue;
          auto* note = reinterpret_cast<const char*>(phdr->dlpi_addr + p.p_vaddr);
          const char* end = note + p.p_memsz;
          while (note + sizeof(ElfW(Nhdr)) <= end) {
            auto* header = reinterpret_cast<const ElfW(Nhdr)*>(note);
            const char* name = note + sizeof(ElfW(Nhdr));
            const char* desc = name + ((header->n_namesz + 3) & ~3u);
            if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              out->build_id = hex(reinterpret_cast<const unsigned char*>(desc), header->n_descsz);
            }
            note = desc + ((header->n_descsz + 3) & ~3u);
          }
        }
        return 1;  // the main program is the first entry
      },
      &info);
  return info;
}

// Extra frames a site gets around its native stack.
enum class Decoration { kNone, kDriver, kPython, kVendorLibrary };

struct Allocation {
  std::vector<uintptr_t> stack;  // return addresses in this executable, innermost first
  Decoration decoration;
  std::string kind;
  int64_t bytes;
};

class ReportBuilder;

class Recorder {
 public:
  explicit Recorder(int64_t scale) : scale_(scale) {}

  // Records an allocation at the caller's stack; returns its handle.
  __attribute__((noinline)) size_t allocate(const char* kind, int64_t bytes,
                                            Decoration decoration = Decoration::kDriver) {
    const Allocation allocation{callers(), decoration, kind, bytes * scale_};
    const size_t site = site_of(allocation);
    SiteState& state = sites_[site];
    state.live_bytes += allocation.bytes;
    state.live_count += 1;
    state.total_bytes += allocation.bytes;
    state.total_count += 1;
    state.peak_bytes = std::max(state.peak_bytes, state.live_bytes);
    in_use_ += allocation.bytes;
    if (in_use_ > peak_) {
      peak_ = in_use_;
      peak_time_ = now();
      for (SiteState& s : sites_) s.bytes_at_peak = s.live_bytes;
    }
    sample();
    live_.push_back({site, allocation.bytes});
    return live_.size() - 1;
  }

  void free(size_t handle) {
    const auto [site, bytes] = live_[handle];
    sites_[site].live_bytes -= bytes;
    sites_[site].live_count -= 1;
    in_use_ -= bytes;
    ++frees_;
    sample();
  }

  // Records the allocation an out-of-memory report is about, at the caller's stack.
  __attribute__((noinline)) void fail(const char* kind, int64_t bytes) {
    failed_ = Allocation{callers(), Decoration::kDriver, kind, bytes};
  }

  json report(int64_t pid, const json& rank) const;

 private:
  // The stack of the code that called the recording method calling this one (both frames dropped,
  // stopped at the first frame outside the executable, i.e. after main): return addresses in this
  // executable, innermost first.
  __attribute__((noinline)) std::vector<uintptr_t> callers() const {
    void* addresses[64];
    const int n = backtrace(addresses, 64);
    std::vector<uintptr_t> stack;
    for (int i = 2; i < n; ++i) {
      Dl_info dl{};
      if (dladdr(addresses[i], &dl) == 0 ||
          reinterpret_cast<uintptr_t>(dl.dli_fbase) != exe_.map_start)
        break;
      stack.push_back(reinterpret_cast<uintptr_t>(addresses[i]));
    }
    return stack;
  }

  struct SiteState {
    Allocation first;
    int64_t live_bytes = 0, live_count = 0, total_bytes = 0, total_count = 0, peak_bytes = 0,
            bytes_at_peak = 0;
  };

  double now() const { return kStartTime + 0.5 * static_cast<double>(events_); }

  // The id of the allocation's stack, its frames and modules added to `builder`.
  int64_t stack_of(ReportBuilder& builder, int64_t exe, const Allocation& allocation) const;
  json out_of_memory(const std::vector<int64_t>& site_stacks, int64_t failing_stack) const;

  size_t site_of(const Allocation& allocation) {
    for (size_t i = 0; i < sites_.size(); ++i) {
      const Allocation& other = sites_[i].first;
      if (other.stack == allocation.stack && other.kind == allocation.kind &&
          other.decoration == allocation.decoration) {
        return i;
      }
    }
    sites_.push_back({allocation});
    return sites_.size() - 1;
  }

  void sample() {
    ++events_;
    timeline_.push_back({now(), in_use_, reserved() - in_use_});
  }

  int64_t reserved() const { return (peak_ + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB); }

  struct Sample {
    double time;
    int64_t in_use, cached;
  };

  ModuleInfo exe_ = describe_executable();
  int64_t scale_;
  std::vector<SiteState> sites_;
  std::vector<std::pair<size_t, int64_t>> live_;
  std::vector<Sample> timeline_;
  int64_t in_use_ = 0, peak_ = 0, frees_ = 0, events_ = 0;
  double peak_time_ = kStartTime;
  std::optional<Allocation> failed_;
};

// Interns modules, frames and stacks into a FORMAT.md document.
class ReportBuilder {
 public:
  int64_t module(const std::string& path, uintptr_t base, const std::string& build_id) {
    auto [it, inserted] = modules_.emplace(path, static_cast<int64_t>(modules_.size()));
    if (inserted) {
      module_list_.push_back(
          {{"id", it->second}, {"path", path}, {"base", base}, {"build_id", build_id}});
    }
    return it->second;
  }

  int64_t frame(json frame) {
    const std::string key = frame.dump();
    auto [it, inserted] = frames_.emplace(key, static_cast<int64_t>(frames_.size()));
    if (inserted) {
      frame["id"] = it->second;
      frame_list_.push_back(std::move(frame));
    }
    return it->second;
  }

  int64_t stack(const std::vector<int64_t>& frames) {
    auto [it, inserted] = stacks_.emplace(frames, static_cast<int64_t>(stacks_.size()));
    if (inserted) stack_list_.push_back({{"id", it->second}, {"frames", frames}});
    return it->second;
  }

  void finish(json& doc) {
    doc["modules"] = std::move(module_list_);
    doc["frames"] = std::move(frame_list_);
    doc["stacks"] = std::move(stack_list_);
  }

 private:
  std::map<std::string, int64_t> modules_;
  std::map<std::string, int64_t> frames_;
  std::map<std::vector<int64_t>, int64_t> stacks_;
  json module_list_ = json::array(), frame_list_ = json::array(), stack_list_ = json::array();
};

json header(int64_t pid, const json& rank, const char* reason, const std::string& exe) {
  return {{"format", "vramshim-report"},
          {"version", 1},
          {"reason", reason},
          {"sequence", 0},
          {"process",
           {{"pid", pid},
            {"cmdline", {"python", "train.py", "--epochs", "3"}},
            {"exe", exe},
            {"host", "node17"},
            {"rank", rank},
            {"start_time", kStartTime},
            {"report_time", kStartTime + 42.75}}},
          {"config",
           {{"pool", true},
            {"stacks", "all"},
            {"sample_bytes", 0},
            {"stack_depth", 64},
            {"limit_bytes", nullptr},
            {"max_cached_bytes", nullptr}}}};
}

int64_t Recorder::stack_of(ReportBuilder& builder, int64_t exe,
                           const Allocation& allocation) const {
  std::vector<int64_t> frames;
  if (allocation.decoration == Decoration::kDriver ||
      allocation.decoration == Decoration::kPython) {
    // What the real shim sees above the program: the driver, entered through the runtime.
    const int64_t cuda = builder.module("/opt/fixture-driver/lib/libcuda.so.1", 0x7f3a10000000,
                                        "8d5e0a1b2c3d4e5f60718293a4b5c6d7e8f90011");
    const int64_t cudart =
        builder.module("/opt/fixture-driver/lib/libcudart.so.13", 0x7f3a20000000, "");
    frames.push_back(
        builder.frame({{"module", cuda}, {"offset", 0x2a1f30}, {"function", "cuMemAlloc_v2"}}));
    frames.push_back(
        builder.frame({{"module", cudart}, {"offset", 0x4c210}, {"function", nullptr}}));
    frames.push_back(
        builder.frame({{"module", cudart}, {"offset", 0x52e08}, {"function", "cudaMalloc"}}));
  }
  if (allocation.decoration == Decoration::kVendorLibrary) {
    const int64_t vendor = builder.module("/opt/vendor/lib/libmissing_vendor.so", 0x7f3a30000000,
                                          "00112233445566778899aabbccddeeff00112233");
    frames.push_back(
        builder.frame({{"module", vendor}, {"offset", 0x1234}, {"function", nullptr}}));
    frames.push_back(
        builder.frame({{"module", vendor}, {"offset", 0x5678}, {"function", "vendor_alloc"}}));
    frames.push_back(
        builder.frame({{"module", -1}, {"offset", 0x7ffd0badf00d}, {"function", nullptr}}));
  }
  for (uintptr_t address : allocation.stack) {
    frames.push_back(
        builder.frame({{"module", exe}, {"offset", address - exe_.base}, {"function", nullptr}}));
  }
  if (allocation.decoration == Decoration::kPython) {
    frames.push_back(builder.frame(
        {{"python", true}, {"file", "model.py"}, {"line", 42}, {"function", "forward"}}));
    frames.push_back(builder.frame(
        {{"python", true}, {"file", "train.py"}, {"line", 17}, {"function", "train_step"}}));
    frames.push_back(builder.frame(
        {{"python", true}, {"file", "train.py"}, {"line", 3}, {"function", "<module>"}}));
  }
  return builder.stack(frames);
}

// The pool at the failure: segments whose free blocks add up to more than the request but none as
// large (a "fragmentation" verdict), the device full, another process holding the rest.
json Recorder::out_of_memory(const std::vector<int64_t>& site_stacks, int64_t failing_stack) const {
  const json segments = {
      {{"base", kSegmentBase},
       {"size", 20 * kMiB},
       {"blocks", json::array({{4 * kMiB, kMiB, "free"},
                               {8 * kMiB, kMiB / 2, "pending"},
                               {17 * kMiB, 3 * kMiB, "free"}})}},
      {{"base", kSegmentBase + 20 * kMiB},
       {"size", 2 * kMiB},
       {"blocks", json::array({{0, kMiB / 4, "free"}, {kMiB, kMiB / 16, "free"}})}},
      {{"base", kSegmentBase + 22 * kMiB},
       {"size", 2 * kMiB},
       {"blocks", json::array({{kMiB / 2, 3 * kMiB / 2, "free"}})}},
      {{"base", kSegmentBase + 24 * kMiB},
       {"size", 2 * kMiB},
       {"blocks", json::array({{11 * kMiB / 8, 5 * kMiB / 8, "free"}})}},
  };
  int64_t reserved = 0, free = 0, pending = 0, largest = 0;
  for (const json& segment : segments) {
    reserved += segment["size"].get<int64_t>();
    for (const json& block : segment["blocks"]) {
      const auto size = block[1].get<int64_t>();
      (block[2] == "free" ? free : pending) += size;
      if (block[2] == "free") largest = std::max(largest, size);
    }
  }
  const int64_t direct = kMiB / 2;  // the managed allocation
  const int64_t device_total = 48 * kMiB;
  // The leading sites: the three with the most live bytes, most first.
  std::vector<size_t> order(sites_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sites_[a].live_bytes > sites_[b].live_bytes; });
  json leading = json::array();
  for (size_t i = 0; i < 3 && i < order.size(); ++i) {
    const SiteState& site = sites_[order[i]];
    leading.push_back({{"stack", site_stacks[order[i]]},
                       {"kind", site.first.kind},
                       {"live_bytes", site.live_bytes},
                       {"live_count", site.live_count}});
  }
  return {{"request",
           {{"bytes", failed_->bytes},
            {"kind", failed_->kind},
            {"device", 0},
            {"call", "cuMemAlloc"},
            {"cause", "driver"},
            {"stack", failing_stack}}},
          {"time", kStartTime + 41.5},
          {"failures", 1},
          {"verdict", "fragmentation"},
          {"explanation",
           "fragmentation: the pool holds 6.4 MiB free, but no free block of 6.0 MiB (the largest "
           "is 3.0 MiB)"},
          {"device_total_bytes", device_total},
          {"device_free_bytes", 0},
          {"held_elsewhere_bytes", device_total - reserved - direct},
          {"in_use_bytes", reserved - free - pending},
          {"cached_bytes", free + pending},
          {"reserved_bytes", reserved},
          {"direct_bytes", direct},
          {"limit_bytes", nullptr},
          {"pool_free_bytes", free},
          {"pool_largest_free_block", largest},
          {"leading_sites", std::move(leading)},
          {"other_processes",
           {{{"pid", 4343},
             {"command", "python serve.py"},
             {"source", "vramshim"},
             {"in_use_bytes", device_total - reserved - direct},
             {"cached_bytes", 0},
             {"used_bytes", nullptr}}}},
          {"unasked", {"libnvidia-ml.so.1 is not installed"}},
          {"segments", segments}};
}

json Recorder::report(int64_t pid, const json& rank) const {
  json doc = header(pid, rank, failed_ ? "oom" : "exit", exe_.path);
  doc["devices"] = {{{"device", 0},
                     {"in_use_bytes", in_use_},
                     {"cached_bytes", reserved() - in_use_},
                     {"reserved_bytes", reserved()},
                     {"peak_in_use_bytes", peak_},
                     {"peak_reserved_bytes", reserved()},
                     {"driver_alloc_calls", static_cast<int64_t>(sites_.size())},
                     {"driver_free_calls", 1},
                     {"pool_hits", static_cast<int64_t>(live_.size() - sites_.size())},
                     {"pool_misses", static_cast<int64_t>(sites_.size())},
                     {"fences_issued", frees_},
                     {"synchronizations", 0},
                     {"released_by_flush_bytes", 2 * kMiB},
                     {"released_by_oom_bytes", 0},
                     {"released_by_idle_bytes", 0},
                     {"limit_bytes", nullptr}}};
  doc["peak"] = {{"in_use_bytes", peak_}, {"time", peak_time_}};

  ReportBuilder builder;
  const int64_t exe = builder.module(exe_.path, exe_.base, exe_.build_id);
  json sites = json::array();
  std::vector<int64_t> site_stacks;
  for (const SiteState& site : sites_) {
    site_stacks.push_back(stack_of(builder, exe, site.first));
    sites.push_back({{"stack", site_stacks.back()},
                     {"kind", site.first.kind},
                     {"live_bytes", site.live_bytes},
                     {"live_count", site.live_count},
                     {"total_bytes", site.total_bytes},
                     {"total_count", site.total_count},
                     {"peak_bytes", site.peak_bytes},
                     {"bytes_at_peak", site.bytes_at_peak}});
  }
  if (failed_) doc["oom"] = out_of_memory(site_stacks, stack_of(builder, exe, *failed_));
  builder.finish(doc);
  doc["sites"] = std::move(sites);
  json samples = json::array();
  for (const Sample& s : timeline_) samples.push_back({s.time, s.in_use, s.cached});
  doc["timeline"] = {{"interval_ms", 500}, {"samples", std::move(samples)}};
  return doc;
}

}  // namespace

// ---- The "program" whose allocations the report describes (external functions, as in most code).
// Its line numbers are in the golden files, pprof_export_test.sh and json_output_test: keep them.
// ----

Recorder* recorder = nullptr;

__attribute__((noinline)) void leak_in_model_forward() {
  recorder->allocate("device", 1 * kMiB);  // never freed: the leak the tests look for
}

namespace model {
struct Linear {
  __attribute__((noinline)) size_t forward(int batch) {
    return recorder->allocate("device", 8 * kMiB * batch / 4);
  }
};
}  // namespace model

__attribute__((always_inline)) inline size_t allocate_workspace(int64_t bytes) {
  return recorder->allocate("device", bytes);  // inlined into attention_block
}

__attribute__((noinline)) void attention_block() {
  const size_t workspace = allocate_workspace(4 * kMiB);
  recorder->free(workspace);
}

__attribute__((noinline)) void model_forward() {
  model::Linear layer;
  const size_t activations = layer.forward(4);
  attention_block();
  leak_in_model_forward();
  recorder->free(activations);
}

__attribute__((noinline)) void init_optimizer_state() { recorder->allocate("device", 16 * kMiB); }

__attribute__((noinline)) void leak_in_optimizer_step() { recorder->allocate("device", 5 * kMiB); }

__attribute__((noinline)) void prefetch_batch() {
  recorder->free(recorder->allocate("async", 2 * kMiB));
}

__attribute__((noinline)) void python_extension_op() {
  recorder->allocate("managed", kMiB / 2, Decoration::kPython);
}

__attribute__((noinline)) void vendor_kernel_setup() {
  recorder->allocate("device", 64 * 1024, Decoration::kVendorLibrary);
}

__attribute__((noinline)) void run_training(bool extra_leak) {
  init_optimizer_state();
  vendor_kernel_setup();
  for (int step = 0; step < 3; ++step) {
    prefetch_batch();
    model_forward();
    if (extra_leak) leak_in_optimizer_step();
  }
  python_extension_op();
}

// Asks for more than the pool can give, from deep in a recursion: the failing call's stack is
// longer than the out-of-memory view shows.
__attribute__((noinline)) void decode_step(int depth) {
  if (depth > 0) {
    decode_step(depth - 1);
  } else {
    recorder->fail("device", 6 * kMiB);
  }
}

namespace {

// ---- A large synthetic report for measurements. ----

json synthetic_report(const ModuleInfo& exe, int64_t stacks, int64_t depth,
                      int64_t live_allocations) {
  json doc = header(4242, 0, "exit", exe.path);
  ReportBuilder builder;
  const int64_t exe_module = builder.module(exe.path, exe.base, exe.build_id);
  const int64_t lib = builder.module("/nonexistent/libsynthetic_model.so", 0x7f0000000000, "");
  const uint64_t text = exe.text_end - exe.text_begin;
  json sites = json::array();
  const int64_t per_site = live_allocations / stacks;
  int64_t in_use = 0;
  for (int64_t s = 0; s < stacks; ++s) {
    std::vector<int64_t> frames(static_cast<size_t>(depth));
    for (int64_t level = 0; level < depth; ++level) {
      // Outer levels are shared by many stacks (a call tree); the outermost 8 are real code
      // addresses.
      const int64_t fanout = level < 4 ? 4 : level < 8 ? 64 : 1024 + level;
      const uint64_t choice = static_cast<uint64_t>((s * 2654435761LL + level * 40503) % fanout);
      json frame;
      if (level < 8) {
        frame = {{"module", exe_module},
                 {"offset", exe.text_begin - exe.base + (choice * 97 + level * 13) % text},
                 {"function", nullptr}};
      } else {
        frame = {{"module", lib},
                 {"offset", 0x1000 + level * 0x10000 + choice * 16},
                 {"function", "layer" + std::to_string(level) + "_op" + std::to_string(choice)}};
      }
      frames[static_cast<size_t>(depth - 1 - level)] = builder.frame(std::move(frame));
    }
    const int64_t bytes = ((s % 97) + 1) * 4096;
    in_use += bytes * per_site;
    sites.push_back({{"stack", builder.stack(frames)},
                     {"kind", s % 10 == 0 ? "async" : "device"},
                     {"live_bytes", bytes * per_site},
                     {"live_count", per_site},
                     {"total_bytes", bytes * per_site * 2},
                     {"total_count", per_site * 2},
                     {"peak_bytes", bytes * per_site},
                     {"bytes_at_peak", bytes * per_site}});
  }
  doc["devices"] = {{{"device", 0},
                     {"in_use_bytes", in_use},
                     {"cached_bytes", 0},
                     {"reserved_bytes", in_use},
                     {"peak_in_use_bytes", in_use},
                     {"limit_bytes", nullptr}}};
  doc["peak"] = {{"in_use_bytes", in_use}, {"time", kStartTime + 40}};
  builder.finish(doc);
  doc["sites"] = std::move(sites);
  json samples = json::array();
  for (int i = 0; i < 1000; ++i) {
    samples.push_back({kStartTime + 0.1 * i, in_use * i / 1000, in_use / 10});
  }
  doc["timeline"] = {{"interval_ms", 100}, {"samples", std::move(samples)}};
  return doc;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: fixture_report --out FILE [--pid N] [--rank R] [--scale K] [--extra-leak] "
               "[--oom]\n"
               "       fixture_report --out FILE --synthetic STACKS FRAMES LIVE_ALLOCATIONS\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int64_t pid = 4242, scale = 1;
  json rank = nullptr;
  bool extra_leak = false, out_of_memory = false;
  int64_t synthetic[3] = {0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (arg == "--out") {
      out = value();
    } else if (arg == "--pid") {
      pid = std::atoll(value());
    } else if (arg == "--rank") {
      rank = std::atoll(value());
    } else if (arg == "--scale") {
      scale = std::atoll(value());
    } else if (arg == "--extra-leak") {
      extra_leak = true;
    } else if (arg == "--oom") {
      out_of_memory = true;
    } else if (arg == "--synthetic") {
      for (int64_t& v : synthetic) v = std::atoll(value());
    } else {
      usage();
    }
  }
  if (out.empty()) usage();
  json doc;
  if (synthetic[0] > 0) {
    doc = synthetic_report(describe_executable(), synthetic[0], synthetic[1], synthetic[2]);
  } else {
    Recorder rec(scale);
    recorder = &rec;
    run_training(extra_leak);
    if (out_of_memory) decode_step(10);
    doc = rec.report(pid, rank);
  }
  std::ofstream(out) << doc.dump() << '\n';
  return 0;
}
