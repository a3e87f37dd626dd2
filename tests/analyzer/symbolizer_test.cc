// Symbolization against the real DWARF of the fixture program (built with -g -O0).
#include "analyzer/model/symbolizer.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {
namespace {

const char kFixture[] = "tests/analyzer/fixture_report_bin";
const char kFixtureSource[] = "tests/analyzer/fixture_report.cc";

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// The 1-based line of the fixture's source holding `text`.
int64_t source_line(const std::string& text) {
  std::ifstream in(kFixtureSource);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  ADD_FAILURE() << "not in the fixture: " << text;
  return 0;
}

Report fixture_report(const std::string& name) {
  const std::string path = temp_path(name);
  const std::string command = std::string(kFixture) + " --out " + path;
  EXPECT_EQ(std::system(command.c_str()), 0);
  return read_report(path);
}

// Reads everything written to a temporary FILE*.
std::string contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[512];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  return text;
}

size_t count_lines(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

// The visible stacks of all sites, as display frames.
std::vector<std::vector<DisplayFrame>> stacks(const Report& report, const FrameTable& table) {
  std::vector<std::vector<DisplayFrame>> out;
  for (const SiteView& site : collect_sites(report, table)) {
    std::vector<DisplayFrame> frames;
    for (uint32_t id : site.frames) frames.push_back(table.frame(id));
    out.push_back(std::move(frames));
  }
  return out;
}

const std::vector<DisplayFrame>* stack_starting_with(
    const std::vector<std::vector<DisplayFrame>>& all, const std::string& function) {
  for (const auto& frames : all) {
    if (!frames.empty() && frames[0].function == function) return &frames;
  }
  return nullptr;
}

TEST(Symbolizer, NamesTheLeakingFunctionAndLine) {
  const Report report = fixture_report("leak.json");
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const auto all = stacks(report, table);
  const auto* leak = stack_starting_with(all, "leak_in_model_forward()");
  ASSERT_NE(leak, nullptr);
  const DisplayFrame& top = (*leak)[0];
  EXPECT_EQ(top.file, kFixtureSource);
  EXPECT_EQ(top.line, source_line("never freed: the leak the tests look for"));
  EXPECT_FALSE(top.inlined);
  ASSERT_GE(leak->size(), 3u);
  EXPECT_EQ((*leak)[1].function, "model_forward()");
  EXPECT_EQ((*leak)[1].line, source_line("  leak_in_model_forward();"));
  EXPECT_EQ(leak->back().function, "main");
  // Qualified and demangled from DWARF.
  EXPECT_NE(stack_starting_with(all, "model::Linear::forward(int)"), nullptr);
}

TEST(Symbolizer, ShowsInlinedFramesWithTheirCallSite) {
  const Report report = fixture_report("inline.json");
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const auto all = stacks(report, table);
  const auto* stack = stack_starting_with(all, "allocate_workspace(long)");
  ASSERT_NE(stack, nullptr);
  ASSERT_GE(stack->size(), 3u);
  EXPECT_TRUE((*stack)[0].inlined);
  EXPECT_EQ((*stack)[0].line, source_line("inlined into attention_block"));
  EXPECT_EQ((*stack)[1].function, "attention_block()");
  EXPECT_FALSE((*stack)[1].inlined);
  EXPECT_EQ((*stack)[1].line, source_line("allocate_workspace(4 * kMiB)"));
  // Both display frames come from one return address (one report frame).
  EXPECT_EQ((*stack)[0].offset, (*stack)[1].offset);
  EXPECT_EQ((*stack)[2].function, "model_forward()");
}

TEST(Symbolizer, HidesDriverFramesAndShowsThemOnRequest) {
  const Report report = fixture_report("hide.json");
  Symbolizer symbolizer(nullptr);
  const FrameTable hidden(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  for (const auto& frames : stacks(report, hidden)) {
    for (const DisplayFrame& f : frames)
      EXPECT_EQ(f.module.find("libcuda"), std::string::npos) << f.name();
  }
  const FrameTable shown(report, symbolizer, HidePatterns{});
  const auto all = stacks(report, shown);
  const auto* driver = stack_starting_with(all, "cuMemAlloc_v2");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ((*driver)[0].module, "libcuda.so.1");
  EXPECT_EQ((*driver)[1].name(), "libcudart.so.13+0x4c210");  // no name, no binary: module+offset
}

TEST(Symbolizer, ChangedBinaryKeepsModuleOffsetAndWarnsOnce) {
  Report report = fixture_report("changed.json");
  for (Module& m : report.modules) {
    if (m.path.find("fixture_report_bin") != std::string::npos) m.build_id = "00000000deadbeef";
  }
  std::FILE* warnings = std::tmpfile();
  Symbolizer symbolizer(warnings);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  for (const auto& frames : stacks(report, table)) {
    for (const DisplayFrame& f : frames) {
      if (f.module == "fixture_report_bin") {
        EXPECT_TRUE(f.file.empty()) << f.name();
        EXPECT_EQ(f.name().rfind("fixture_report_bin+0x", 0), 0u) << f.name();
      }
    }
  }
  const std::string text = contents(warnings);
  std::fclose(warnings);
  // One line for the changed binary, one for the vendor library that does not exist.
  EXPECT_EQ(count_lines(text), 2u) << text;
  EXPECT_NE(text.find("fixture_report_bin: build-id differs"), std::string::npos) << text;
  EXPECT_NE(text.find("libmissing_vendor.so: binary not found"), std::string::npos) << text;
}

// A report may spell one binary's path many ways: it is loaded (and a problem with it told) once,
// not once per spelling (2,000 spellings of one binary took 3.5 GB).
TEST(Symbolizer, LoadsABinaryOnceHoweverItsPathIsSpelled) {
  const Report report = fixture_report("spellings.json");
  Module fixture;
  for (const Module& m : report.modules) {
    if (m.path.find("fixture_report_bin") != std::string::npos) fixture = m;
  }
  ASSERT_FALSE(fixture.path.empty());
  const size_t slash = fixture.path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : fixture.path.substr(0, slash);
  const std::string name = fixture.path.substr(slash + 1);
  std::FILE* warnings = std::tmpfile();
  Symbolizer symbolizer(warnings);
  std::string dots;
  for (int i = 0; i < 50; ++i, dots += "./") {
    Module spelled = fixture;
    spelled.path = directory + "/" + dots + name;
    spelled.build_id = "00000000deadbeef";  // told once, for the first spelling
    EXPECT_TRUE(symbolizer.resolve(spelled, 0x10).empty());
  }
  const std::string text = contents(warnings);
  std::fclose(warnings);
  EXPECT_EQ(count_lines(text), 1u) << text;
  EXPECT_NE(text.find("build-id differs"), std::string::npos) << text;
}

// The fixture binary's module in a fixture report, and the offset of a frame it names.
struct NamedFrame {
  Module module;
  uint64_t offset = 0;
  std::string function;
};

NamedFrame fixture_frame(const Report& report) {
  Symbolizer symbolizer(nullptr);
  for (const Frame& frame : report.frames) {
    if (frame.module < 0) continue;
    const Module& module = report.modules[static_cast<size_t>(frame.module)];
    if (module.path.find("fixture_report_bin") == std::string::npos) continue;
    const auto resolved = symbolizer.resolve_return_address(module, frame.offset);
    if (!resolved.empty() && !resolved.back().function.empty()) {
      return {module, frame.offset, resolved.back().function};
    }
  }
  ADD_FAILURE() << "no frame of the fixture binary is named";
  return {};
}

// The PT_LOAD program headers of an ELF64 file, as the shim records a module's.
std::vector<LoadSegment> file_segments(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  in.read(reinterpret_cast<char*>(&header), sizeof(header));
  std::vector<LoadSegment> segments;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    in.seekg(static_cast<std::streamoff>(header.e_phoff + i * header.e_phentsize));
    in.read(reinterpret_cast<char*>(&segment), sizeof(segment));
    if (segment.p_type != PT_LOAD) continue;
    segments.push_back({segment.p_vaddr, segment.p_memsz, segment.p_filesz, segment.p_offset});
  }
  return segments;
}

// A debug directory `name` (under the test's temporary directory) holding the named frame's binary
// as the debug file of its build-id (.build-id/xx/yyyy.debug); "" if it could not be made.
std::string debug_root_with(const NamedFrame& named, const std::string& name) {
  if (named.module.build_id.size() < 3) return "";
  const std::string root = temp_path(name);
  const std::string directory = root + "/.build-id/" + named.module.build_id.substr(0, 2);
  if (std::system(("mkdir -p " + directory).c_str()) != 0) return "";
  const std::string copy = "cp " + named.module.path + " " + directory + "/" +
                           named.module.build_id.substr(2) + ".debug";
  return std::system(copy.c_str()) == 0 ? root : "";
}

// A binary deleted or replaced since the run: the debug file its build-id names has the names.
TEST(Symbolizer, NamesFramesFromTheDebugFileOfTheBuildIdWhenTheBinaryIsGone) {
  const NamedFrame named = fixture_frame(fixture_report("gone.json"));
  const std::string root = debug_root_with(named, "debug-root");
  ASSERT_FALSE(root.empty());
  Module gone = named.module;
  gone.path = temp_path("no-such-dir/fixture_report_bin");
  Symbolizer symbolizer(nullptr, root);
  const auto resolved = symbolizer.resolve_return_address(gone, named.offset);
  ASSERT_FALSE(resolved.empty());
  EXPECT_EQ(resolved.back().function, named.function);
  EXPECT_TRUE(symbolizer.warnings().empty());

  Module deleted = named.module;  // as an older shim recorded a deleted executable
  deleted.path += " (deleted)";
  Symbolizer plain(nullptr, temp_path("empty-debug-root"));
  EXPECT_FALSE(plain.resolve_return_address(deleted, named.offset).empty());
}

// The debug file of a build-id is loaded once, however many modules of that build-id a report
// names and whatever segments it lists for each (its segments are not checked): each list loaded it
// again (100 of them took 1.7 GB of one 17 MB debug file).
TEST(Symbolizer, LoadsTheDebugFileOfABuildIdOnce) {
  const NamedFrame named = fixture_frame(fixture_report("gone_many.json"));
  const std::string root = debug_root_with(named, "debug-root-many");
  ASSERT_FALSE(root.empty());
  Symbolizer symbolizer(nullptr, root);
  for (uint64_t k = 0; k < 20; ++k) {
    Module gone = named.module;
    gone.path = temp_path("no-such-dir/lib" + std::to_string(k) + ".so");
    gone.segments = {{0, 4096 + k, 4096, 0}};
    const auto resolved = symbolizer.resolve_return_address(gone, named.offset);
    ASSERT_FALSE(resolved.empty());
    EXPECT_EQ(resolved.back().function, named.function);
  }
  EXPECT_EQ(symbolizer.files_loaded(), 1u);
}

// Without a build-id, the segments recorded from memory must be the file's.
TEST(Symbolizer, ChecksAModuleWithoutBuildIdByItsSegmentLayout) {
  const NamedFrame named = fixture_frame(fixture_report("layout.json"));
  Module same = named.module;
  same.build_id.clear();
  same.segments = file_segments(same.path);
  ASSERT_FALSE(same.segments.empty());
  Symbolizer symbolizer(nullptr);
  EXPECT_FALSE(symbolizer.resolve_return_address(same, named.offset).empty());
  EXPECT_TRUE(symbolizer.warnings().empty());

  Module rebuilt = same;
  rebuilt.segments.front().memsz += 0x40;  // the run's binary had more code
  EXPECT_TRUE(symbolizer.resolve_return_address(rebuilt, named.offset).empty());
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  EXPECT_NE(symbolizer.warnings()[0].find("no build-id, and its segment layout differs"),
            std::string::npos)
      << symbolizer.warnings()[0];
}

TEST(Symbolizer, FallsBackToTheSymbolTableWithoutDebugInfo) {
  const Report report = fixture_report("stripped.json");
  const std::string stripped = temp_path("fixture_stripped");
  ASSERT_EQ(
      std::system(("objcopy --strip-debug " + std::string(kFixture) + " " + stripped).c_str()), 0);
  Symbolizer symbolizer(nullptr);
  bool found = false;
  for (const Frame& frame : report.frames) {
    if (frame.module < 0 || frame.python) continue;
    Module module = report.modules[static_cast<size_t>(frame.module)];
    if (module.path.find("fixture_report_bin") == std::string::npos) continue;
    module.path = stripped;
    const auto resolved = symbolizer.resolve_return_address(module, frame.offset);
    ASSERT_EQ(resolved.size(), 1u);
    EXPECT_TRUE(resolved[0].file.empty());
    if (resolved[0].function == "leak_in_model_forward()") found = true;  // demangled symtab name
  }
  EXPECT_TRUE(found);
}

// The value of `symbol` in the ELF symbol table of `path` (nm), 0 when it has none.
uint64_t symbol_value(const std::string& path, const std::string& symbol) {
  std::FILE* nm = ::popen(("nm -P " + path).c_str(), "r");
  if (nm == nullptr) return 0;
  char line[1024], name[512], type[8];
  unsigned long long value = 0;
  uint64_t found = 0;
  while (std::fgets(line, sizeof line, nm) != nullptr) {
    // "name type value size"; undefined symbols have no value.
    if (std::sscanf(line, "%511s %7s %llx", name, type, &value) == 3 && symbol == name) {
      found = value;
    }
  }
  ::pclose(nm);
  return found;
}

// Code without debug information between the parts of a unit that has some: in growing_sites,
// crt1's `_start` lies inside the address span libdw gives a unit of the program, whose line table
// then answered its last row before it: every stack's outermost frame read `_start
// (/usr/include/c++/12/bits/stl_vector.h:733)`.
TEST(Symbolizer, GivesNoLineToCodeOutsideEveryUnit) {
  Module program;
  program.path = "tests/integration/programs/growing_sites";
  const uint64_t start = symbol_value(program.path, "_start");
  ASSERT_NE(start, 0u);
  Symbolizer symbolizer(nullptr);
  const std::vector<SourceFrame> frames = symbolizer.resolve_return_address(program, start + 5);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "_start");
  EXPECT_TRUE(frames[0].file.empty()) << frames[0].file << ":" << frames[0].line;
}

