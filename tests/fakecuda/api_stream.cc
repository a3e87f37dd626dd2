// Exported entry points: streams, stream capture, host functions and events.
#include <algorithm>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace vramshim::fakecuda {

CUresult createStream(Context* c, CUstream* phStream, unsigned int flags) {
  if (phStream == nullptr || (flags & ~CU_STREAM_NON_BLOCKING) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const StreamKind kind =
      (flags & CU_STREAM_NON_BLOCKING) ? StreamKind::NonBlocking : StreamKind::Blocking;
  auto s = std::make_shared<Stream>(c, kind);
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  c->streams.push_back(s);
  d.streams[s.get()] = s;
  *phStream = reinterpret_cast<CUstream>(s.get());
  return CUDA_SUCCESS;
}

}  // namespace vramshim::fakecuda

namespace {

CUresult createInCurrentContext(CUstream* phStream, unsigned int flags) {
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  return createStream(c, phStream, flags);
}

CUresult destroyStream(CUstream hStream) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    auto it = d.streams.find(reinterpret_cast<Stream*>(hStream));
    if (it == d.streams.end()) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_HANDLE;
    }
    s = it->second;
    d.streams.erase(it);
    if (d.captures.erase(s.get())) d.active_captures.fetch_sub(1);
    // Queued work still runs (and still counts for device synchronization) after the handle is
    // gone.
    Context* c = s->context();
    c->streams.erase(std::find(c->streams.begin(), c->streams.end(), s));
    c->retired.push_back(s);
  }
  s->close();
  return CUDA_SUCCESS;
}

CUresult synchronizeStream(CUstream hStream, bool per_thread) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitOnCapturingStream(s.get()); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  if (s->kind() == StreamKind::Legacy) {
    // The legacy stream's end includes earlier work of the blocking streams: wait through a marker.
    if (CUresult r = submitAndWait(s, nullptr); r != CUDA_SUCCESS) return r;
  } else {
    s->tail().wait();
  }
  releasePoolsAboveThreshold(s->context()->device);
  return CUDA_SUCCESS;
}

CUresult queryStream(CUstream hStream, bool per_thread) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitOnCapturingStream(s.get()); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  if (!s->idle()) return CUDA_ERROR_NOT_READY;
  if (s->kind() == StreamKind::Legacy) {
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mu);
    for (auto& b : s->context()->streams) {
      if (synchronizesWithLegacy(b->kind()) && !b->idle()) return CUDA_ERROR_NOT_READY;
    }
  }
  return CUDA_SUCCESS;
}

CUresult waitEvent(CUstream hStream, CUevent hEvent, unsigned int flags, bool per_thread) {
  if (flags & ~CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Position recorded;
  {
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mu);
    auto* e = reinterpret_cast<Event*>(hEvent);
    if (!d.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    recorded = e->recorded;
  }
  return submit(s, {recorded}, nullptr);
}

CUresult beginCapture(CUstream hStream, CUstreamCaptureMode mode, bool per_thread) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (s->kind() == StreamKind::Legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.captures.count(s.get())) return CUDA_ERROR_ILLEGAL_STATE;
  Capture& c = d.captures[s.get()];
  c.mode = mode;
  c.thread = std::this_thread::get_id();
  d.active_captures.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult endCapture(CUstream hStream, CUgraph* phGraph, bool per_thread) {
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.captures.find(s.get());
  if (it == d.captures.end()) return CUDA_ERROR_ILLEGAL_STATE;
  const Capture capture = it->second;
  if (capture.mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      capture.thread != std::this_thread::get_id()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  d.captures.erase(it);
  d.active_captures.fetch_sub(1);
  *phGraph = nullptr;
  if (capture.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* g = new Graph{capture.operations};
  d.graphs.insert(g);
  *phGraph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult isCapturing(CUstream hStream, CUstreamCaptureStatus* status, bool per_thread) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.captures.find(s.get());
  if (it == d.captures.end()) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
  } else {
    *status = it->second.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return CUDA_SUCCESS;
}

CUresult launchHostFunc(CUstream hStream, CUhostFn fn, void* userData, bool per_thread) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  return submit(s, {}, [fn, userData] { fn(userData); });
}

CUresult recordEvent(CUevent hEvent, CUstream hStream, bool per_thread) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.events.count(reinterpret_cast<Event*>(hEvent))) return CUDA_ERROR_INVALID_HANDLE;
  }
  Position at;
  if (CUresult r = submit(s, {}, nullptr, &at); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(d.mu);
  auto* e = reinterpret_cast<Event*>(hEvent);
  if (d.events.count(e)) e->recorded = at;
  return CUDA_SUCCESS;
}

CUresult destroyEvent(CUevent hEvent) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto* e = reinterpret_cast<Event*>(hEvent);
  if (!d.events.erase(e)) {
    d.errors.fetch_add(1);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  e->recorded = Position{};  // the object itself stays allocated so stale handles are safe to check
  return CUDA_SUCCESS;
}

