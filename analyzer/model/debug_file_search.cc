#include "analyzer/model/debug_file_search.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/files/regular_file.h"

namespace vramshim::analyzer {
namespace {

// The absolute entry of elfutils' default debuginfo_path, ":.debug:/usr/lib/debug".
const std::string kDebugRoot = "/usr/lib/debug";

// What a file must show to be the debug file sought.
struct Identity {
  std::string build_id;         // raw bytes; empty: the CRC decides
  std::optional<uint32_t> crc;  // of the whole file
};

struct Candidate {
  std::string path;
  bool named_by_real_path = false;  // as elfutils names what a .build-id link leads to
};

struct Search {
  Identity identity;
  std::vector<Candidate> candidates;  // in the order elfutils tries them
};

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : bytes) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// /usr/lib/debug/.build-id/xx/yyyy.debug, for the build-id sizes elfutils looks up (3 to 64 bytes).
void add_build_id_candidate(const std::string& build_id, std::vector<Candidate>* out) {
  if (build_id.size() < 3 || build_id.size() > 64) return;
  out->push_back({kDebugRoot + "/.build-id/" + hex(build_id.substr(0, 1)) + '/' +
                      hex(build_id.substr(1)) + ".debug",
                  true});
}

// Where elfutils' find_debuginfo_in_path looks for `link`, the debuglink of the module at
// `module_path`. An invented link (<module>.debug, for a module without one) is looked for under
// the module's own name as well, outside the module's directory.
void add_debuglink_candidates(const std::string& module_path, const std::string& link,
                              bool link_invented, std::vector<Candidate>* out) {
  const std::string module_base = base_name(module_path);
  auto add_in = [&](const std::string& directory) {
    out->push_back({directory + '/' + link});
    if (link_invented) out->push_back({directory + '/' + module_base});
  };
  const size_t slash = module_path.rfind('/');
  if (slash == std::string::npos) {
    // As elfutils: relative to the working directory.
    out->push_back({link});
    add_in(".debug");
    return;
  }
  const std::string directory = module_path.substr(0, slash);
  out->push_back({directory + '/' + link});
  add_in(directory + "/.debug");
  if (directory.empty() || directory[0] != '/') return;
  // /usr/lib/debug/<directory>, then with the directory's leading components dropped one at a
  // time, down to /usr/lib/debug itself.
  for (size_t from = 1;;) {
    const std::string subdirectory = directory.substr(from);
    if (subdirectory.empty()) return;  // a directory ending in "/": elfutils stops there too
    add_in(kDebugRoot + '/' + subdirectory);
    const size_t next = directory.find('/', from);
    if (next == std::string::npos) {
      add_in(kDebugRoot);
      return;
    }
    from = next + 1;
  }
}

// Where elfutils' find_debuginfo_in_path looks for `alt_name`, the dwz file that the debug
// information found at `debug_path` names.
void add_altlink_candidates(const std::string& debug_path, const std::string& alt_name,
                            std::vector<Candidate>* out) {
  const size_t slash = debug_path.rfind('/');
  const std::string in_directory =
      slash == std::string::npos ? "" : debug_path.substr(0, slash + 1);
  const std::string alt_base = base_name(alt_name);
  out->push_back({in_directory + alt_name});
  out->push_back({in_directory + ".dwz/" + alt_base});
  out->push_back({in_directory + ".debug/" + alt_name});
  out->push_back({kDebugRoot + '/' + alt_base});
  out->push_back({kDebugRoot + "/.dwz/" + alt_base});
}

// `path`, then its real path if that differs: elfutils searches again from a symbolic link's
// target.
std::vector<std::string> module_paths(const char* path) {
  std::vector<std::string> paths = {path};
  if (char* real = ::realpath(path, nullptr)) {
    if (paths[0] != real) paths.emplace_back(real);
    std::free(real);
  }
  return paths;
}

// The search for the module's own debug file.
Search debuglink_search(Dwfl_Module* module, const char* file_name, const char* debuglink,
                        GElf_Word debuglink_crc) {
  Search search;
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int build_id_size = dwfl_module_build_id(module, &bits, &vaddr);
  if (build_id_size > 0) {
    search.identity.build_id.assign(reinterpret_cast<const char*>(bits), build_id_size);
    add_build_id_candidate(search.identity.build_id, &search.candidates);
  } else if (debuglink != nullptr && debuglink_crc != 0) {
    search.identity.crc = debuglink_crc;
  }
  // Else there is nothing to check a file against (a CRC of 0 means none): as elfutils, the
  // first file found is taken.
  if (file_name == nullptr) return search;  // libdwfl always passes the module's file name
  const bool link_invented = debuglink == nullptr;
  const std::string link = link_invented ? base_name(file_name) + ".debug" : debuglink;
  for (const std::string& path : module_paths(file_name)) {
    add_debuglink_candidates(path, link, link_invented, &search.candidates);
  }
  return search;
}

// The search for the dwz file that the module's debug information refers to; nothing to search
// for if that information names none.
Search altlink_search(Dwfl_Module* module, const char* file_name, const char* alt_name) {
  Search search;
  Dwarf_Addr bias = 0;
  // Loaded already (libdwfl looks for the dwz file right after), so this cannot call back.
  Dwarf* dwarf = dwfl_module_getdwarf(module, &bias);
  const char* name = nullptr;
  const void* build_id = nullptr;
  const ssize_t build_id_size =
      dwarf != nullptr ? dwelf_dwarf_gnu_debugaltlink(dwarf, &name, &build_id) : -1;
  if (build_id_size <= 0 || alt_name == nullptr) return search;
  search.identity.build_id.assign(static_cast<const char*>(build_id), build_id_size);
  add_build_id_candidate(search.identity.build_id, &search.candidates);
  if (file_name == nullptr) return search;
  for (const std::string& path : module_paths(file_name)) {
    add_altlink_candidates(path, alt_name, &search.candidates);
  }
  return search;
}

std::string build_id_of(int fd) {
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (elf == nullptr) return {};
  const void* bits = nullptr;
  const ssize_t size = dwelf_elf_gnu_build_id(elf, &bits);
  std::string build_id = size > 0 ? std::string(static_cast<const char*>(bits), size) : "";
  elf_end(elf);
  return build_id;
}

// The largest file whose CRC is worked out. The CRC covers the whole file, and the candidates lie
// where a report points: a file of terabytes (sparse, it takes no room) would be read for hours.
// A module without a build-id, whose debug file only its CRC tells, has a debug file far smaller.
constexpr off_t kMaxCrcFileBytes = off_t{4} << 30;

// The file's CRC32 as .gnu_debuglink records it: zlib's, over the whole file; none past
// kMaxCrcFileBytes (the file grew after it was looked at).
std::optional<uint32_t> crc_of(int fd) {
  std::vector<unsigned char> buffer(1 << 16);
  uLong crc = crc32(0, Z_NULL, 0);
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return static_cast<uint32_t>(crc);
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
    offset += n;
    if (offset > kMaxCrcFileBytes) return std::nullopt;
  }
}