const char kInlineNamesFixture[] = "tests/analyzer/inline_names_fixture_bin";
const char kInlineNamesSource[] = "tests/analyzer/inline_names_fixture.cc";

// The 1-based line of inline_names_fixture.cc holding `text`.
int64_t inline_names_line(const std::string& text) {
  std::ifstream in(kInlineNamesSource);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  ADD_FAILURE() << "not in " << kInlineNamesSource << ": " << text;
  return 0;
}

// The return addresses inline_names_fixture (or its build `program`) prints, by label, as offsets
// in its binary.
std::map<std::string, uint64_t> inline_names_offsets(const char* program = kInlineNamesFixture) {
  std::map<std::string, uint64_t> offsets;
  std::FILE* output = ::popen(program, "r");
  if (output == nullptr) {
    ADD_FAILURE() << "cannot run " << program;
    return offsets;
  }
  char label[64];
  unsigned long long offset = 0;
  while (std::fscanf(output, "%63s %llx", label, &offset) == 2) offsets[label] = offset;
  EXPECT_EQ(::pclose(output), 0);
  EXPECT_EQ(offsets.size(), 5u);
  return offsets;
}

std::string describe(const std::vector<SourceFrame>& frames) {
  std::string text;
  for (const SourceFrame& frame : frames) {
    text += frame.function + " at " + frame.file + ":" + std::to_string(frame.line) +
            (frame.inlined ? " [inlined]\n" : "\n");
  }
  return text;
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// An inlined function's frame and the frame of the function it is inlined into.
struct InlinedCall {
  std::string function;
  std::string function_line;  // the text that marks its line in the fixture's source
  std::string caller;
  std::string call_line;
};

void expect_inlined_call(const std::vector<SourceFrame>& frames, const InlinedCall& expected) {
  ASSERT_EQ(frames.size(), 2u) << describe(frames);
  EXPECT_EQ(frames[0].function, expected.function) << describe(frames);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_TRUE(ends_with(frames[0].file, kInlineNamesSource)) << frames[0].file;
  EXPECT_EQ(frames[0].line, inline_names_line(expected.function_line));
  EXPECT_EQ(frames[1].function, expected.caller) << describe(frames);
  EXPECT_FALSE(frames[1].inlined);
  EXPECT_TRUE(ends_with(frames[1].file, kInlineNamesSource)) << frames[1].file;
  EXPECT_EQ(frames[1].line, inline_names_line(expected.call_line));
}

// GCC writes no linkage name for functions of internal linkage: inlined ones were named by their
// bare DW_AT_name, so that the call tree and folded stacks, which key frames by name, merged
// optimizer's and dataloader's make_buffer, and the two lambdas, into one function each.
TEST(Symbolizer, QualifiesTheNamesOfInlinedFunctionsWithoutALinkageName) {
  const auto offsets = inline_names_offsets();
  const Module fixture{kInlineNamesFixture};
  Symbolizer symbolizer(nullptr);
  const auto resolve = [&](const std::string& label) {
    return symbolizer.resolve_return_address(fixture, offsets.at(label));
  };
  expect_inlined_call(resolve("optimizer_make_buffer"),
                      {"optimizer::(anonymous namespace)::make_buffer",
                       "line: optimizer make_buffer", "make_buffers()", "line: optimizer call"});
  expect_inlined_call(resolve("dataloader_make_buffer"),
                      {"dataloader::(anonymous namespace)::make_buffer",
                       "line: dataloader make_buffer", "make_buffers()", "line: dataloader call"});
  expect_inlined_call(resolve("pool_grow"),
                      {"(anonymous namespace)::Pool<int>::grow", "line: Pool grow",
                       "make_buffers()", "line: Pool call"});
  const std::string first_at = std::to_string(inline_names_line("const auto first = "));
  const std::string second_at = std::to_string(inline_names_line("const auto second = "));
  expect_inlined_call(
      resolve("first_lambda"),
      {"run_lambdas()::{lambda at inline_names_fixture.cc:" + first_at + "}::operator()",
       "line: first lambda", "run_lambdas()", "line: first call"});
  expect_inlined_call(
      resolve("second_lambda"),
      {"run_lambdas()::{lambda at inline_names_fixture.cc:" + second_at + "}::operator()",
       "line: second lambda", "run_lambdas()", "line: second call"});
}

// clang, icpx and rustc write no .debug_aranges, through which alone libdw 0.188 finds the
// compile unit of an address: such binaries had no lines and no inlined frames.
TEST(Symbolizer, ResolvesTheSameWithoutDebugAranges) {
  const auto offsets = inline_names_offsets();
  const std::string without_aranges = temp_path("inline_names_without_aranges");
  ASSERT_EQ(std::system(("objcopy --remove-section=.debug_aranges " +
                         std::string(kInlineNamesFixture) + " " + without_aranges)
                            .c_str()),
            0);
  Symbolizer symbolizer(nullptr);
  for (const auto& [label, offset] : offsets) {
    const auto with = symbolizer.resolve_return_address(Module{kInlineNamesFixture}, offset);
    const auto without = symbolizer.resolve_return_address(Module{without_aranges}, offset);
    ASSERT_EQ(with.size(), 2u) << label << ":\n" << describe(with);
    EXPECT_EQ(describe(without), describe(with)) << label;
  }
}

// -gsplit-dwarf: the binary's skeleton unit holds no functions, its .dwo file does: the inlined
// frames and their names were lost.
TEST(Symbolizer, FindsInlinedFramesInTheSplitUnitOfASkeleton) {
  const char kSplitFixture[] = "tests/analyzer/inline_names_split_bin";
  const auto offsets = inline_names_offsets();
  const auto split_offsets = inline_names_offsets(kSplitFixture);
  Symbolizer symbolizer(nullptr);
  for (const auto& [label, offset] : offsets) {
    const auto whole = symbolizer.resolve_return_address(Module{kInlineNamesFixture}, offset);
    const auto split =
        symbolizer.resolve_return_address(Module{kSplitFixture}, split_offsets.at(label));
    ASSERT_EQ(whole.size(), 2u) << label << ":\n" << describe(whole);
    EXPECT_EQ(describe(split), describe(whole)) << label;
  }
}

// binutils writes the version of a versioned library's symbol into its .symtab name
// ("__libc_start_main@@GLIBC_2.34" where libc's debug symbols are installed).
TEST(Symbolizer, NamesAVersionedSymbolWithoutItsVersion) {
  const std::string library = "./tests/analyzer/libversioned_symbol.so";
  void* handle = ::dlopen(library.c_str(), RTLD_NOW);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  void* function = ::dlsym(handle, "versioned_function");
  ASSERT_NE(function, nullptr);
  link_map* loaded = nullptr;
  ASSERT_EQ(::dlinfo(handle, RTLD_DI_LINKMAP, &loaded), 0);
  const uint64_t offset = reinterpret_cast<uintptr_t>(function) - loaded->l_addr;
  Symbolizer symbolizer(nullptr);
  const auto frames = symbolizer.resolve(Module{library}, offset);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "versioned_function");
  ::dlclose(handle);
}

