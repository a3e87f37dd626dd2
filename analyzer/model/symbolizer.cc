#include "analyzer/model/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "analyzer/files/regular_file.h"
#include "analyzer/model/debug_file_search.h"
#include "analyzer/render/terminal_safe.h"

// libstdc++'s demangler, streaming its text through `callback` (the form its verbose terminate
// handler uses); 0 once the whole name is demangled.
extern "C" int __gcclibcxx_demangle_callback(const char* mangled,
                                             void (*callback)(const char*, size_t, void*),
                                             void* opaque);

namespace vramshim::analyzer {
namespace {

// The longest demangled name kept; a longer one stays mangled (see demangle).
constexpr size_t kMaxDemangledBytes = 16 << 10;

std::string hex(const unsigned char* bytes, int n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

const char* attribute_string(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// The demangled name of a subprogram or inlined subroutine: qualified when the DIE has a linkage
// name (sets *qualified), else the plain DW_AT_name.
std::string die_function_name(Dwarf_Die* die, bool* qualified) {
  *qualified = true;
  if (const char* linkage = attribute_string(die, DW_AT_linkage_name)) return demangle(linkage);
  if (const char* linkage = attribute_string(die, DW_AT_MIPS_linkage_name)) {
    return demangle(linkage);
  }
  *qualified = false;
  if (const char* name = attribute_string(die, DW_AT_name)) return name;
  return {};
}

std::string strip_build_prefix(const char* file) {
  // Bazel compiles with -fdebug-prefix-map=$PWD=/proc/self/cwd; show workspace-relative paths.
  static const std::string kBazelPrefix = "/proc/self/cwd/";
  std::string path = file;
  if (path.compare(0, kBazelPrefix.size(), kBazelPrefix) == 0) path.erase(0, kBazelPrefix.size());
  return path;
}

}  // namespace

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  // A mangled name's back-references can double its demangled length at each level: a 250-byte
  // name made of nested ones demangles to gigabytes (abi::__cxa_demangle: 1.1 GB and 3 s for one
  // such frame). The demangler's streaming form hands the text over in pieces, and is left by an
  // exception once the text passes kMaxDemangledBytes (it allocates nothing on the heap to leak);
  // such a name stays mangled.
  struct Demangled {
    std::string text;
  } demangled;
  struct TooLong {};
  const auto append = [](const char* piece, size_t length, void* to) {
    auto* into = static_cast<Demangled*>(to);
    if (into->text.size() + length > kMaxDemangledBytes) throw TooLong{};
    into->text.append(piece, length);
  };
  try {
    if (__gcclibcxx_demangle_callback(name.c_str(), append, &demangled) != 0) return name;
  } catch (const TooLong&) {
    return name;
  }
  return demangled.text;
}

struct Symbolizer::LoadedModule {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  // Added to a report offset (an ELF virtual address) to get the address libdwfl uses.
  uint64_t offset_to_address = 0;

