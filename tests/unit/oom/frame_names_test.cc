// What FrameNames says of a frame is what dladdr says of the byte before it (the call a return
// address ends): object, base and symbol, checked at random addresses of every loaded object's code
// (the program, the C and C++ runtimes, the loader, the vDSO, a library with only the old hash
// table), all looked up in one pass.
#include "shim/oom/frame_names.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace vramshim::oom {
namespace {

struct Collection {
  std::mt19937_64 random{5};
  std::vector<uint64_t> frames;
  size_t objects = 0;
};

int collect_frames(dl_phdr_info* info, size_t, void* data) {
  Collection& collection = *static_cast<Collection*>(data);
  ++collection.objects;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0 || header.p_memsz == 0) continue;
    for (int probe = 0; probe < 5000; ++probe) {
      const uint64_t call = info->dlpi_addr + header.p_vaddr + collection.random() % header.p_memsz;
      collection.frames.push_back(call + 1);
    }
  }
  return 0;
}

std::string shown(const char* text) { return text != nullptr ? text : "(none)"; }

TEST(FrameNames, SayOfEveryFrameWhatDladdrSays) {
  void* sysv = dlopen("tests/unit/report/libsysv_hash_library.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(sysv, nullptr) << dlerror();
  Collection collection;
  dl_iterate_phdr(collect_frames, &collection);
  const auto heap = std::make_unique<char[]>(64);
  collection.frames.push_back(reinterpret_cast<uint64_t>(heap.get()) + 1);  // in no object
  const FrameNames names(collection.frames);
  std::vector<std::string> differences;
  size_t named = 0;
  for (const uint64_t frame : collection.frames) {
    Dl_info expected{};
    const bool found = dladdr(reinterpret_cast<void*>(frame - 1), &expected) != 0;
    const FrameName* name = names.find(frame);
    std::string difference;
    if (found != (name != nullptr)) {
      difference = found ? "not found" : "found, dladdr finds none";
    } else if (name != nullptr) {
      named += name->symbol ? 1 : 0;
      if (name->module != shown(expected.dli_fname)) {
        difference = "module " + name->module + ", dladdr " + shown(expected.dli_fname);
      } else if (name->base != reinterpret_cast<uint64_t>(expected.dli_fbase)) {
        difference = "base differs";
      } else if (shown(name->symbol ? name->symbol->c_str() : nullptr) !=
                 shown(expected.dli_sname)) {
        difference = "symbol " + shown(name->symbol ? name->symbol->c_str() : nullptr) +
                     ", dladdr " + shown(expected.dli_sname);
      }
    }
    if (!difference.empty() && differences.size() < 10) {
      differences.push_back(shown(expected.dli_fname) + " frame " + std::to_string(frame) + ": " +
                            difference);
    }
  }
  EXPECT_GE(collection.objects, 5u);
  EXPECT_GT(named, collection.frames.size() / 4);
  EXPECT_TRUE(differences.empty())
      << differences.size() << " differences, first: " << differences.front();
  EXPECT_EQ(names.find(reinterpret_cast<uint64_t>(heap.get()) + 1), nullptr);
  dlclose(sysv);
}

// An object holding a few of the frames is asked of dladdr, one holding many has its table read:
// the same answers either way, for any number of frames from each object.
TEST(FrameNames, SayWhatDladdrSaysForFewFramesAsForMany) {
  Collection collection;
  dl_iterate_phdr(collect_frames, &collection);
  std::mt19937_64 random(9);
  for (const size_t count : {1, 3, 24, 25, 60}) {
    std::vector<uint64_t> frames;
    for (size_t i = 0; i < count; ++i) {
      frames.push_back(collection.frames[random() % collection.frames.size()]);
    }
    const FrameNames names(frames);
    for (const uint64_t frame : frames) {
      Dl_info expected{};
      ASSERT_NE(dladdr(reinterpret_cast<void*>(frame - 1), &expected), 0);
      const FrameName* name = names.find(frame);
      ASSERT_NE(name, nullptr) << count;
      EXPECT_EQ(name->base, reinterpret_cast<uint64_t>(expected.dli_fbase)) << count;
      EXPECT_EQ(shown(name->symbol ? name->symbol->c_str() : nullptr), shown(expected.dli_sname))
          << count << " frames, one in " << shown(expected.dli_fname);
    }
  }
}

TEST(FrameNames, KnowsOnlyTheFramesItWasAskedAbout) {
  const uint64_t frame = reinterpret_cast<uint64_t>(&dladdr) + 1;
  EXPECT_EQ(FrameNames().find(frame), nullptr);
  const FrameNames names({frame, frame, 0});
  ASSERT_NE(names.find(frame), nullptr);
  EXPECT_EQ(names.find(frame + 16), nullptr);
}

}  // namespace
}  // namespace vramshim::oom
