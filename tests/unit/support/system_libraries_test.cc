// The lists that label sites, as they read a demangled function: code of a template's instance
// starts with its return type, and the frames of a PyTorch snapshot have names and no module.
#include "shim/support/system_libraries.h"

#include <gtest/gtest.h>

#include <string>

#include "shim/support/framework_operations.h"
#include "shim/support/function_name.h"

namespace vramshim::support {
namespace {

TEST(FunctionName, TheReturnTypeOfATemplatesInstanceIsPassedOver) {
  EXPECT_STREQ(without_return_type("void at::cuda::blas::gemm<float>(char, char)"),
               "at::cuda::blas::gemm<float>(char, char)");
  EXPECT_STREQ(without_return_type("at::TensorBase at::detail::_empty_generic<long>(long)"),
               "at::detail::_empty_generic<long>(long)");
  EXPECT_STREQ(without_return_type("std::vector<int, std::allocator<int> > make<int>()"),
               "make<int>()");
  // An operator's name is no return type: its conversion type, its `<` and `>`.
  EXPECT_STREQ(without_return_type("mylib::LazyTensor::operator at::Tensor() const"),
               "mylib::LazyTensor::operator at::Tensor() const");
  EXPECT_STREQ(without_return_type("mylib::Conv::operator at::Tensor<at::Tensor>() const"),
               "mylib::Conv::operator at::Tensor<at::Tensor>() const");
  for (const char* op : {">", ">=", ">>", "<", "<=", "<< ", "+"}) {
    const std::string name =
        std::string("mylib::operator") + op + "<float>(mylib::Vec<float> const&, int)";
    EXPECT_EQ(without_return_type(("at::Tensor " + name).c_str()), name) << op;
  }
  EXPECT_STREQ(without_return_type("bool std::operator==<char>(char const*, char const*)"),
               "std::operator==<char>(char const*, char const*)");
  // Names without one are left whole: spaces in template arguments and parameters, an anonymous
  // namespace, an operator, no parameters at all.
  for (const char* whole :
       {"load(int, at::Tensor const&)", "std::function<void (int)>::operator()(int) const",
        "at::(anonymous namespace)::wrapper_CUDA_neg(at::Tensor const&)",
        "torch::autograd::Node::operator()(std::vector<at::Tensor>&&)",
        "operator<<(std::ostream&, Shape const&)", "main", ""}) {
    EXPECT_STREQ(without_return_type(whole), whole);
  }
}

TEST(SystemLibraries, PyTorchsCodeAndTheRuntimesAreKnownByNameWithoutAModule) {
  EXPECT_EQ(system_code_group("", "void at::cuda::blas::gemm<float>(char, char)"),
            LibraryGroup::kFramework);
  EXPECT_EQ(system_code_group("", "torch::unwind::unwind()"), LibraryGroup::kFramework);
  EXPECT_EQ(system_code_group("", "c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)"),
            LibraryGroup::kFramework);
  EXPECT_EQ(system_code_group("", "_PyEval_EvalFrameDefault"), LibraryGroup::kInterpreter);
  EXPECT_EQ(system_code_group("", "PyObject_Call"), LibraryGroup::kInterpreter);
  EXPECT_EQ(system_code_group("", "execute_native_thread_routine"), LibraryGroup::kCxxRuntime);
  EXPECT_EQ(system_code_group("", "start_thread"), LibraryGroup::kCLibrary);
  EXPECT_EQ(system_code_group("", "__clone3"), LibraryGroup::kCLibrary);
  // A snapshot's thread starts, a stripped libc's among them, and its unknown functions.
  for (const char* start : {"pthread_condattr_setpshared", "clone", "clone3", "__GI___clone3",
                            "__libc_start_call_main", "??"}) {
    EXPECT_EQ(system_code_group("", start), LibraryGroup::kCLibrary) << start;
  }
  EXPECT_EQ(
      system_code_group("", "std::vector<at::Tensor, std::allocator<at::Tensor> >::~vector()"),
      LibraryGroup::kCxxRuntime);
  EXPECT_EQ(system_code_group("", "THPVariable_mul(_object*, _object*, _object*)"),
            LibraryGroup::kFramework);
  EXPECT_EQ(system_code_group("", "void dispatch_cutlassB<float>(int)"), LibraryGroup::kFramework);
  EXPECT_EQ(system_code_group("", "cfunction_call"), LibraryGroup::kInterpreter);
  // The user's code, even where it names PyTorch's types, is an operator converting to one, or
  // its name has a question mark.
  EXPECT_EQ(system_code_group("", "load(int, at::Tensor const&)"), LibraryGroup::kUser);
  EXPECT_EQ(system_code_group("", "PyTorchTrainer::step()"), LibraryGroup::kUser);
  EXPECT_EQ(system_code_group("train", "Model::forward(at::Tensor const&)"), LibraryGroup::kUser);
  EXPECT_EQ(system_code_group("", "mylib::LazyTensor::operator at::Tensor() const"),
            LibraryGroup::kUser);
  EXPECT_EQ(system_code_group("", "at::Tensor mylib::operator><float>(mylib::Vec<float> const&)"),
            LibraryGroup::kUser);
  EXPECT_EQ(system_code_group("", "what?"), LibraryGroup::kUser);
}

TEST(SystemLibraries, TheFrameworksPythonFilesAreTheirsAndOtherPackagesTheUsers) {
  for (const char* file : {"/venv/lib/python3.12/site-packages/torch/nn/functional.py",
                           "/usr/lib/python3/dist-packages/torch/autograd/__init__.py",
                           "/tmp/torchinductor_ana/z3/cz3vcpgk.py",
                           "/opt/conda/lib/python3.10/site-packages/jax/_src/dispatch.py",
                           "/venv/lib/python3.12/site-packages/keras/src/layers/core/dense.py",
                           "/venv/lib/python3.12/site-packages/accelerate/hooks.py"}) {
    EXPECT_EQ(python_file_group(file), LibraryGroup::kFramework) << file;
  }
  for (const char* file :
       {"/usr/lib/python3.11/copy.py", "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py",
        "/opt/conda/lib64/python3.9/copy.py", "<frozen importlib._bootstrap>"}) {
    EXPECT_EQ(python_file_group(file), LibraryGroup::kInterpreter) << file;
  }
  for (const char* file :
       {"train.py", "/home/ana/torch/train.py", "/home/ana/my_torch_utils/model.py",
        "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py",
        "/venv/lib/python3.12/site-packages/torchvision/models/resnet.py",
        "/home/ana/my-packages/torch/model.py", "/home/ana/lib/python3stuff/train.py",
        "<ipython-input-3-5f2a>", "<string>", "<eval_with_key>.0"}) {
    EXPECT_EQ(python_file_group(file), LibraryGroup::kUser) << file;
  }
}

TEST(FrameworkOperations, AnAutogradNodeTellsMoreThanAnOperatorAndTheAllocatorNothing) {
  const int node = framework_operation_rank(
      "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, "
      "std::allocator<at::Tensor> >&&)");
  const int op =
      framework_operation_rank("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)");
  ASSERT_NE(node, kNotAnOperation);
  ASSERT_NE(op, kNotAnOperation);
  EXPECT_TRUE(tells_more(node, op));
  EXPECT_FALSE(tells_more(op, node));
  EXPECT_TRUE(tells_more(op, kNotAnOperation));
  EXPECT_EQ(framework_operation_rank("c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)"),
            kNotAnOperation);
  EXPECT_EQ(framework_operation_rank("torch::autograd::Engine::thread_main()"), kNotAnOperation);
  // A library's workspace kept by PyTorch is its own row, even when a node asked for it first.
  EXPECT_TRUE(tells_more(framework_operation_rank("at::cuda::getNewWorkspace()"), node));
  EXPECT_TRUE(tells_more(
      framework_operation_rank("at::cuda::CUDAContext::cublaslt_workspace(unsigned long)"), node));
}

}  // namespace
}  // namespace vramshim::support