// A loopback listener standing in for a debuginfod server: says whether anyone connected.
class FakeDebuginfodServer {
 public:
  FakeDebuginfodServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~FakeDebuginfodServer() { ::close(fd_); }
  const std::string& url() const { return url_; }
  bool was_contacted() const {
    pollfd waiting{fd_, POLLIN, 0};
    return ::poll(&waiting, 1, 0) == 1;
  }

 private:
  int fd_ = -1;
  std::string url_;
};

// Whether symbolizing the fixture's frames, with the fixture stripped of its DWARF, made libdw
// connect to the debuginfod server that DEBUGINFOD_URLS names (a listener that never answers).
bool debuginfod_contacted(const std::string& name) {
  const Report report = fixture_report(name + ".json");
  const std::string stripped = temp_path(name + "_stripped");
  EXPECT_EQ(
      std::system(("objcopy --strip-debug " + std::string(kFixture) + " " + stripped).c_str()), 0);
  const FakeDebuginfodServer server;
  ::setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);
  ::setenv("DEBUGINFOD_CACHE_PATH", temp_path(name + "_cache").c_str(), 1);
  ::setenv("DEBUGINFOD_TIMEOUT", "2", 1);      // where asked: the listener never answers
  ::setenv("DEBUGINFOD_RETRY_LIMIT", "0", 1);  // one try
  Symbolizer symbolizer(nullptr);
  for (const Frame& frame : report.frames) {
    if (frame.module < 0 || frame.python) continue;
    Module module = report.modules[static_cast<size_t>(frame.module)];
    if (module.path.find("fixture_report_bin") == std::string::npos) continue;
    module.path = stripped;
    EXPECT_FALSE(symbolizer.resolve_return_address(module, frame.offset).empty());
  }
  ::unsetenv("DEBUGINFOD_URLS");
  return server.was_contacted();
}

