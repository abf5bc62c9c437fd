// cuda-f64-dmma's kernels on Hopper (sm_90a objects; mma.sync m16n8k16 with f64 operands and
// accumulate is sm_90's): the weight packing, the tile kernel of dm_plan.hpp and the split-K
// reduction. f32 operands are converted to f64 exactly; products and sums in f64; the bias added
// to the f64 sum and the cell rounded once to f32.
#include <algorithm>

#include "async_copy.hpp"
#include "convbench/cuda_check.hpp"
#include "convbench/device_facts.hpp"
#include "dm_launch.hpp"
#include "tc_kernel.cuh" // tc_reduce

namespace convbench::tc::dm {
namespace {

// D += A B, one m16n8k16 with f64 operands. Fragments (lane = 4 * g + q): a[v] = A[g + 8 (v & 1)]
// [q + 4 (v >> 1)], b[v] = B[q + 4 v][g], d[v] = D[g + 8 (v >> 1)][2 q + (v & 1)].
__device__ __forceinline__ void mma16816(double (&d)[4], const double (&a)[8],
                                         const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
                 "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#endif
}

__global__ void dm_pack(const Plan P, int64_t n, const float *__restrict__ w,
                        double *__restrict__ a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int ic = int(i % P.kpitch);
    const int row = int((i / P.kpitch) % P.g.rows);
    const int j = int(i / (int64_t(P.kpitch) * P.g.rows));
    a[i] = ic < P.g.cin ? double(wg::packed_weight(P.g, w, j, row, ic)) : 0.0;
  }
}

// One bm x bn tile (bm = 32 FM, bn = 16 FN), four warps (2 x 2) of FM x FN fragments of 16 x 8.
// Buffer s of the pipeline: the weight tile [bm][kApitch] (f64) then the input window
// [kBk][bn + kBpad] (f32, converted to f64 as the B fragments are loaded); both by cp.async.
template <int FM, int FN>
__global__ void __launch_bounds__(kThreads, blocks_by_registers(32 * FM, 16 * FN))
    dm_kernel(const Plan P, const double *__restrict__ A, const float *__restrict__ x,
              const float *__restrict__ bias, float *__restrict__ y, double *__restrict__ ws,
              int planted) {
  constexpr int BM = 32 * FM, BN = 16 * FN;
  // Doubles of a buffer's weight tile and of its input window (f32 elements, two per double).
  constexpr int kA = BM * kApitch, kBp = BN + kBpad, kB = kBk * kBp / 2;
  // Thread tid copies the weight tile's 16-byte segment tid % 8 of rows tid / 8 + i kArows and
  // the input window's position tid % BN of channels tid / BN + i kBch: the same segment and
  // position at every iteration, so a copy's address is its first one plus the iteration's offset.
  constexpr int kSegs = kBk / 2, kArows = kThreads / kSegs, kBch = kThreads / BN;
  constexpr int kAper = BM / kArows, kBper = kBk / kBch; // copies per thread per iteration
  static_assert(BM % kArows == 0 && kThreads % BN == 0 && kBk % kBch == 0, "whole copies");
  extern __shared__ __align__(16) double smem[];

  const wg::Tile t = wg::tile_of(P.g, int(blockIdx.x));
  const int sp = int(blockIdx.y);
  int it0, it1;
  split_iters(P, sp, it0, it1);
  if (planted == kPlantDropIter)
    --it1;
  const int n_it = it1 - it0;
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int gq = lane / 4, tq = lane % 4;
  const int wm = warp / 2, wn = warp % 2;
  const int shift = planted == kPlantShift ? 1 : 0;

  // The weight tile's copies: which rows are the group's (a bit each), the first row's offset in
  // A. Offsets are 32-bit (the packed weights and the input are below 2^31 elements: the support
  // checks of dm_plan.cpp and wg_plan.cpp) and unsigned: one formed for a copy that is not made
  // may wrap, and is not used.
  const int a_row = tid / kSegs, a_seg = tid % kSegs;
  unsigned a_ok = 0;
#pragma unroll
  for (int i = 0; i < kAper; ++i)
    a_ok |= row_in_group(P, t, a_row + i * kArows) ? 1u << i : 0u;
  const unsigned a_off = unsigned(P.g.row_off[t.g] + t.r0 + a_row) * P.kpitch + a_seg * 2;
  const unsigned a_pass = unsigned(kArows) * P.kpitch, a_tap = unsigned(P.g.rows) * P.kpitch;
  // The input window's copies: channel tid / BN + i kBch at position tid % BN of the window.
  const int b_ch = tid / BN, b_n = tid % BN;
  const unsigned b_off = (unsigned(t.b) * P.g.cin + b_ch) * P.g.l_in;
  const int b_pos = t.n0 + P.g.shift[t.g] + b_n + shift;

  // The next iteration to load: channels from ch, tap lj; valid while ahead of the last iteration.
  int lj = it0 % P.g.taps, ch = it0 / P.g.taps * kBk;
  // Copies [i0, i1) of the weight tile and [j0, j1) of the input window of that iteration into
  // slot s (zero-filled where the iteration is past the last: the slot is not read again).
  auto load = [&](int s, bool valid, int i0, int i1, int j0, int j1) {
    double *as = smem + s * (kA + kB);
    float *bs = reinterpret_cast<float *>(as + kA);
    const unsigned ao = a_off + unsigned(lj) * a_tap + ch;
#pragma unroll
    for (int i = i0; i < i1; ++i) {
      const bool ok = valid && (a_ok >> i & 1u);
      copy16_async(as + (a_row + i * kArows) * kApitch + a_seg * 2, A + (ok ? ao + i * a_pass : 0u),
                   ok);
    }
    const int tp = b_pos + lj * P.g.tap_step;
    const bool tp_ok = valid && tp >= 0 && tp < P.g.l_in;
    const unsigned bo = b_off + unsigned(ch) * P.g.l_in + unsigned(tp);
#pragma unroll
    for (int j = j0; j < j1; ++j) {
      const bool ok = tp_ok && ch + b_ch + j * kBch < P.g.cin;
      copy4_async(bs + (b_ch + j * kBch) * kBp + b_n,
                  x + (ok ? bo + unsigned(j * kBch) * P.g.l_in : 0u), ok);
    }
  };
  auto advance = [&] {
    if (++lj == P.g.taps) {
      lj = 0;
      ch += kBk;
    }
  };

  double acc[FM][FN][4];
#pragma unroll
  for (int fm = 0; fm < FM; ++fm)
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int v = 0; v < 4; ++v)
        acc[fm][fn][v] = 0.0;

