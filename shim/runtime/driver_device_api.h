// The pool's view of one CUDA context, implemented with the real driver functions behind the hooks.
#pragma once

#include "shim/intercept/cuda_api.h"
#include "shim/pool/device_api.h"

namespace vramshim::runtime {

class DriverDeviceApi final : public pool::DeviceApi {
 public:
  DriverDeviceApi(CUcontext context, CUdevice device) : context_(context), device_(device) {}

  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override;
  CUresult free(CUdeviceptr ptr) override;
  CUresult create_event(CUevent* event) override;
  CUresult record_event(CUevent event, CUstream stream) override;
  CUresult query_event(CUevent event) override;
  CUresult synchronize_event(CUevent event) override;
  CUresult destroy_event(CUevent event) override;
  CUresult synchronize_context() override;
  uint64_t trim_stream_ordered_pools() override;
  bool push_current() override;
  void pop_current() override;

 private:
  CUcontext context_;
  CUdevice device_;
};

}  // namespace vramshim::runtime
