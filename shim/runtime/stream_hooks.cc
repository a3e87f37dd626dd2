// Streams and stream capture. A pool hears of each stream created and destroyed (its fences cover
// the non-blocking ones and those still draining); while any capture runs, pools make no call that
// would invalidate it.
#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/internal_failure.h"
#include "shim/runtime/capture_probe.h"
#include "shim/runtime/runtime.h"

namespace vramshim::hooks {
namespace {

using intercept::contain_failure;
using runtime::Runtime;

CUresult created(CUresult result, CUstream* phStream, unsigned int flags) {
  if (result != CUDA_SUCCESS || phStream == nullptr) return result;
  contain_failure("cuStreamCreate", [&] {
    if (Runtime* runtime = Runtime::get()) {
      if (pool::CachingPool* pool = runtime->current_pool())
        pool->on_stream_created(*phStream, flags);
    }
  });
  return result;
}

// A capture ended, or was refused, or went with its stream: the last one lets the pools make the
// synchronizes they could not make during it.
void after_capture_over(Runtime& runtime) {
  if (!runtime.capture().active()) {
    contain_failure("cuStreamEndCapture", [&] { runtime.pools().after_captures_end(); });
  }
}

// The context whose capture on `stream` a call begins or ends: the stream's, or for a thread's
// per-thread stream (and if the driver does not say) the current one.
CUcontext context_of(CUstream stream) {
  CUcontext context = nullptr;
  if (real::cuStreamGetCtx(stream, &context) != CUDA_SUCCESS) real::cuCtxGetCurrent(&context);
  return context;
}

void capture_over(Runtime& runtime, CUstream stream, CUcontext context) {
  runtime.capture().on_capture_end(stream, context);
  after_capture_over(runtime);
}

// A stream destroyed while capturing takes its capture with it.
template <typename Call>
CUresult destroy(CUstream stream, Call&& call) {
  Runtime* runtime = Runtime::get();
  contain_failure("cuStreamDestroy", [&] {
    if (runtime != nullptr) {
      CUcontext context = nullptr;
      pool::CachingPool* pool = real::cuStreamGetCtx(stream, &context) == CUDA_SUCCESS
                                    ? runtime->pools().find(context)
                                    : runtime->current_pool();
      if (pool != nullptr) pool->on_stream_destroyed(stream);
    }
  });
  const CUresult result = call();
  if (result == CUDA_SUCCESS && runtime != nullptr &&
      runtime->capture().on_stream_gone(stream) > 0) {
    after_capture_over(*runtime);
  }
  return result;
}

// The stream a capture call names: a thread's per-thread stream by one handle, whichever family of
// entry points named it.
CUstream captured_stream(CUstream stream, bool per_thread_entry) {
  return per_thread_entry && stream == nullptr ? CU_STREAM_PER_THREAD : stream;
}

// Blocks freed before a capture begins can be made reusable now; during a global capture the pool
// may record nothing on the legacy stream, so blocks freed then wait for its end. The capture is
// counted before the driver begins it (the pools' calls already made finish first, no new one
// starts: CaptureState), and uncounted if the driver refuses it.
template <typename Call>
CUresult begin_capture(CUstream stream, Call&& call) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr) return call();
  contain_failure("cuStreamBeginCapture", [&] {
    if (pool::CachingPool* pool = runtime->current_pool()) pool->ready_freed_blocks();
  });
  const CUcontext context = context_of(stream);
  runtime->capture().on_capture_begin(stream, context);
  const CUresult result = call();
  runtime->capture().after_capture_begin();
  if (result != CUDA_SUCCESS) capture_over(*runtime, stream, context);
  return result;
}

// An invalidated or unjoined capture has ended too.
template <typename Call>
CUresult end_capture(CUstream stream, Call&& call) {
  Runtime* runtime = Runtime::get();
  const CUcontext context = runtime != nullptr ? context_of(stream) : nullptr;
  const CUresult result = call();
  if (runtime != nullptr &&
      (result == CUDA_SUCCESS || result == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
       result == CUDA_ERROR_STREAM_CAPTURE_UNJOINED)) {
    capture_over(*runtime, stream, context);
  }
  return result;
}

}  // namespace

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return created(real::cuStreamCreate(phStream, Flags), phStream, Flags);
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return created(real::cuStreamCreateWithPriority(phStream, flags, priority), phStream, flags);
}

// A green context's streams run beside the primary context's and are not ordered by its legacy
// stream, and the pools' events (of the primary context) cannot be recorded on them; a context
// synchronize of the primary context also waits for its green contexts.
CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags,
                                int priority) {
  const CUresult result = real::cuGreenCtxStreamCreate(phStream, greenCtx, flags, priority);
  if (result == CUDA_SUCCESS) {
    contain_failure("cuGreenCtxStreamCreate", [&] {
      if (Runtime* runtime = Runtime::get()) runtime->pools().on_unfenceable_stream();
    });
  }
  return result;
}

CUresult cuStreamDestroy(CUstream hStream) {
  return destroy(hStream, [&] { return real::cuStreamDestroy(hStream); });
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  return destroy(hStream, [&] { return real::cuStreamDestroy_v2(hStream); });
}

CUresult cuStreamBeginCapture(CUstream hStream) {
  return begin_capture(captured_stream(hStream, false),
                       [&] { return real::cuStreamBeginCapture(hStream); });
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return begin_capture(captured_stream(hStream, true),
                       [&] { return real::cuStreamBeginCapture_ptsz(hStream); });
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(captured_stream(hStream, false),
                       [&] { return real::cuStreamBeginCapture_v2(hStream, mode); });
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(captured_stream(hStream, true),
                       [&] { return real::cuStreamBeginCapture_v2_ptsz(hStream, mode); });
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode* dependencies,
                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode) {
  return begin_capture(captured_stream(hStream, false), [&] {
    return real::cuStreamBeginCaptureToGraph(hStream, hGraph, dependencies, dependencyData,
                                             numDependencies, mode);
  });
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode) {
  return begin_capture(captured_stream(hStream, true), [&] {
    return real::cuStreamBeginCaptureToGraph_ptsz(hStream, hGraph, dependencies, dependencyData,
                                                  numDependencies, mode);
  });
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  const CUresult result = real::cuThreadExchangeStreamCaptureMode(mode);
  if (result == CUDA_SUCCESS) runtime::on_capture_mode_exchanged();
  return result;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return end_capture(captured_stream(hStream, false),
                     [&] { return real::cuStreamEndCapture(hStream, phGraph); });
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return end_capture(captured_stream(hStream, true),
                     [&] { return real::cuStreamEndCapture_ptsz(hStream, phGraph); });
}

}  // namespace vramshim::hooks