  // The multiply-adds of slot s, with the copies of the next iteration into slot `ls` issued
  // between them, one piece after each row (or column) of fragments: the DMMA pipe stays busy while
  // the copies' addresses are formed.
  auto compute = [&](int s, int ls, bool lvalid) {
    const double *as = smem + s * (kA + kB) + (wm * FM * 16) * kApitch;
    const float *bs = reinterpret_cast<const float *>(smem + s * (kA + kB) + kA) + wn * FN * 8;
    auto load_afrag = [&](double(&a)[8], int fm) {
#pragma unroll
      for (int v = 0; v < 8; ++v)
        a[v] = as[(fm * 16 + gq + 8 * (v & 1)) * kApitch + tq + 4 * (v >> 1)];
    };
    auto load_bfrag = [&](double(&b)[4], int fn) {
#pragma unroll
      for (int v = 0; v < 4; ++v)
        b[v] = double(bs[(tq + 4 * v) * kBp + fn * 8 + gq]);
    };
    auto piece = [&](int p, int np) {
      load(ls, lvalid, p * kAper / np, (p + 1) * kAper / np, p * kBper / np, (p + 1) * kBper / np);
    };
    if constexpr (FM * 8 <= FN * 4) { // the A fragments are the fewer registers: hold them
      double a[FM][8];
#pragma unroll
      for (int fm = 0; fm < FM; ++fm)
        load_afrag(a[fm], fm);
#pragma unroll
      for (int fn = 0; fn < FN; ++fn) {
        double b[4];
        load_bfrag(b, fn);
#pragma unroll
        for (int fm = 0; fm < FM; ++fm)
          mma16816(acc[fm][fn], a[fm], b);
        piece(fn, FN);
      }
    } else {
      double b[FN][4];
#pragma unroll
      for (int fn = 0; fn < FN; ++fn)
        load_bfrag(b[fn], fn);
#pragma unroll
      for (int fm = 0; fm < FM; ++fm) {
        double a[8];
        load_afrag(a, fm);
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
          mma16816(acc[fm][fn], a, b[fn]);
        piece(fm, FM);
      }
    }
  };

