// What convbench owns on the device for a resident plugin case: its buffers (input, weight, bias,
// output) and the stream the plugin enqueues on. CUDA builds only; plain C++ here.
#pragma once

#if CONVBENCH_HAVE_CUDA

#include <cstddef>
#include <string>

namespace convbench::bench::plugin {

class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t floats); // throws cuda::CudaError
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void upload(const float *host, size_t floats); // synchronous
  float *get() const { return ptr_; }

private:
  float *ptr_ = nullptr;
};

class DeviceStream {
public:
  DeviceStream(); // throws cuda::CudaError
  ~DeviceStream();
  DeviceStream(const DeviceStream &) = delete;
  DeviceStream &operator=(const DeviceStream &) = delete;
  void *get() const { return stream_; } // the cudaStream_t

private:
  void *stream_ = nullptr;
};

// "" when the stream's work finished; else CUDA's error (a device fault inside the plugin's
// kernel surfaces here).
std::string sync_stream_status(void *stream);
// "" unless a launch error or a sticky (context-losing) error is pending; does not wait.
std::string pending_error();
// True when `error` (from the two above) means the CUDA context is lost for every arm.
bool context_lost(const std::string &error);

} // namespace convbench::bench::plugin

#endif // CONVBENCH_HAVE_CUDA
