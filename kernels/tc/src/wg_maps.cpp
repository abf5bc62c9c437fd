// The wgmma kernels' device check and TMA tensor maps (host code). cuTensorMapEncodeTiled is a
// driver function: it is looked up through the runtime, so the binaries need no libcuda at link
// time and still start on machines without a driver (CI).
#include <cudaTypedefs.h>

#include <string>

#include "convbench/cuda_check.hpp"
#include "wg_launch.hpp"

namespace convbench::tc::wg {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                           cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || f == nullptr) {
      (void)cudaGetLastError();
      throw cuda::CudaError("cuTensorMapEncodeTiled not found in the driver (" +
                            std::string(cudaGetErrorString(e)) + ")");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 3-d f32 tensor d0 x d1 x d2 with rows of `pitch` floats, read in boxes of box0 x box1 x 1.
CUtensorMap map3d(const float *base, int d0, int d1, int d2, int pitch, int box0, int box1,
                  CUtensorMapSwizzle swizzle) {
  CUtensorMap m{};
  const cuuint64_t dims[3] = {cuuint64_t(d0), cuuint64_t(d1), cuuint64_t(d2)};
  const cuuint64_t strides[2] = {cuuint64_t(pitch) * 4, cuuint64_t(pitch) * 4 * cuuint64_t(d1)};
  const cuuint32_t box[3] = {cuuint32_t(box0), cuuint32_t(box1), 1};
  const cuuint32_t elem[3] = {1, 1, 1};
  const CUresult r =
      encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float *>(base), dims, strides,
                box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw cuda::CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                          ") for a " + std::to_string(d0) + " x " + std::to_string(d1) + " x " +
                          std::to_string(d2) + " tensor");
  return m;
}

} // namespace

std::string device_reason() {
  static const std::string why = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::string("no CUDA device");
    }
    if (major != 9 || minor != 0)
      return "the wgmma kernels are built for sm_90a; this device is compute capability " +
             std::to_string(major) + "." + std::to_string(minor);
    return std::string();
  }();
  return why;
}

Maps make_maps(const Plan &p, const float *w_hi, const float *w_lo, const float *x,
               const float *x_lo) {
  Maps m{};
  const auto sw = CU_TENSOR_MAP_SWIZZLE_128B;
  const int w_box = p.along == Along::rows ? kBm : p.n;
  m.a = map3d(w_hi, p.cin, p.rows, p.taps, p.cin_pad, kBk, w_box, sw);
  if (w_lo)
    m.a_lo = map3d(w_lo, p.cin, p.rows, p.taps, p.cin_pad, kBk, w_box, sw);
  if (p.along == Along::rows) {
    m.b = map3d(x, p.cin, p.l_in, p.batch, p.cin_pad, kBk, p.n, sw);
    if (x_lo)
      m.b_lo = map3d(x_lo, p.cin, p.l_in, p.batch, p.cin_pad, kBk, p.n, sw);
  } else {
    m.b = map3d(x, p.l_in, p.cin, p.batch, p.l_in, p.win, kBk, CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  return m;
}

} // namespace convbench::tc::wg
