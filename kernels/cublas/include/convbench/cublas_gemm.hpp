// The cuBLAS ceilings: the GEMM a convolution case amounts to, run by cuBLAS, as the measured
// ceiling of the arithmetic our tensor-core and SIMT arms use. Not a convolution: no scatter, no
// bias; the same multiply-adds as one matrix product. Plain C++: no CUDA or cuBLAS headers.
//   sgemm  f32 operands, f32 math (CUBLAS_COMPUTE_32F, default math: never TF32)
//   tf32   f32 operands, tensor-core TF32 math (CUBLAS_COMPUTE_32F_FAST_TF32)
//   bf16   bf16 operands (rounded once on the host), f32 accumulation and output (cublasGemmEx)
//   dgemm  f64 operands and math (cublasDgemm)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "convbench/shape.hpp"

namespace convbench::cublas {

enum class Mode { sgemm, tf32, bf16, dgemm };
std::string to_string(Mode m); // "sgemm", "tf32", "bf16", "dgemm" (the arm is "cublas-" + this)

class CublasError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// C[m x n] = A[m x k] B[k x n], column-major.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  double macs() const { return double(m) * double(n) * double(k); }
};

// The GEMM of a convolution, as the kernels see it. ConvTranspose1d, the polyphase view:
// A[(r, oc), (ic, j)] = w[ic, oc, j*s + r] with ceil(K/s) taps per phase, B = the input's taps,
// so m = s*cout, k = cin*ceil(K/s), n = batch*l_in. Conv1d, the implicit GEMM: m = cout,
// k = cin*K, n = batch*l_out. The multiply-adds equal the convolution's when s divides K
// (transposed) and always (forward).
GemmShape conv_gemm(const ConvShape &s);
// Whether cuBLAS's 32-bit dimensions hold the GEMM of `s`; otherwise *why_not says why.
bool gemm_supported(const ConvShape &s, std::string *why_not);

// Deliberate defects, for the tests that show the check has teeth (never used by an arm).
enum class Fault {
  none,
  transposed_b, // B read as op(B) = B^T with ldb = n: the wrong operand layout
  tf32_math,    // sgemm with TF32 tensor-op math: a ceiling of the wrong arithmetic
};

// True when the cuBLAS library answers (cublasGetProperty): no device touched, no context made.
bool cublas_library_available(std::string *why_not);
// True when a device is usable and a cuBLAS handle can be created. Creates a CUDA context.
bool cublas_available(std::string *why_not);

// The host check of a GEMM: sampled cells of C against an f64 host product of the very operand
// values the device holds (bf16: the rounded ones).
struct GemmCheck {
  int64_t cells = 0;      // cells compared
  bool finite = true;     // every compared cell finite
  double rel_l2_err = 0;  // ||c - ref|| / ||ref|| over the compared cells
  double max_abs_err = 0; // largest |c - ref|
  double tolerance = 0;   // the mode's bound on rel_l2_err
  bool pass() const { return finite && cells > 0 && rel_l2_err <= tolerance; }
};

// The relative L2 bound of a mode's check. sgemm 1e-5: f32 accumulation of these sums is ~1e-7;
// TF32 math (2^-11 per operand) gives ~2e-4, so a ceiling that used tensor cores fails.
// tf32 2e-3: the host product uses the unrounded f32 operands. bf16 1e-5: the host uses the
// rounded operands, so only the f32 accumulation differs. dgemm 1e-12.
double tolerance(Mode m);

// One resident GEMM: operands generated on the host from a seeded hash of their index, converted
// to the mode's type and uploaded once; C, the workspace (32 MiB) and a handle on its own stream.
// Only launch() belongs in a timed region.
class Gemm {
public:
  Gemm(GemmShape shape, Mode mode, uint64_t seed = 1, Fault fault = Fault::none);
  ~Gemm();
  Gemm(const Gemm &) = delete;
  Gemm &operator=(const Gemm &) = delete;

  void launch();        // enqueues one product on stream()
  void *stream() const; // a cudaStream_t
  void sync();          // waits for stream()
  void poison_output(); // fills C with NaN, so a skipped launch fails the check
  // Compares up to rows x cols sampled cells of the last product (first, last, spread between)
  // with the host's f64 product. Synchronises.
  GemmCheck check(int rows = 48, int cols = 24) const;

  const GemmShape &shape() const { return shape_; }
  Mode mode() const { return mode_; }
  static double device_bytes(GemmShape s, Mode m); // A, B, C and the workspace
  std::string math() const;                        // e.g. "CUBLAS_COMPUTE_32F_FAST_TF32"

private:
  void release();
  double operand(bool a, int64_t i) const; // the value A[i] / B[i] holds on the device

  GemmShape shape_;
  Mode mode_;
  uint64_t seed_;
  Fault fault_;
  void *handle_ = nullptr, *stream_ = nullptr;
  void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr, *workspace_ = nullptr;
};

} // namespace convbench::cublas
