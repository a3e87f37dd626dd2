#include "analyzer/model/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "analyzer/files/regular_file.h"
#include "analyzer/model/compile_unit_ranges.h"
#include "analyzer/model/compile_unit_scopes.h"
#include "analyzer/model/debug_file_search.h"
#include "analyzer/model/function_names.h"
#include "analyzer/model/symbol_ranges.h"
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

// An ELF symbol's name without the version binutils writes into .symtab for a versioned library's
// symbols ("__libc_start_main@@GLIBC_2.34"); a mangled C++ name never holds '@'.
std::string without_symbol_version(const char* name) {
  const size_t at = std::strcspn(name, "@");
  return std::string(name, at > 0 ? at : std::strlen(name));
}

// The unit whose DIEs describe a compile unit's code: for a skeleton unit (-gsplit-dwarf), its
// split unit in the .dwo file when libdw finds that; else the unit itself.
Dwarf_Die code_unit(Dwarf_Die* unit) {
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die unit_die;
  Dwarf_Die split_die;
  if (dwarf_cu_info(unit->cu, &version, &unit_type, &unit_die, &split_die, nullptr, nullptr,
                    nullptr) == 0 &&
      unit_type == DW_UT_skeleton && split_die.cu != nullptr) {
    return split_die;
  }
  return *unit;
}

std::string strip_build_prefix(const char* file) {
  // Bazel compiles with -fdebug-prefix-map=$PWD=/proc/self/cwd; show workspace-relative paths.
  static const std::string kBazelPrefix = "/proc/self/cwd/";
  std::string path = file;
  if (path.compare(0, kBazelPrefix.size(), kBazelPrefix) == 0) path.erase(0, kBazelPrefix.size());
  return path;
}

// Drops the " (deleted)" the kernel appends to a file deleted while mapped.
void strip_deleted_suffix(std::string& path) {
  static const std::string kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() &&
      path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    path.resize(path.size() - kDeleted.size());
  }
}

std::string segment_fingerprint(const std::vector<LoadSegment>& segments) {
  std::string text;
  for (const LoadSegment& s : segments) {
    text += std::to_string(s.vaddr) + ',' + std::to_string(s.memsz) + ',' +
            std::to_string(s.filesz) + ',' + std::to_string(s.offset) + ';';
  }
  return text;
}

// The PT_LOAD program headers of an ELF file, as FORMAT.md records a module's.
std::vector<LoadSegment> load_segments(Elf* elf) {
  std::vector<LoadSegment> segments;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return segments;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(elf, static_cast<int>(i), &header) == nullptr || header.p_type != PT_LOAD) {
      continue;
    }
    segments.push_back({header.p_vaddr, header.p_memsz, header.p_filesz, header.p_offset});
  }
  return segments;
}

// The ELF file load_file hands libdwfl for the module it reports, and its path; find_handed_elf
// gives them when libdwfl asks for the module's file (in dwfl_module_getelf).
thread_local Elf* handed_elf = nullptr;
thread_local const char* handed_path = nullptr;

