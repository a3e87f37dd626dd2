#include "shim/intercept/hook_declarations.h"

namespace vramshim::hooks {

CUresult cuStreamCreate(CUstream * phStream, unsigned int Flags) { return real::cuStreamCreate(phStream, Flags); }

CUresult cuStreamCreateWithPriority(CUstream * phStream, unsigned int flags, int priority) { return real::cuStreamCreateWithPriority(phStream, flags, priority); }

CUresult cuStreamDestroy(CUstream hStream) { return real::cuStreamDestroy(hStream); }

CUresult cuStreamDestroy_v2(CUstream hStream) { return real::cuStreamDestroy_v2(hStream); }

CUresult cuStreamBeginCapture(CUstream hStream) { return real::cuStreamBeginCapture(hStream); }

CUresult cuStreamBeginCapture_ptsz(CUstream hStream) { return real::cuStreamBeginCapture_ptsz(hStream); }

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) { return real::cuStreamBeginCapture_v2(hStream, mode); }

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) { return real::cuStreamBeginCapture_v2_ptsz(hStream, mode); }

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) { return real::cuStreamEndCapture(hStream, phGraph); }

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) { return real::cuStreamEndCapture_ptsz(hStream, phGraph); }

}  // namespace vramshim::hooks