  // The pipeline: kBuffers - 1 iterations in flight ahead of the one computed.
#pragma unroll
  for (int s = 0; s < kBuffers - 1; ++s) {
    load(s, s < n_it, 0, kAper, 0, kBper);
    advance();
    async_commit();
  }
  for (int i = 0; i < n_it; ++i) {
    async_wait<kBuffers - 2>();
    __syncthreads(); // iteration i is in; every warp is past the compute of i - 1
    // Iteration i + kBuffers - 1 into the slot computed at i - 1, during this one's compute.
    const int next = i + kBuffers - 1;
    compute(i % kBuffers, next % kBuffers, next < n_it);
    advance();
    async_commit();
  }

  const int64_t cells = int64_t(P.g.batch) * P.g.cout * P.g.l_out;
#pragma unroll
  for (int fm = 0; fm < FM; ++fm)
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int row = wm * FM * 16 + fm * 16 + gq + 8 * (v >> 1);
        const int col = wn * FN * 8 + fn * 8 + 2 * tq + (v & 1);
        const int64_t yi = y_index(P, t, row, col);
        if (yi < 0)
          continue;
        if (P.g.split > 1) {
          ws[sp * cells + yi] = acc[fm][fn][v];
        } else {
          const int oc = (t.r0 + row) >> P.g.lg[t.g];
          y[yi] = float(acc[fm][fn][v] + (P.g.bias ? double(bias[oc]) : 0.0));
        }
      }
}

template <int FM, int FN>
void launch_tile(const Plan &p, const double *a, const float *x, const float *bias, float *y,
                 double *ws, cudaStream_t st, int planted) {
  auto kernel = dm_kernel<FM, FN>;
  // Above 48 KiB a kernel must opt in, once per instantiation (the bytes depend on the tile
  // alone); the carveout asks for all of the unified cache as shared memory, so 2-3 blocks fit.
  static const cudaError_t attr = [&] {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(p));
    return e != cudaSuccess
               ? e
               : cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  }();
  CONVBENCH_CUDA_CHECK(attr); // cudaFuncSetAttribute(dm_kernel)
  const dim3 grid(unsigned(blocks(p)), unsigned(p.g.split));
  kernel<<<grid, kThreads, size_t(smem_bytes(p)), st>>>(p, a, x, bias, y, ws, planted);
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // dm_kernel launch
}

} // namespace

void launch_pack(const Plan &p, const float *d_w, double *a, cudaStream_t st) {
  const int64_t n = packed_weight_doubles(p);
  const unsigned nb = unsigned(std::min<int64_t>((n + 255) / 256, device_facts().sms * 32));
  dm_pack<<<nb, 256, 0, st>>>(p, n, d_w, a);
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // dm_pack launch
}

void launch(const Plan &p, const double *a, const float *x, const float *bias, float *y, double *ws,
            cudaStream_t st, int planted) {
  const int bm = p.g.row_tile, bn = p.g.col_tile;
  if (bm == 128 && bn == 64)
    launch_tile<4, 4>(p, a, x, bias, y, ws, st, planted);
  else if (bm == 64 && bn == 128)
    launch_tile<2, 8>(p, a, x, bias, y, ws, st, planted);
  else if (bm == 64 && bn == 64)
    launch_tile<2, 4>(p, a, x, bias, y, ws, st, planted);
  else if (bm == 128 && bn == 32)
    launch_tile<4, 2>(p, a, x, bias, y, ws, st, planted);
  else if (bm == 32 && bn == 128)
    launch_tile<1, 8>(p, a, x, bias, y, ws, st, planted);
  else
    throw std::invalid_argument("dmma: no kernel for a " + std::to_string(bm) + "x" +
                                std::to_string(bn) + " tile");
  if (p.g.split > 1) {
    const int64_t cells = int64_t(p.g.batch) * p.g.cout * p.g.l_out;
    const int64_t nb = std::min<int64_t>((cells + 255) / 256, device_facts().sms * 16);
    detail::tc_reduce<double><<<unsigned(nb), 256, 0, st>>>(cells, p.g.split, p.g.cout, p.g.l_out,
                                                            ws, p.g.bias ? bias : nullptr, y);
    CONVBENCH_CUDA_CHECK(cudaGetLastError()); // tc_reduce launch
  }
}

} // namespace convbench::tc::dm