// A Dwfl_Callbacks::find_elf: the handed ELF file, its descriptor closed (-1: libdwfl closes none).
int find_handed_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char** file_name, Elf** elfp) {
  if (handed_elf == nullptr || handed_path == nullptr) return -1;
  *file_name = ::strdup(handed_path);  // libdwfl frees it
  *elfp = handed_elf;
  handed_elf = nullptr;
  return -1;
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
  int fd = -1;                    // the file's, until it is read whole (load_file)
  Dwfl_Module* module = nullptr;  // null: the file cannot be used
  // Added to a report offset (an ELF virtual address) to get the address libdwfl uses.
  uint64_t offset_to_address = 0;
  FunctionNames function_names;
  std::unique_ptr<CompileUnitRanges> compile_unit_ranges;  // see compile_units()
  std::unique_ptr<SymbolRanges> symbol_ranges;             // see symbols()
  // By the unit DIE's address in the loaded debug data; see scopes_of().
  std::unordered_map<const void*, std::unique_ptr<CompileUnitScopes>> unit_scopes;

  // The compile units by address, read at the first address libdw's own lookup misses.
  const CompileUnitRanges& compile_units() {
    if (compile_unit_ranges == nullptr) {
      compile_unit_ranges = std::make_unique<CompileUnitRanges>(module);
    }
    return *compile_unit_ranges;
  }
  // The ELF symbols by address, read at the first frame DWARF does not name.
  const SymbolRanges& symbols() {
    if (symbol_ranges == nullptr) symbol_ranges = std::make_unique<SymbolRanges>(module);
    return *symbol_ranges;
  }

  // The functions of a unit by address, read at the first address in it: only the units a report's
  // frames are in.
  const CompileUnitScopes& scopes_of(Dwarf_Die unit) {
    std::unique_ptr<CompileUnitScopes>& scopes = unit_scopes[unit.addr];
    if (scopes == nullptr) scopes = std::make_unique<CompileUnitScopes>(unit);
    return *scopes;
  }

  // Ends the Dwfl, then closes the descriptor it was handed the file by.
  void close() {
    if (dwfl != nullptr) dwfl_end(dwfl);
    dwfl = nullptr;
    if (fd >= 0) ::close(fd);
    fd = -1;
  }

  ~LoadedModule() { close(); }
};

Symbolizer::Symbolizer(std::FILE* warnings, std::string debug_root)
    : warnings_(warnings), debug_root_(std::move(debug_root)) {}
Symbolizer::~Symbolizer() = default;

Symbolizer::LoadedModule* Symbolizer::load(const Module& module) {
  const std::string identity = module.build_id + '\0' + segment_fingerprint(module.segments);
  const std::string path_key = module.path + '\0' + identity;
  if (const auto found = by_path_.find(path_key); found != by_path_.end()) return found->second;
  LoadedModule*& known = by_path_[path_key];  // null until loaded

  // Reports of older shims name a replaced executable "/path/prog (deleted)".
  std::string path = module.path;
  strip_deleted_suffix(path);
  std::string why;
  LoadedModule* loaded = load_file(module, path, identity, true, &why);
  if (loaded == nullptr && !module.build_id.empty()) {
    // The binary is gone or another one: its debug file, found by build-id, has the same
    // addresses, and the symbols and lines. Its segments are not checked, so it is loaded once for
    // its build-id, whatever segments the report's modules list (each list loaded it again: 100
    // modules of one build-id took 1.7 GB).
    std::string debug_why;
    loaded = load_file(module, debug_file_of(module.build_id), module.build_id, false, &debug_why);
  }
  if (loaded == nullptr && !why.empty()) {
    // The path is the report's: nothing in it acts on a terminal.
    warning_lines_.push_back("vramshim: " + terminal_safe(module.path) + ": " + why +
                             "; its frames are shown as module+offset");
    if (warnings_ != nullptr) std::fprintf(warnings_, "%s\n", warning_lines_.back().c_str());
  }
  known = loaded;
  return known;
}

std::string Symbolizer::debug_file_of(const std::string& build_id) const {
  if (build_id.size() < 3) return {};
  return debug_root_ + "/.build-id/" + build_id.substr(0, 2) + '/' + build_id.substr(2) + ".debug";
}