bool matches(int fd, const struct stat& info, const Identity& identity) {
  if (!identity.build_id.empty()) return build_id_of(fd) == identity.build_id;
  if (identity.crc) return info.st_size <= kMaxCrcFileBytes && crc_of(fd) == identity.crc;
  return true;
}

// The first candidate that is a regular file other than `main_file` and matches the identity,
// open, with its name in *debug_file_name; or -1.
int open_first_match(const Search& search, const struct stat& main_file, char** debug_file_name) {
  for (const Candidate& candidate : search.candidates) {
    struct stat info;
    std::string why;
    const int fd = open_regular_file(candidate.path, &info, &why);
    if (fd < 0) continue;
    // As elfutils, the module's own file under another name is not its debug file.
    const bool is_main_file = info.st_dev == main_file.st_dev && info.st_ino == main_file.st_ino;
    if (is_main_file || !matches(fd, info, search.identity)) {
      ::close(fd);
      continue;
    }
    char* name =
        candidate.named_by_real_path ? ::realpath(candidate.path.c_str(), nullptr) : nullptr;
    if (name == nullptr) name = ::strdup(candidate.path.c_str());
    if (name == nullptr) {
      ::close(fd);
      return -1;
    }
    *debug_file_name = name;
    return fd;
  }
  return -1;
}

// libdwfl would ask the debuginfod servers of DEBUGINFOD_URLS for every module without local debug
// information. Ubuntu and Fedora set that variable for every login; on a GPU node without network a
// dropped connection costs up to 90 s per module, for symbols of system libraries a report rarely
// needs. So only VRAMSHIM_DEBUGINFOD=1 lets it ask.
bool debuginfod_asked() {
  const char* asked = std::getenv("VRAMSHIM_DEBUGINFOD");
  return asked != nullptr && std::strcmp(asked, "1") == 0;
}

}  // namespace

int find_debug_file(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                    const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                    char** debug_file_name) {
  Dwarf_Addr dwarf_bias = 0;
  const char* main_file_name = nullptr;
  dwfl_module_info(module, nullptr, nullptr, nullptr, &dwarf_bias, nullptr, &main_file_name,
                   nullptr);
  // libdwfl calls back a second time, for the dwz file, once the module has its debug
  // information; only then is the bias of that information known.
  const bool looking_for_dwz_file = dwarf_bias != static_cast<Dwarf_Addr>(-1);
  const Search search = looking_for_dwz_file
                            ? altlink_search(module, file_name, debuglink_file)
                            : debuglink_search(module, file_name, debuglink_file, debuglink_crc);
  struct stat main_file {};
  if (main_file_name != nullptr) ::stat(main_file_name, &main_file);
  const int fd = open_first_match(search, main_file, debug_file_name);
  if (fd >= 0 || !debuginfod_asked()) return fd;
  // Its own search of the local files finds nothing (debuginfod_only_path): it asks debuginfod.
  return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name,
                                      debuglink_file, debuglink_crc, debug_file_name);
}

char** debuginfod_only_path() {
  // No directory can be made at the top of procfs. An absolute entry (a relative one would name a
  // subdirectory of the module's directory) where every file is missing: ENOENT lets elfutils go
  // on to debuginfod, where ENOTDIR would stop it.
  static char path[] = "/proc/vramshim-no-debug-files";
  static char* debuginfo_path = path;
  return &debuginfo_path;
}

}  // namespace vramshim::analyzer
