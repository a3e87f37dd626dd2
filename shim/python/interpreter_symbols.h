// The CPython entry points and data the shim uses, found at run time: the shim never links
// libpython.
#pragma once

namespace vramshim::python {

// Opaque stand-ins for PyObject*, PyThreadState* and PyGILState_STATE.
using PyObjectPtr = void*;
using PyThreadStatePtr = void*;
using GilState = int;

struct InterpreterSymbols {
  // Safe without the GIL (pure reads of runtime state).
  int (*Py_IsInitialized)() = nullptr;
  int (*Py_IsFinalizing)() = nullptr;  // _Py_IsFinalizing before 3.13
  PyThreadStatePtr (*PyGILState_GetThisThreadState)() = nullptr;
  const char* (*Py_GetVersion)() = nullptr;
  const unsigned long* Py_Version = nullptr;  // 3.11+
  const void* PyCode_Type = nullptr;
  const void* _PyRuntime = nullptr;
  const void* _PyEval_EvalFrameDefault = nullptr;

  // For the deep flush, with the GIL held.
  GilState (*PyGILState_Ensure)() = nullptr;
  void (*PyGILState_Release)(GilState) = nullptr;
  PyObjectPtr (*PyImport_GetModuleDict)() = nullptr;
  PyObjectPtr (*PyDict_GetItemString)(PyObjectPtr, const char*) = nullptr;
  PyObjectPtr (*PyObject_GetAttrString)(PyObjectPtr, const char*) = nullptr;
  PyObjectPtr (*PyObject_CallObject)(PyObjectPtr, PyObjectPtr) = nullptr;
  PyObjectPtr (*PyObject_CallFunctionObjArgs)(PyObjectPtr, ...) = nullptr;  // null-terminated
  PyObjectPtr (*PyLong_FromLong)(long) = nullptr;
  int (*PyObject_IsTrue)(PyObjectPtr) = nullptr;
  void (*Py_DecRef)(PyObjectPtr) = nullptr;
  PyObjectPtr (*PyErr_Occurred)() = nullptr;
  void (*PyErr_Fetch)(PyObjectPtr*, PyObjectPtr*, PyObjectPtr*) = nullptr;
  void (*PyErr_Clear)() = nullptr;
  PyObjectPtr (*PyObject_Str)(PyObjectPtr) = nullptr;
  const char* (*PyUnicode_AsUTF8)(PyObjectPtr) = nullptr;

  // True when the process has a CPython runtime: the capture entry points were all found.
  bool has_interpreter() const;
  // True when every entry point the deep flush calls was found.
  bool has_flush_api() const;
};

// Looks the symbols up with the C library's own dlsym, in this order: the global scope
// (RTLD_DEFAULT), the main program, then a loaded libpython3.*.so (an interpreter embedded with
// RTLD_LOCAL). All symbols come from the first of those that defines Py_IsInitialized. Walks the
// loaded objects: call it at init, not per allocation. All fields stay null in a process without
// Python.
InterpreterSymbols find_interpreter_symbols();

}  // namespace vramshim::python
