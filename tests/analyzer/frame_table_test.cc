// The frames the views show: a name a report makes absurdly long is shown cut, once per frame
// table, so that no view multiplies it by the frames and stacks that hold it; a site is labelled by
// its user's code, not by the CUDA runtime or a framework's allocator wherever they are linked; and
// frames known only by function name stay apart by where in it they are.
#include "analyzer/model/frame_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/model/report.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

TEST(FrameTable, ShowsAnAbsurdlyLongNameCutAtACharacter) {
  Report report;
  Frame frame;
  frame.python = true;
  frame.file = std::string(1 << 20, 'f');  // 1 MiB
  frame.line = 3;
  frame.function = "x";  // then two-byte characters: byte 4096 is inside one
  for (int i = 0; i < 600000; ++i) frame.function += "\u00e9";
  report.frames.push_back(frame);
  Frame usual = frame;
  usual.function = "step";
  usual.file = "train.py";
  report.frames.push_back(usual);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  ASSERT_EQ(table.size(), 2u);
  const DisplayFrame& shown = table.frame(0);
  EXPECT_LE(shown.function.size(), 4096u);
  EXPECT_LE(shown.file.size(), 4096u);
  // "…#" and 8 hex digits of the whole name's hash end it.
  const size_t ellipsis = shown.function.rfind("\u2026#");
  ASSERT_NE(ellipsis, std::string::npos);
  EXPECT_EQ(shown.function.size(), ellipsis + 3 + 1 + 8);
  EXPECT_EQ(shown.file.substr(0, 4084), std::string(4084, 'f'));
  // What precedes the "…" is whole characters: 'x' then two-byte 'é's.
  const std::string kept = shown.function.substr(0, ellipsis);
  EXPECT_EQ(kept.size() % 2, 1u);
  EXPECT_EQ(kept.substr(kept.size() - 2), "\u00e9");
  // Names that share their first 4 KiB stay apart.
  Report twins;
  for (const char last : {'a', 'b'}) {
    Frame twin = usual;
    twin.function = std::string(5000, 't') + last;
    twins.frames.push_back(twin);
  }
  const FrameTable apart(twins, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(apart.size(), 2u);
  EXPECT_EQ(table.frame(1).function, "step");
  EXPECT_EQ(table.frame(1).file, "train.py");
}

// A native frame of the report: module index, module offset and dladdr's (mangled) name.
Frame native_frame(int64_t module, uint64_t offset, const char* function) {
  Frame frame;
  frame.module = module;
  frame.offset = offset;
  frame.function = function;
  return frame;
}

// The frame that labels a report stack, kNoFrame for none.
uint32_t label_id_of(const FrameTable& table, int64_t stack) {
  std::vector<uint32_t> visible;
  table.visible_stack(stack, visible);
  return table.label(visible);
}

// Its function, and its line.
std::string label_of(const FrameTable& table, int64_t stack) {
  const uint32_t label = label_id_of(table, stack);
  return label == kNoFrame ? "(none)" : table.frame(label).function;
}
int64_t label_line_of(const FrameTable& table, int64_t stack) {
  const uint32_t label = label_id_of(table, stack);
  return label == kNoFrame ? -1 : table.frame(label).line;
}

// nvcc links the CUDA runtime into the program (-cudart static is its default), and a LibTorch
// program allocates through libc10_cuda's caching allocator and libtorch: neither names the user's
// code, which is what each site is labelled by. The binaries are gone, so names come from dladdr.
TEST(FrameTable, LabelsBySiteTheUsersCodeNotTheRuntimeOrAllocatorLinkedIntoIt) {
  Report report;
  report.modules = {{"/opt/app/serve", 0x400000, ""},
                    {"/opt/libtorch/lib/libc10_cuda.so", 0x7f0000000000, ""},
                    {"/opt/libtorch/lib/libtorch_cpu.so", 0x7f1000000000, ""}};
  report.frames = {
      native_frame(0, 0x9120, "_ZN6cudart22driverHelper_mallocPtrEmPPv"),
      native_frame(0, 0x8a40, "_ZN6cudart13cudaApiMallocEPPvm"),
      native_frame(0, 0x7e10, "cudaMalloc"),
      native_frame(0, 0x1234, "_Z12load_weightsv"),
      native_frame(0, 0x1456, "_Z13make_kv_cachev"),
      native_frame(0, 0x1600, "main"),
      native_frame(1, 0x3c200,
                   "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEamP11C"
                   "Ustream_st"),
      native_frame(2, 0x51000, "_ZN2at6detail13empty_genericEv"),
      native_frame(0, 0x1789, "_Z11build_modelv"),
  };
  report.stacks = {{{0, 1, 2, 3, 5}}, {{0, 1, 2, 4, 5}}, {{6, 7, 8, 5}}};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(label_of(table, 0), "load_weights()");
  EXPECT_EQ(label_of(table, 1), "make_kv_cache()");
  EXPECT_EQ(label_of(table, 2), "build_model()");
  // They are only passed over for the label: --stacks still shows every frame of the stack.
  std::vector<uint32_t> visible;
  table.visible_stack(0, visible);
  ASSERT_EQ(visible.size(), 5u);
  EXPECT_EQ(table.frame(visible[0]).function,
            "cudart::driverHelper_mallocPtr(unsigned long, void**)");
  EXPECT_EQ(table.frame(visible[2]).function, "cudaMalloc");
  table.visible_stack(2, visible);
  EXPECT_EQ(visible.size(), 4u);
}

// A frame of an imported PyTorch snapshot: a function name, no module.
Frame snapshot_frame(const char* function, const char* file = "") {
  Frame frame;
  frame.function = function;
  frame.file = file;
  frame.symbolized = true;
  return frame;
}

// A backward pass allocates on PyTorch's autograd threads: no Python line and no code of the
// user's in its stack. Such a site is named by the autograd node that ran, else by the operator,
// not by the allocator (nor, in a snapshot PyTorch recorded with its C++ frames, by the recorder
// that took the stack, which the views leave out as PyTorch's viewer does).
TEST(FrameTable, LabelsAFrameworksOwnStackByItsOperation) {
  Report report;
  report.frames = {
      snapshot_frame("torch::unwind::unwind()"),
      snapshot_frame("torch::CapturedTraceback::gather(bool, bool, bool)"),
      snapshot_frame("torch::cuda::(anonymous namespace)::gather_with_cpp()",
                     "memory_snapshot.cpp"),
      snapshot_frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, "
                     "unsigned long, CUstream_st*)",
                     "CUDACachingAllocator.cpp"),
      snapshot_frame("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
      snapshot_frame("at::_ops::neg::redispatch(c10::DispatchKeySet, at::Tensor const&)"),
      snapshot_frame("at::_ops::neg::call(at::Tensor const&)"),
      snapshot_frame("torch::autograd::generated::SubBackward0::apply(std::vector<at::Tensor, "
                     "std::allocator<at::Tensor> >&&)"),
      snapshot_frame("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
                     "GraphTask> const&)"),
      snapshot_frame("execute_native_thread_routine", "../libstdc++-v3/src/c++11/thread.cc"),
      snapshot_frame("start_thread"),
      snapshot_frame("__clone3"),
      snapshot_frame("at::_ops::sum_dim_IntList::call(at::Tensor const&)"),
      snapshot_frame("torch::autograd::InputMetadata::reduce_grad(at::Tensor&) const"),
      snapshot_frame("_PyEval_EvalFrameDefault"),
      snapshot_frame("Py_RunMain"),
      snapshot_frame("__libc_start_main"),
      snapshot_frame("_start"),
      snapshot_frame("void at::cuda::blas::gemm<float>(char, char)"),
      // A stripped libc's thread start, named after its nearest exported symbol; clone.
      snapshot_frame("pthread_condattr_setpshared"),
      snapshot_frame("clone"),
      // cuBLAS's workspace, which PyTorch keeps per handle, asked for by the first matmul.
      snapshot_frame("at::cuda::getNewWorkspace()"),
      snapshot_frame("at::cuda::getCurrentCUDABlasHandle()"),
  };
  Frame step;
  step.python = true;
  step.function = "step";
  step.file = "train.py";
  step.line = 57;
  report.frames.push_back(step);  // 23
  report.stacks = {
      {{0, 1, 2, 3, 18, 5, 6, 7, 8, 9, 10, 11}},     // a backward node
      {{0, 1, 2, 3, 4, 12, 13, 8, 9, 10, 11}},       // a reduction the engine made, no node
      {{0, 1, 2, 3, 4, 6, 14, 23, 14, 15, 16, 17}},  // a forward step in Python
      {{0, 1, 2, 3, 4, 14, 15, 16, 17}},          // the interpreter's frames alone, no Python line
      {{0, 1, 2, 3, 18, 5, 6, 7, 8, 9, 19, 20}},  // a backward node, libc stripped
      {{0, 1, 2, 3, 21, 22, 18, 7, 8, 9, 10, 11}},  // a workspace, for a node
  };
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(label_of(table, 0),
            "torch::autograd::generated::SubBackward0::apply(std::vector<at::Tensor, "
            "std::allocator<at::Tensor> >&&)");
  EXPECT_EQ(label_of(table, 1), "at::_ops::sum_dim_IntList::call(at::Tensor const&)");
  EXPECT_EQ(label_of(table, 2), "step");
  EXPECT_EQ(label_of(table, 3),
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, "
            "unsigned long, CUstream_st*)");
  EXPECT_EQ(label_of(table, 4), label_of(table, 0));
  EXPECT_EQ(label_of(table, 5), "at::cuda::getNewWorkspace()");
  std::vector<uint32_t> visible;
  table.visible_stack(0, visible);
  ASSERT_EQ(visible.size(), 9u);  // the recorder's three frames left out
  EXPECT_EQ(table.frame(visible[0]).function.rfind("c10::cuda::", 0), 0u);

  // The same from the shim's own stacks: LibTorch's libraries, the C and C++ runtimes.
  Report native;
  native.modules = {{"/site-packages/torch/lib/libc10_cuda.so", 0x7f0000000000, ""},
                    {"/site-packages/torch/lib/libtorch_cpu.so", 0x7f1000000000, ""},
                    {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 0x7f2000000000, ""},
                    {"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f3000000000, ""}};
  native.frames = {native_frame(0, 0x3c200, "_ZN3c104cuda20CUDACachingAllocator9raw_allocEm"),
                   native_frame(1, 0x51000, "_ZN2at4_ops3neg4callEv"),
                   native_frame(1, 0x62000, "_ZN5torch8autograd9generated12SubBackward05applyEv"),
                   native_frame(1, 0x73000, "_ZN5torch8autograd6Engine11thread_mainEv"),
                   native_frame(2, 0xd6df4, "execute_native_thread_routine"),
                   native_frame(3, 0x89134, "start_thread")};
  native.stacks = {{{0, 1, 2, 3, 4, 5}}, {{0, 1, 3, 4, 5}}};
  const FrameTable native_table(native, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(label_of(native_table, 0), "torch::autograd::generated::SubBackward0::apply()");
  EXPECT_EQ(label_of(native_table, 1), "at::_ops::neg::call()");
}

// A Python frame as the shim records one.
Frame python_frame(const char* file, int64_t line, const char* function) {
  Frame frame;
  frame.python = true;
  frame.file = file;
  frame.line = line;
  frame.function = function;
  return frame;
}

// A site is named by the user's Python line, not by the framework's Python code it called into
// (torch.nn.functional's silu, the kernels torch.compile generated); by the framework's line when
// the stack holds no other, and by the user's own native code before that.
TEST(FrameTable, LabelsBySiteTheUsersPythonLineNotTheFrameworks) {
  Report report;
  report.modules = {{"/work/ext/libmy_ops.so", 0x7f0000000000, ""}};
  report.frames = {
      python_frame("/venv/lib/python3.12/site-packages/torch/nn/functional.py", 2072, "silu"),
      python_frame("/venv/lib/python3.12/site-packages/transformers/models/llama/"
                   "modeling_llama.py",
                   216, "forward"),
      python_frame("/tmp/torchinductor_ana/z3/cz3vcpgk.py", 1226, "call"),
      python_frame("/home/ana/model/transformer.py", 205, "forward"),
      python_frame("/usr/local/lib/python3.11/dist-packages/torch/autograd/__init__.py", 127,
                   "_make_grads"),
      native_frame(0, 0x1200, "_Z11my_fused_opv"),
      python_frame("/usr/lib/python3.11/copy.py", 153, "deepcopy"),
      python_frame("/home/ana/train.py", 60, "main"),
      python_frame("/usr/lib/python3.11/threading.py", 982, "run"),
      native_frame(-1, 0, "frames past VRAMSHIM_STACK_DEPTH"),
  };
  report.stacks = {{{0, 1}}, {{2, 3}}, {{4}}, {{5, 0}}, {{0, 6, 7}}, {{0, 8}}, {{0, 0, 9}}};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(label_of(table, 0), "forward");
  EXPECT_EQ(label_line_of(table, 0), 216);
  EXPECT_EQ(label_of(table, 1), "forward");
  EXPECT_EQ(label_of(table, 2), "_make_grads");
  EXPECT_EQ(label_of(table, 3), "my_fused_op()");
  // The standard library's lines are the interpreter's: copy.deepcopy is named by its caller, a
  // thread the framework started by the framework's line, not Thread.run.
  EXPECT_EQ(label_of(table, 4), "main");
  EXPECT_EQ(label_of(table, 5), "silu");
  // A stack cut at VRAMSHIM_STACK_DEPTH is named by its frames, not by the mark of the cut.
  EXPECT_EQ(label_of(table, 6), "silu");
}

// A native report exported as a torch snapshot and imported again: frames without a source file
// come back named "module+0xoffset" with the module as their file, and the mark of a cut stack as
// a name. They keep their groups, so the labels are the report's.
TEST(FrameTable, AReportRoundTrippedThroughASnapshotKeepsItsLabels) {
  Report report;
  report.frames = {
      python_frame("/venv/lib/python3.12/site-packages/torch/nn/functional.py", 2072, "silu"),
      snapshot_frame("libffi.so.8+0x6f7a", "libffi.so.8"),
      snapshot_frame("python3.11+0x512cf4", "python3.11"),
      snapshot_frame("frames past VRAMSHIM_STACK_DEPTH"),
      snapshot_frame("libmy_ops.so+0x1200", "libmy_ops.so"),
      snapshot_frame("ffi_call", "libffi.so.8"),
      // A source file's name is no module's, though it begins as the interpreter's does.
      snapshot_frame("wrap_tensor(at::TensorBase)", "python_variable.cpp"),
  };
  report.stacks = {{{0, 1, 2, 3}}, {{4, 0, 1}}, {{5, 0, 2}}, {{6, 0}}};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(label_of(table, 0), "silu");
  EXPECT_EQ(label_of(table, 1), "libmy_ops.so+0x1200");
  EXPECT_EQ(label_of(table, 2), "silu");
  EXPECT_EQ(label_of(table, 3), "wrap_tensor(at::TensorBase)");
  std::vector<uint32_t> visible;
  table.visible_stack(0, visible);
  EXPECT_EQ(table.frame(visible[2]).library, support::LibraryGroup::kInterpreter);
  EXPECT_EQ(table.frame(visible[1]).library, support::LibraryGroup::kForeignCalls);
}

// Without line information (the binary rebuilt or gone), a function's two allocations are two
// sites, each at its own offset, as they are by file:line with it.
TEST(FrameTable, TellsAFunctionsCallSitesApartByOffsetWithoutLineInformation) {
  Report report;
  report.modules = {{"/gone/libtwo.so", 0x7f0000000000, "ab12"}};
  report.frames = {native_frame(0, 0x1130, "_Z9two_sitesv"),
                   native_frame(0, 0x1150, "_Z9two_sitesv")};
  report.stacks = {{{0}}, {{1}}};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  ASSERT_EQ(table.size(), 2u);
  std::vector<uint32_t> first, second;
  table.visible_stack(0, first);
  table.visible_stack(1, second);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(table.label(first), table.label(second));
  EXPECT_EQ(table.frame(first[0]).location(), "libtwo.so+0x1130");
  EXPECT_EQ(table.frame(second[0]).location(), "libtwo.so+0x1150");
  EXPECT_NE(table.identity(0), table.identity(1));
}

// The frame the shim ends a stack with when its depth cut it (FORMAT.md) is in no module, at offset
// 0: it has no place to show ("frames past VRAMSHIM_STACK_DEPTH (0x0)" before).
TEST(FrameTable, ShowsNoLocationForTheMarkOfACutStack) {
  Report report;
  report.modules = {{"/gone/libtwo.so", 0x7f0000000000, "ab12"}};
  report.frames = {native_frame(0, 0x1130, "_Z9two_sitesv"),
                   native_frame(-1, 0, "frames past VRAMSHIM_STACK_DEPTH")};
  report.stacks = {{{0, 1}}};
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  std::vector<uint32_t> visible;
  table.visible_stack(0, visible);
  ASSERT_EQ(visible.size(), 2u);
  const DisplayFrame& cut = table.frame(visible[1]);
  EXPECT_EQ(cut.name(), "frames past VRAMSHIM_STACK_DEPTH");
  EXPECT_EQ(cut.location(), "");
}

}  // namespace
}  // namespace vramshim::analyzer