  ~LoadedModule() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer(std::FILE* warnings) : warnings_(warnings) {}
Symbolizer::~Symbolizer() = default;

Symbolizer::LoadedModule* Symbolizer::load(const Module& module) {
  const std::string path_key = module.path + '\0' + module.build_id;
  if (const auto found = by_path_.find(path_key); found != by_path_.end()) return found->second;
  LoadedModule*& known = by_path_[path_key];  // null until loaded
  auto warn = [&](const std::string& why) {
    // The path is the report's: nothing in it acts on a terminal.
    warning_lines_.push_back("vramshim: " + terminal_safe(module.path) + ": " + why +
                             "; its frames are shown as module+offset");
    if (warnings_ != nullptr) std::fprintf(warnings_, "%s\n", warning_lines_.back().c_str());
  };

  static const Dwfl_Callbacks callbacks = {
      .find_elf = nullptr,
      .find_debuginfo = find_debug_file,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = debuginfod_only_path(),
  };
  // A report may name any path: only a regular file is opened, so a FIFO or a device cannot stall
  // or flood the analyzer. find_debug_file opens the debug files it looks for the same way.
  struct stat info;
  std::string why;
  const int fd = open_regular_file(module.path, &info, &why);
  if (fd < 0) {
    warn(errno == ENOENT ? "binary not found" : why);
    return nullptr;
  }
  const FileKey file{info.st_dev, info.st_ino, module.build_id};
  if (const auto same = by_file_.find(file); same != by_file_.end()) {
    ::close(fd);
    known = same->second->module != nullptr ? same->second.get() : nullptr;
    return known;
  }
  std::unique_ptr<LoadedModule>& slot = by_file_[file];
  slot = std::make_unique<LoadedModule>();
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (dwfl == nullptr) {
    ::close(fd);
    warn("cannot start libdwfl");
    return nullptr;
  }
  slot->dwfl = dwfl;
  // dwfl_report_elf takes ownership of fd (closes it with the Dwfl).
  Dwfl_Module* mod = dwfl_report_elf(dwfl, module.path.c_str(), module.path.c_str(), fd, 0, false);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (mod == nullptr) {
    warn(std::string("not a readable ELF file (") + dwfl_errmsg(-1) + ")");
    return nullptr;
  }
  if (!module.build_id.empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int n = dwfl_module_build_id(mod, &bits, &vaddr);
    const std::string actual = n > 0 ? hex(bits, n) : std::string();
    if (actual != module.build_id) {
      warn("build-id differs from the report's (the binary changed since the run)");
      return nullptr;
    }
  }
  // Report offsets are ELF virtual addresses (FORMAT.md); libdwfl addresses add its bias.
  GElf_Addr bias = 0;
  if (dwfl_module_getelf(mod, &bias) == nullptr) {
    warn("cannot read its ELF headers");
    return nullptr;
  }
  slot->offset_to_address = bias;
  slot->module = mod;
  known = slot.get();
  return known;
}

std::vector<SourceFrame> Symbolizer::resolve_return_address(const Module& module, uint64_t offset) {
  return resolve(module, offset > 0 ? offset - 1 : offset);
}

std::vector<SourceFrame> Symbolizer::resolve(const Module& module, uint64_t offset) {
  std::vector<SourceFrame> frames;
  LoadedModule* loaded = load(module);
  if (loaded == nullptr) return frames;
  Dwfl_Module* mod = loaded->module;
  const Dwarf_Addr address = offset + loaded->offset_to_address;

  // Innermost line from the line table.
  std::string file;
  int line = 0;
  if (Dwfl_Line* src = dwfl_module_getsrc(mod, address)) {
    if (const char* name = dwfl_lineinfo(src, nullptr, &line, nullptr, nullptr, nullptr)) {
      file = strip_build_prefix(name);
    }
  }

  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, address, &cu_bias);
  Dwarf_Die* scopes = nullptr;
  int nscopes = cu != nullptr ? dwarf_getscopes(cu, address - cu_bias, &scopes) : 0;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (nscopes > 0) dwarf_getsrcfiles(cu, &files, &nfiles);
  bool qualified = false;  // whether the last frame's name came from a linkage name
  for (int i = 0; i < nscopes; ++i) {
    Dwarf_Die* scope = &scopes[i];
    const int tag = dwarf_tag(scope);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    SourceFrame frame;
    frame.function = die_function_name(scope, &qualified);
    frame.file = file;
    frame.line = line;
    frame.inlined = tag == DW_TAG_inlined_subroutine;
    frames.push_back(std::move(frame));
    if (tag == DW_TAG_subprogram) break;
    // The next (outer) frame is at the call site of this inlined subroutine.
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    file.clear();
    line = 0;
    if (files != nullptr && dwarf_attr(scope, DW_AT_call_file, &attr) != nullptr &&
        dwarf_formudata(&attr, &value) == 0 && value < nfiles) {
      if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) {
        file = strip_build_prefix(name);
      }
    }
    if (dwarf_attr(scope, DW_AT_call_line, &attr) != nullptr &&
        dwarf_formudata(&attr, &value) == 0) {
      line = static_cast<int>(value);
    }
    // dwarf_getscopes continues past an inlined instance with its abstract definition's scopes; the
    // caller is found among the DIEs that physically contain the instance.
    Dwarf_Die* containing = nullptr;
    const int ncontaining = dwarf_getscopes_die(scope, &containing);
    std::free(scopes);
    scopes = containing;
    nscopes = ncontaining > 0 ? ncontaining : 0;
    i = 0;  // containing[0] is the instance itself; the loop's ++i moves past it
  }
  std::free(scopes);

  // Without DWARF, or without a linkage name in it (GCC omits them for internal linkage, e.g. in
  // anonymous namespaces), the ELF symbol table names the function, qualified once demangled.
  if (frames.empty() || frames.back().function.empty() || (!qualified && !frames.back().inlined)) {
    if (const char* name = dwfl_module_addrname(mod, address)) {
      if (frames.empty()) {
        frames.push_back({demangle(name), file, line, false});
      } else {
        frames.back().function = demangle(name);
      }
    } else if (frames.empty() && !file.empty()) {
      frames.push_back({std::string(), file, line, false});
    }
  }
  return frames;
}

}  // namespace vramshim::analyzer
