#include "convbench/cublas_gemm.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "convbench/cuda_check.hpp"

namespace convbench::cublas {

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20; // cuBLAS's recommendation for Hopper

void ok(cublasStatus_t st, const char *call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw CublasError(std::string(call) + " failed: " + cublasGetStatusString(st));
}

cublasHandle_t handle_of(void *h) { return static_cast<cublasHandle_t>(h); }

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// f32 -> bf16 bits, round to nearest even (the operands are finite).
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_value(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

size_t operand_bytes(Mode m) { return m == Mode::dgemm ? 8 : m == Mode::bf16 ? 2 : 4; }
size_t output_bytes(Mode m) { return m == Mode::dgemm ? 8 : 4; }

// `n` samples of [0, extent): the first, the last and evenly spread between, each once.
std::vector<int64_t> spread(int64_t extent, int n) {
  std::vector<int64_t> v;
  const int64_t count = std::min<int64_t>(extent, std::max(n, 1));
  for (int64_t t = 0; t < count; ++t)
    v.push_back(count == 1 ? 0 : t * (extent - 1) / (count - 1));
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

} // namespace

std::string to_string(Mode m) {
  switch (m) {
  case Mode::sgemm:
    return "sgemm";
  case Mode::tf32:
    return "tf32";
  case Mode::bf16:
    return "bf16";
  case Mode::dgemm:
    return "dgemm";
  }
  return "?";
}

GemmShape conv_gemm(const ConvShape &s) {
  if (s.op == ConvOp::forward)
    return {s.cout, s.batch * s.l_out(), s.cin * s.k};
  const int64_t taps = (s.k + s.stride - 1) / s.stride;
  return {s.stride * s.cout, s.batch * s.l_in, s.cin * taps};
}

bool gemm_supported(const ConvShape &s, std::string *why_not) {
  const GemmShape g = conv_gemm(s);
  const int64_t big = std::numeric_limits<int>::max();
  if (g.m > 0 && g.n > 0 && g.k > 0 && g.m * g.k <= big && g.k * g.n <= big && g.m * g.n <= big)
    return true;
  if (why_not)
    *why_not = "its GEMM (" + std::to_string(g.m) + " x " + std::to_string(g.n) + " x " +
               std::to_string(g.k) + ") exceeds cuBLAS's 32-bit dimensions";
  return false;
}

double tolerance(Mode m) {
  switch (m) {
  case Mode::sgemm:
  case Mode::bf16:
    return 1e-5;
  case Mode::tf32:
    return 2e-3;
  case Mode::dgemm:
    return 1e-12;
  }
  return 0;
}

bool cublas_library_available(std::string *why_not) {
  int major = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS && major > 0)
    return true;
  if (why_not)
    *why_not = "the cuBLAS library does not report its version";
  return false;
}

bool cublas_available(std::string *why_not) {
  std::string why;
  if (!convbench::cuda::device_available(&why)) {
    if (why_not)
      *why_not = why;
    return false;
  }
  cublasHandle_t h = nullptr;
  if (const cublasStatus_t st = cublasCreate(&h); st != CUBLAS_STATUS_SUCCESS) {
    if (why_not)
      *why_not = std::string("cublasCreate failed: ") + cublasGetStatusString(st);
    return false;
  }
  cublasDestroy(h);
  return true;
}

double Gemm::device_bytes(GemmShape s, Mode m) {
  return double(operand_bytes(m)) * (double(s.m) * s.k + double(s.k) * s.n) +
         double(output_bytes(m)) * double(s.m) * s.n + double(kWorkspaceBytes);
}

double Gemm::operand(bool a, int64_t i) const {
  const uint64_t h = splitmix64(seed_ * 0x632BE59BD9B4E019ull ^ (uint64_t(i) << 1 | (a ? 0 : 1)));
  if (mode_ == Mode::dgemm)
    return double(h >> 11) * 0x1p-52 - 1.0;               // 53 significant bits in [-1, 1)
  const float f = float(double(h >> 40) * 0x1p-23 - 1.0); // 24 bits: exact in f32
  return mode_ == Mode::bf16 ? double(bf16_value(bf16_bits(f))) : double(f);
}

namespace {

// `count` operand values converted to T on the host, then uploaded to `dst`.
template <class T, class Conv> void upload(void *dst, int64_t count, const Conv &value) {
  std::vector<T> host(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    host[size_t(i)] = value(i);
  CONVBENCH_CUDA_CHECK(
      cudaMemcpy(dst, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

} // namespace

Gemm::Gemm(GemmShape shape, Mode mode, uint64_t seed, Fault fault)
    : shape_(shape), mode_(mode), seed_(seed), fault_(fault) {
  const int64_t a_elems = shape.m * shape.k, b_elems = shape.k * shape.n;
  try {
    CONVBENCH_CUDA_CHECK(cudaMalloc(&a_, size_t(a_elems) * operand_bytes(mode)));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&b_, size_t(b_elems) * operand_bytes(mode)));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&c_, size_t(shape.m * shape.n) * output_bytes(mode)));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    cudaStream_t st = nullptr;
    CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    stream_ = st;
    cublasHandle_t h = nullptr;
    ok(cublasCreate(&h), "cublasCreate");
    handle_ = h;
    ok(cublasSetStream(h, st), "cublasSetStream");
    ok(cublasSetWorkspace(h, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
    ok(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    for (int which = 0; which < 2; ++which) {
      void *dst = which == 0 ? a_ : b_;
      const int64_t count = which == 0 ? a_elems : b_elems;
      const auto value = [&](int64_t i) { return operand(which == 0, i); };
      if (mode == Mode::dgemm)
        upload<double>(dst, count, value);
      else if (mode == Mode::bf16)
        upload<uint16_t>(dst, count, [&](int64_t i) { return bf16_bits(float(value(i))); });
      else
        upload<float>(dst, count, [&](int64_t i) { return float(value(i)); });
    }
  } catch (...) {
    release();
    throw;
  }
}

Gemm::~Gemm() { release(); }

void Gemm::release() {
  if (handle_)
    cublasDestroy(handle_of(handle_));
  if (stream_)
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  for (void *p : {a_, b_, c_, workspace_})
    if (p)
      cudaFree(p);
  handle_ = stream_ = a_ = b_ = c_ = workspace_ = nullptr;
}

std::string Gemm::math() const {
  switch (mode_) {
  case Mode::sgemm:
    return fault_ == Fault::tf32_math ? "cublasGemmEx CUBLAS_COMPUTE_32F_FAST_TF32"
                                      : "cublasGemmEx CUBLAS_COMPUTE_32F";
  case Mode::tf32:
    return "cublasGemmEx CUBLAS_COMPUTE_32F_FAST_TF32";
  case Mode::bf16:
    return "cublasGemmEx CUDA_R_16BF x CUDA_R_16BF -> CUDA_R_32F, CUBLAS_COMPUTE_32F";
  case Mode::dgemm:
    return "cublasDgemm";
  }
  return "?";
}

void Gemm::launch() {
  const int m = int(shape_.m), n = int(shape_.n), k = int(shape_.k);
  const bool bt = fault_ == Fault::transposed_b;
  const cublasOperation_t op_b = bt ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = bt ? n : k;
  cublasHandle_t h = handle_of(handle_);
  if (mode_ == Mode::dgemm) {
    const double one = 1.0, zero = 0.0;
    ok(cublasDgemm(h, CUBLAS_OP_N, op_b, m, n, k, &one, static_cast<const double *>(a_), m,
                   static_cast<const double *>(b_), ldb, &zero, static_cast<double *>(c_), m),
       "cublasDgemm");
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType_t in = mode_ == Mode::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const bool tf32 = mode_ == Mode::tf32 || fault_ == Fault::tf32_math;
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ok(cublasGemmEx(h, CUBLAS_OP_N, op_b, m, n, k, &one, a_, in, m, b_, in, ldb, &zero, c_,
                  CUDA_R_32F, m, compute, CUBLAS_GEMM_DEFAULT),
     "cublasGemmEx");
}

void *Gemm::stream() const { return stream_; }

void Gemm::sync() {
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

void Gemm::poison_output() {
  // All-ones bytes are a NaN in f32 and in f64.
  CONVBENCH_CUDA_CHECK(cudaMemsetAsync(c_, 0xFF, size_t(shape_.m * shape_.n) * output_bytes(mode_),
                                       static_cast<cudaStream_t>(stream_)));
}

GemmCheck Gemm::check(int rows, int cols) const {
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
  const size_t eb = output_bytes(mode_);
  const std::vector<int64_t> is = spread(shape_.m, rows), js = spread(shape_.n, cols);
  std::vector<unsigned char> column(size_t(shape_.m) * eb);
  GemmCheck r;
  r.tolerance = tolerance(mode_);
  double err2 = 0, ref2 = 0;
  for (int64_t j : js) {
    CONVBENCH_CUDA_CHECK(cudaMemcpy(column.data(),
                                    static_cast<unsigned char *>(c_) + j * shape_.m * eb,
                                    column.size(), cudaMemcpyDeviceToHost));
    for (int64_t i : is) {
      double ref = 0; // C[i, j] = sum_p A[i + p*m] B[p + j*k], in f64
      for (int64_t p = 0; p < shape_.k; ++p)
        ref += operand(true, i + p * shape_.m) * operand(false, p + j * shape_.k);
      double got;
      if (eb == 8)
        std::memcpy(&got, column.data() + i * 8, 8);
      else {
        float f;
        std::memcpy(&f, column.data() + i * 4, 4);
        got = f;
      }
      r.finite &= std::isfinite(got);
      err2 += (got - ref) * (got - ref);
      ref2 += ref * ref;
      r.max_abs_err = std::max(r.max_abs_err, std::fabs(got - ref));
      ++r.cells;
    }
  }
  r.rel_l2_err =
      r.finite ? std::sqrt(err2 / std::max(ref2, 1e-300)) : std::numeric_limits<double>::infinity();
  return r;
}

} // namespace convbench::cublas