Symbolizer::LoadedModule* Symbolizer::load_file(const Module& module, const std::string& path,
                                                const std::string& identity, bool check_segments,
                                                std::string* why) {
  static const Dwfl_Callbacks callbacks = {
      .find_elf = find_handed_elf,
      .find_debuginfo = find_debug_file,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = debuginfod_only_path(),
  };
  // A report may name any path: only a regular file is opened, so a FIFO or a device cannot stall
  // or flood the analyzer. find_debug_file opens the debug files it looks for the same way.
  struct stat info;
  const int fd = path.empty() ? -1 : open_regular_file(path, &info, why);
  if (fd < 0) {
    if (path.empty() || errno == ENOENT) *why = "binary not found";
    return nullptr;
  }
  const FileKey file{info.st_dev, info.st_ino, identity};
  if (const auto same = by_file_.find(file); same != by_file_.end()) {
    ::close(fd);
    why->clear();  // a problem with a file is told once, however the report spells its path
    return same->second->module != nullptr ? same->second.get() : nullptr;
  }
  std::unique_ptr<LoadedModule>& slot = by_file_[file];
  slot = std::make_unique<LoadedModule>();
  // A file that cannot be used stays known (slot->module null), without its Dwfl or descriptor: a
  // report naming a thousand such modules used up the descriptors the output needs.
  const auto fail = [&](const std::string& reason) -> LoadedModule* {
    *why = reason;
    slot->close();
    return nullptr;
  };
  // libdwfl is handed the file mapped (find_handed_elf) and holds no descriptor of it; the slot
  // holds it until the file is read (below), so that the modules a report names are not limited by
  // the open files (a process of a thousand shared libraries used up 1,024).
  elf_version(EV_CURRENT);  // before libelf's first use (dwfl_begin would set it)
  Elf* main_elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  slot->fd = fd;
  if (main_elf == nullptr || elf_kind(main_elf) != ELF_K_ELF) {
    const std::string error = main_elf == nullptr ? elf_errmsg(-1) : "not an ELF file";
    if (main_elf != nullptr) elf_end(main_elf);
    return fail("not a readable ELF file (" + error + ")");
  }
  // The addresses dwfl_report_elf(…, base 0, …) gives the module: from 0, its first segment's
  // (page-aligned) address at 0.
  GElf_Addr first_address = 0, end_address = 0;
  bool loadable = false;
  size_t count = 0;
  if (elf_getphdrnum(main_elf, &count) == 0) {
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr header;
      if (gelf_getphdr(main_elf, static_cast<int>(i), &header) == nullptr ||
          header.p_type != PT_LOAD) {
        continue;
      }
      if (!loadable) first_address = header.p_vaddr & -std::max<GElf_Xword>(header.p_align, 1);
      loadable = true;
      end_address = std::max<GElf_Addr>(end_address, header.p_vaddr + header.p_memsz);
    }
  }
  if (!loadable || end_address <= first_address) {
    elf_end(main_elf);
    return fail("not a loadable ELF file (no PT_LOAD segment)");
  }
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (dwfl == nullptr) {
    elf_end(main_elf);
    return fail("cannot start libdwfl");
  }
  slot->dwfl = dwfl;
  Dwfl_Module* mod = dwfl_report_module(dwfl, path.c_str(), 0, end_address - first_address);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (mod == nullptr) {
    elf_end(main_elf);
    return fail(std::string("cannot start libdwfl (") + dwfl_errmsg(-1) + ")");
  }
  // Report offsets are ELF virtual addresses (FORMAT.md); libdwfl addresses add its bias.
  GElf_Addr bias = 0;
  handed_elf = main_elf;  // to find_handed_elf, which libdwfl calls now; it owns it from there
  handed_path = path.c_str();
  Elf* elf = dwfl_module_getelf(mod, &bias);
  if (handed_elf != nullptr) elf_end(handed_elf);  // not asked for
  handed_elf = nullptr;
  handed_path = nullptr;
  if (elf == nullptr) {
    return fail(std::string("cannot read its ELF headers (") + dwfl_errmsg(-1) + ")");
  }
  if (!module.build_id.empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int n = dwfl_module_build_id(mod, &bits, &vaddr);
    const std::string actual = n > 0 ? hex(bits, n) : std::string();
    if (actual != module.build_id) {
      return fail("build-id differs from the report's (the binary changed since the run)");
    }
  }
  // Without a build-id, the segments the loader mapped are what tell a rebuilt binary apart.
  if (check_segments && !module.segments.empty() && load_segments(elf) != module.segments) {
    return fail(module.build_id.empty()
                    ? "no build-id, and its segment layout differs from the report's (the binary "
                      "changed since the run)"
                    : "its segment layout differs from the report's (the binary changed since the "
                      "run)");
  }
  // Its DWARF read now, while the file has its descriptor: libdw takes the directory of split
  // DWARF (.dwo) files from it. Then the file is read whole (it is mapped) and its descriptor goes.
  Dwarf_Addr dwarf_bias = 0;
  dwfl_module_getdwarf(mod, &dwarf_bias);
  if (elf_cntl(elf, ELF_C_FDREAD) == 0) {
    ::close(slot->fd);
    slot->fd = -1;
  }
  slot->offset_to_address = bias;
  slot->module = mod;
  return slot.get();
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

  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, address, &cu_bias);
  // libdw finds a unit only through .debug_aranges, which clang, icpx and rustc do not write.
  if (cu == nullptr) cu = loaded->compile_units().find(address, &cu_bias);
  // Code without debug information between the parts of a unit that has some (crt1's _start among
  // a program's): libdw answers the unit for it, and its line table the row before it, which named
  // every stack's `_start` after a line of stl_vector.h. Such an address gets no line.
  // (A unit that does not say where its code lies is taken at its word.)
  const bool outside_the_unit =
      cu != nullptr &&
      (dwarf_hasattr(cu, DW_AT_ranges) != 0 || dwarf_hasattr(cu, DW_AT_high_pc) != 0) &&
      dwarf_haspc(cu, address - cu_bias) == 0;

  // Innermost line from the line table.
  std::string file;
  int line = 0;
  if (Dwfl_Line* src = outside_the_unit ? nullptr : dwfl_module_getsrc(mod, address)) {
    if (const char* name = dwfl_lineinfo(src, nullptr, &line, nullptr, nullptr, nullptr)) {
      file = strip_build_prefix(name);
    }
  }
  if (outside_the_unit) cu = nullptr;
  if (cu != nullptr && file.empty()) {
    if (Dwarf_Line* src = dwarf_getsrc_die(cu, address - cu_bias)) {
      if (const char* name = dwarf_linesrc(src, nullptr, nullptr)) {
        file = strip_build_prefix(name);
        dwarf_lineno(src, &line);
      }
    }
  }
  Dwarf_Die unit = cu != nullptr ? code_unit(cu) : Dwarf_Die{};
  const std::vector<Dwarf_Die> functions =
      cu != nullptr ? loaded->scopes_of(unit).functions_at(address - cu_bias)
                    : std::vector<Dwarf_Die>();
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (!functions.empty()) dwarf_getsrcfiles(&unit, &files, &nfiles);
  bool qualified = false;  // whether the last frame's name came from a linkage name
  for (Dwarf_Die function : functions) {
    const int tag = dwarf_tag(&function);
    SourceFrame frame;
    frame.function = loaded->function_names.name_of(&function, &qualified);
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
    if (files != nullptr && dwarf_attr(&function, DW_AT_call_file, &attr) != nullptr &&
        dwarf_formudata(&attr, &value) == 0 && value < nfiles) {
      if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) {
        file = strip_build_prefix(name);
      }
    }
    if (dwarf_attr(&function, DW_AT_call_line, &attr) != nullptr &&
        dwarf_formudata(&attr, &value) == 0) {
      line = static_cast<int>(value);
    }
  }

  // Without DWARF, or without a linkage name in it (GCC omits them for internal linkage, e.g. in
  // anonymous namespaces), the ELF symbol table names the function, with its parameters once
  // demangled.
  if (frames.empty() || frames.back().function.empty() || (!qualified && !frames.back().inlined)) {
    const char* symbol = loaded->symbols().find(address);
    if (symbol == nullptr) symbol = dwfl_module_addrname(mod, address);  // a sizeless symbol's
    if (symbol != nullptr) {
      const std::string name = demangle(without_symbol_version(symbol));
      if (frames.empty()) {
        frames.push_back({name, file, line, false});
      } else {
        frames.back().function = name;
      }
    } else if (frames.empty() && !file.empty()) {
      frames.push_back({std::string(), file, line, false});
    }
  }
  return frames;
}

}  // namespace vramshim::analyzer