// DEBUGINFOD_URLS is set for every login on Ubuntu; on a node without network libdw would wait on
// the servers for each module without local debug information. Unless VRAMSHIM_DEBUGINFOD=1 the
// symbolizer never lets it ask.
TEST(Symbolizer, DoesNotAskDebuginfodServersUnlessAsked) {
  EXPECT_FALSE(debuginfod_contacted("debuginfod_not_asked"));
}

// With VRAMSHIM_DEBUGINFOD=1, a module without a local debug file is looked up on the servers.
// (Fails where libdw has no debuginfod client; Debian 12's has one.)
TEST(Symbolizer, AsksDebuginfodServersWhenAsked) {
  ::setenv("VRAMSHIM_DEBUGINFOD", "1", 1);
  EXPECT_TRUE(debuginfod_contacted("debuginfod_asked"));
  ::unsetenv("VRAMSHIM_DEBUGINFOD");
}

TEST(Symbolizer, Demangles) {
  EXPECT_EQ(demangle("_ZN5model6Linear7forwardEi"), "model::Linear::forward(int)");
  EXPECT_EQ(demangle("cuMemAlloc_v2"), "cuMemAlloc_v2");
  EXPECT_EQ(demangle("_Znot a name"), "_Znot a name");
}

// f(void (*)(), void (*)(void (*)(), void (*)()), ...): each parameter names the one before it
// twice, so `levels` levels demangle to about 2^levels times the text of the first.
std::string doubling_name(int levels) {
  static const char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string name = "_Z1fPFvvE";
  for (int level = 1; level <= levels; ++level) {
    const int pointer = 2 * level - 2;  // the previous parameter's substitution
    const std::string id = pointer < 36 ? std::string(1, kDigits[pointer])
                                        : std::string{kDigits[pointer / 36], kDigits[pointer % 36]};
    name += "PFvS" + id + "_S" + id + "_E";
  }
  return name;
}

TEST(Symbolizer, KeepsANameMangledWhenItsDemangledFormWouldBeHuge) {
  // 6 levels: about 3 KiB demangled, kept.
  EXPECT_EQ(demangle(doubling_name(6)).rfind("f(void (*)(), ", 0), 0u);
  // 40 levels, 470 bytes: terabytes demangled (20 levels: 46 MB from abi::__cxa_demangle); the
  // demangler is left at 16 KiB of text, at once.
  const std::string huge = doubling_name(40);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(demangle(huge), huge);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace vramshim::analyzer