// The recorded position of a live event, for query and synchronize.
CUresult eventPosition(CUevent hEvent, Position* out) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto* e = reinterpret_cast<Event*>(hEvent);
  if (!d.events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  *out = e->recorded;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  countCall(Entry::cuStreamCreate);
  return createInCurrentContext(phStream, Flags);
}

// The fake runs every stream alike: a priority is accepted and ignored.
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int /*priority*/) {
  countCall(Entry::cuStreamCreateWithPriority);
  return createInCurrentContext(phStream, flags);
}

CUresult cuStreamDestroy(CUstream hStream) {
  countCall(Entry::cuStreamDestroy);
  return destroyStream(hStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  countCall(Entry::cuStreamDestroy_v2);
  return destroyStream(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream) {
  countCall(Entry::cuStreamSynchronize);
  return synchronizeStream(hStream, false);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  countCall(Entry::cuStreamSynchronize_ptsz);
  return synchronizeStream(hStream, true);
}

CUresult cuStreamQuery(CUstream hStream) {
  countCall(Entry::cuStreamQuery);
  return queryStream(hStream, false);
}

CUresult cuStreamQuery_ptsz(CUstream hStream) {
  countCall(Entry::cuStreamQuery_ptsz);
  return queryStream(hStream, true);
}

namespace {

CUresult streamContext(CUstream hStream, bool per_thread_default, CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread_default, &s); r != CUDA_SUCCESS) return r;
  *pctx = reinterpret_cast<CUcontext>(s->context());
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  countCall(Entry::cuStreamGetCtx);
  return streamContext(hStream, false, pctx);
}

CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  countCall(Entry::cuStreamGetCtx_ptsz);
  return streamContext(hStream, true, pctx);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  countCall(Entry::cuStreamWaitEvent);
  return waitEvent(hStream, hEvent, Flags, false);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  countCall(Entry::cuStreamWaitEvent_ptsz);
  return waitEvent(hStream, hEvent, Flags, true);
}

CUresult cuStreamBeginCapture(CUstream hStream) {
  countCall(Entry::cuStreamBeginCapture);
  return beginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  countCall(Entry::cuStreamBeginCapture_ptsz);
  return beginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  countCall(Entry::cuStreamBeginCapture_v2);
  return beginCapture(hStream, mode, false);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  countCall(Entry::cuStreamBeginCapture_v2_ptsz);
  return beginCapture(hStream, mode, true);
}

// The simulated driver keeps no graphs: capturing into one is capturing, as above.
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph, const CUgraphNode*,
                                     const CUgraphEdgeData*, size_t, CUstreamCaptureMode mode) {
  countCall(Entry::cuStreamBeginCaptureToGraph);
  return beginCapture(hStream, mode, false);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph, const CUgraphNode*,
                                          const CUgraphEdgeData*, size_t,
                                          CUstreamCaptureMode mode) {
  countCall(Entry::cuStreamBeginCaptureToGraph_ptsz);
  return beginCapture(hStream, mode, true);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  countCall(Entry::cuStreamEndCapture);
  return endCapture(hStream, phGraph, false);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  countCall(Entry::cuStreamEndCapture_ptsz);
  return endCapture(hStream, phGraph, true);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  countCall(Entry::cuStreamIsCapturing);
  return isCapturing(hStream, captureStatus, false);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  countCall(Entry::cuStreamIsCapturing_ptsz);
  return isCapturing(hStream, captureStatus, true);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  countCall(Entry::cuThreadExchangeStreamCaptureMode);
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::swap(*mode, threadCaptureMode());
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  countCall(Entry::cuGraphDestroy);
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (!d.graphs.erase(g)) {
    d.errors.fetch_add(1);
    return CUDA_ERROR_INVALID_VALUE;
  }
  delete g;
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  countCall(Entry::cuLaunchHostFunc);
  return launchHostFunc(hStream, fn, userData, false);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  countCall(Entry::cuLaunchHostFunc_ptsz);
  return launchHostFunc(hStream, fn, userData, true);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  countCall(Entry::cuEventCreate);
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (Flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  auto* e = new Event;
  e->ctx = c;
  e->flags = Flags;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  d.events.insert(e);
  *phEvent = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  countCall(Entry::cuEventRecord);
  return recordEvent(hEvent, hStream, false);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  countCall(Entry::cuEventRecord_ptsz);
  return recordEvent(hEvent, hStream, true);
}

CUresult cuEventQuery(CUevent hEvent) {
  countCall(Entry::cuEventQuery);
  Position recorded;
  if (CUresult r = eventPosition(hEvent, &recorded); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  return recorded.reached() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  countCall(Entry::cuEventSynchronize);
  Position recorded;
  if (CUresult r = eventPosition(hEvent, &recorded); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  recorded.wait();
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  countCall(Entry::cuEventDestroy);
  return destroyEvent(hEvent);
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  countCall(Entry::cuEventDestroy_v2);
  return destroyEvent(hEvent);
}

}  // extern "C"
