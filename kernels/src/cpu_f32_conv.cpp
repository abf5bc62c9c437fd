// cpu-f32 driver: builds the phase plan of cpu_f32_plan.hpp, the zero-padded
// input buffer, and runs the items (batch x oc block x u chunk) on the pool.
// Each item owns its output cells outright and its addition order depends only
// on the shape, so the output is the same run to run and at any thread count.
// Items are handed out dynamically (an atomic counter) for balance.
#include "cpu_f32_conv.hpp"
#include "polyphase.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace convbench::cpu_f32 {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Blocking budgets (floats), tuned on up0..up3 of the default model: the chunk
// accumulator and the packed weights of one input-channel block stay in L1/L2.
constexpr int64_t kAccBudget = 12288;
constexpr int64_t kPackBudget = 8192;

struct Built {
  Plan plan{};
  std::vector<Tap> taps;
  std::vector<Phase> phases;
  int64_t rows = 1;     // input rows per channel (forward: stride)
  int64_t width = 0;    // floats per row of one strip
  int64_t n_strips = 0; // strips of NR cells
  int64_t z = 0;        // zero cells before input index 0 in each row
};

// Transposed: one phase per residue r of the stride, its taps those with k * d = r (mod stride);
// sets b.z, b.taps, b.phases and each tap's shift into `shifts`. The most cells of a phase.
int64_t transposed_phases(const ConvShape &s, Built &b, std::vector<int64_t> &shifts) {
  const int64_t l_out = s.l_out(), st = s.stride, d = s.dilation, pad = s.padding;
  int64_t n_max = 0;
  b.z = ((s.k - 1) * d) / st; // the largest o_k
  for (int64_t r = 0; r < st; ++r) {
    Phase f{};
    // The polyphase planner's phase r (polyphase.hpp): its cells start at q = c_r.
    const int64_t c_r = polyphase::phase_first(pad, st, r);
    f.n_out = polyphase::phase_cells(l_out, pad, st, r);
    f.y_first = polyphase::phase_output(0, pad, st, r);
    f.y_step = st;
    f.first_tap = int64_t(b.taps.size());
    for (int64_t k = 0; k < s.k; ++k) {
      if ((k * d) % st != r)
        continue;
      const int64_t o = (k * d - r) / st;
      b.taps.push_back(Tap{k, 0});
      shifts.push_back(c_r - o + b.z);
    }
    f.n_taps = int64_t(b.taps.size()) - f.first_tap;
    n_max = std::max(n_max, f.n_out);
    b.phases.push_back(f);
  }
  b.rows = 1;
  return n_max;
}

// Forward: one phase of every tap, the input in `stride` rows; as transposed_phases().
int64_t forward_phases(const ConvShape &s, Built &b, std::vector<int64_t> &shifts) {
  const int64_t l_out = s.l_out(), st = s.stride;
  int64_t a_min = 0;
  for (int64_t k = 0; k < s.k; ++k)
    a_min = std::min(a_min, floor_div(k * s.dilation - s.padding, st));
  b.z = -a_min;
  for (int64_t k = 0; k < s.k; ++k) {
    b.taps.push_back(Tap{k, 0});
    shifts.push_back(floor_div(k * s.dilation - s.padding, st) + b.z);
  }
  b.phases.push_back(Phase{0, s.k, l_out, 0, 1});
  b.rows = st;
  return l_out;
}

Built build_plan(const ConvShape &s, Block blk) {
  Built b;
  const int64_t l_out = s.l_out();
  std::vector<int64_t> shifts;
  const int64_t n_max =
      s.op == ConvOp::transposed ? transposed_phases(s, b, shifts) : forward_phases(s, b, shifts);
  const int64_t max_shift = *std::max_element(shifts.begin(), shifts.end());
  // The input is laid out in strips of NR cells (Plan::xbuf): a tile starting
  // at cell u0 reads cells u0 + shift .. u0 + shift + NR - 1 of each row, so a
  // strip row holds NR + max_shift.
  b.width = blk.nr + max_shift;
  b.n_strips = ceil_div(std::max<int64_t>(n_max, 1), blk.nr);
  for (size_t i = 0; i < b.taps.size(); ++i) {
    const int64_t row =
        s.op == ConvOp::forward
            ? b.taps[i].k * s.dilation - s.padding -
                  floor_div(b.taps[i].k * s.dilation - s.padding, s.stride) * s.stride
            : 0;
    b.taps[i].x_off = row * b.width + shifts[i];
  }

  Plan &p = b.plan;
  p.x_ic_stride = b.rows * b.width;
  p.x_strip_stride = s.cin * p.x_ic_stride;
  p.x_batch_stride = b.n_strips * p.x_strip_stride;
  if (s.op == ConvOp::transposed) {
    p.w_ic_stride = s.cout * s.k;
    p.w_oc_stride = s.k;
  } else {
    p.w_ic_stride = s.k;
    p.w_oc_stride = s.cin * s.k;
  }
  p.batch = s.batch;
  p.cin = s.cin;
  p.cout = s.cout;
  p.l_out = l_out;
  p.k = s.k;
  p.taps = b.taps.data();
  p.n_taps_total = int64_t(b.taps.size());
  p.phases = b.phases.data();
  p.n_phases = int64_t(b.phases.size());
  p.mr = blk.mr;
  p.nr = blk.nr;
  const int64_t n_cells = round_up(std::max<int64_t>(n_max, 1), blk.nr);
  int64_t chunk = std::max(blk.nr, kAccBudget / (p.n_phases * p.mr) / blk.nr * blk.nr);
  chunk = std::min(chunk, n_cells);
  p.n_u_chunks = ceil_div(n_cells, chunk);
  p.chunk_u = round_up(ceil_div(n_cells, p.n_u_chunks), blk.nr); // even chunks
  p.kc = std::clamp<int64_t>(kPackBudget / (std::max<int64_t>(p.n_taps_total, 1) * p.mr), 8, 512);
  p.n_oc_blocks = ceil_div(s.cout, p.mr);
  return b;
}

using RunFn = void (*)(const Plan &, int64_t, int64_t, float *);

// Packs wpack (Plan::wpack's layout) from the caller's weights. One work item is a
// block of kc input channels x a group of oc blocks: per input channel it reads
// the group's rows as one contiguous run of the torch layout (a stream the
// prefetchers follow; one oc block per item read 768 bytes per 48 KB stride for
// up0 and waited on DRAM for each) and writes into the group's regions, which
// pack_ob_floats() staggers by a cache line so they do not share cache sets.
// Before this the weights were packed per item, again for every u chunk (3x for
// up1, 6x for up2, 12x for up3).
class WeightPacker {
public:
  // Two oc blocks per item: contiguous reads of two blocks' rows, and enough items for 16
  // threads even where cin is one channel block (up2: 8 groups x 3 channel blocks).
  static constexpr int64_t kObGroup = 2;

  WeightPacker(const Plan &p, float *wpack)
      : p_(p), wpack_(wpack), n_ic_blocks_(ceil_div(p.cin, p.kc)),
        items_(wpack ? ceil_div(p.n_oc_blocks, kObGroup) * n_ic_blocks_ : 0),
        tap_k_(static_cast<size_t>(p.n_taps_total)), tap_first_(tap_k_), tap_n_(tap_k_),
        tap_t_(tap_k_) {
    // Per global tap g: its phase's region in a block of n_ic channels starts at
    // first_tap * n_ic * mr, and within it channel l's taps at l * n_taps * mr.
    for (int64_t ph = 0; ph < p.n_phases; ++ph)
      for (int64_t t = 0; t < p.phases[ph].n_taps; ++t) {
        const int64_t g = p.phases[ph].first_tap + t;
        tap_k_[g] = p.taps[g].k;
        tap_first_[g] = p.phases[ph].first_tap;
        tap_n_[g] = p.phases[ph].n_taps;
        tap_t_[g] = t;
      }
    // The 4 x 4 transpose path: the transposed layout ([oc][k] rows), K and MR multiples of 4,
    // every k one tap (g_of_k_ inverts tap_k_).
    by_tap_ = p.w_oc_stride == p.k && p.k % 4 == 0 && p.mr % 4 == 0 && p.n_taps_total == p.k;
    if (by_tap_) {
      g_of_k_.assign(static_cast<size_t>(p.k), -1);
      for (int64_t g = 0; g < p.n_taps_total; ++g)
        g_of_k_[tap_k_[g]] = g;
      by_tap_ = std::find(g_of_k_.begin(), g_of_k_.end(), -1) == g_of_k_.end();
    }
  }
  int64_t items() const { return items_; } // 0 when the items pack their own

  void run(int64_t item) const {
    const Plan &p = p_;
    const int64_t mr = p.mr, g_all = p.n_taps_total;
    const int64_t ob_first = item / n_ic_blocks_ * kObGroup;
    const int64_t ob_end = std::min(ob_first + kObGroup, p.n_oc_blocks);
    const int64_t ic0 = item % n_ic_blocks_ * p.kc;
    const int64_t n_ic = std::min(p.kc, p.cin - ic0);
    // The group's rows of one channel are one contiguous run, and the next channel's a whole
    // cout x K floats on (3 KB for up2): the loads waited on memory (perf: most of the pack's
    // time on them), so the run kPrefetchAhead channels ahead is prefetched.
    constexpr int64_t kPrefetchAhead = 4;
    const int64_t run_bytes = (ob_end - ob_first) * mr * p.w_oc_stride * int64_t(sizeof(float));
    for (int64_t l = 0; l < n_ic; ++l) {
      if (l + kPrefetchAhead < n_ic) {
        const char *ahead = reinterpret_cast<const char *>(
            p.w + (ic0 + l + kPrefetchAhead) * p.w_ic_stride + ob_first * mr * p.w_oc_stride);
        for (int64_t off = 0; off < run_bytes; off += 64)
          __builtin_prefetch(ahead + off);
      }
      for (int64_t ob = ob_first; ob < ob_end; ++ob) {
        const int64_t rows = std::min(mr, p.cout - ob * mr);
        const float *src = p.w + (ic0 + l) * p.w_ic_stride + ob * mr * p.w_oc_stride;
        float *block = wpack_ + ob * p.pack_ob_floats() + ic0 * g_all * mr;
        auto dst_of = [&](int64_t g) {
          return block + tap_first_[g] * n_ic * mr + tap_t_[g] * mr + l * tap_n_[g] * mr;
        };
#if defined(__SSE2__)
        // The transposed layout holds an oc block's rows of one channel as [oc][k], K
        // contiguous floats per oc: 4 x 4 blocks of it, transposed in registers, are 4 taps' 4
        // rows each (the element-wise gather below is a scalar load and store per weight,
        // visible in up2's profile).
        if (by_tap_ && rows == mr) {
          for (int64_t k0 = 0; k0 < p.k; k0 += 4)
            for (int64_t i0 = 0; i0 + 4 <= mr; i0 += 4) {
              const float *sq = src + i0 * p.k + k0;
              __m128 r0 = _mm_loadu_ps(sq), r1 = _mm_loadu_ps(sq + p.k),
                     r2 = _mm_loadu_ps(sq + 2 * p.k), r3 = _mm_loadu_ps(sq + 3 * p.k);
              _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
              _mm_storeu_ps(dst_of(g_of_k_[k0]) + i0, r0);
              _mm_storeu_ps(dst_of(g_of_k_[k0 + 1]) + i0, r1);
              _mm_storeu_ps(dst_of(g_of_k_[k0 + 2]) + i0, r2);
              _mm_storeu_ps(dst_of(g_of_k_[k0 + 3]) + i0, r3);
            }
          continue;
        }
#endif
        for (int64_t g = 0; g < g_all; ++g) {
          float *dst = dst_of(g);
          const float *sg = src + tap_k_[g];
          for (int64_t i = 0; i < rows; ++i)
            dst[i] = sg[i * p.w_oc_stride];
          for (int64_t i = rows; i < mr; ++i)
            dst[i] = 0.0f;
        }
      }
    }
  }

private:
  const Plan &p_;
  float *wpack_;
  int64_t n_ic_blocks_, items_;
  std::vector<int64_t> tap_k_, tap_first_, tap_n_, tap_t_;
  bool by_tap_ = false;
  std::vector<int64_t> g_of_k_;
};

} // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
  case Isa::generic:
    return true;
  case Isa::avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case Isa::avx512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("fma");
  }
  return false;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::avx512) ? Isa::avx512
                          : isa_supported(Isa::avx2) ? Isa::avx2
                                                     : Isa::generic;
  return best;
}

const char *isa_name(Isa isa) {
  switch (isa) {
  case Isa::generic:
    return "generic";
  case Isa::avx2:
    return "avx2";
  case Isa::avx512:
    return "avx512";
  }
  return "?";
}

namespace {
Block block_of(Isa isa) {
  return isa == Isa::avx512 ? block_avx512() : isa == Isa::avx2 ? block_avx2() : block_generic();
}
// Channel bc (batch * cin + ic) of x into its rows of every strip of xbuf (Plan::xbuf), zeros
// where a cell holds no input.
void fill_strips(const ConvShape &s, const Built &b, int64_t nr, const float *x, float *xbuf,
                 int64_t bc) {
  const Plan &p = b.plan;
  const int64_t batch = bc / s.cin, ic = bc % s.cin;
  const float *src = x + bc * s.l_in;
  for (int64_t strip = 0; strip < b.n_strips; ++strip) {
    float *dst = xbuf + batch * p.x_batch_stride + strip * p.x_strip_stride + ic * p.x_ic_stride;
    for (int64_t row = 0; row < b.rows; ++row) {
      // Cells w of this strip row with 0 <= m = strip * NR + w - z < the row's length hold
      // input; the rest are padding. (A per-cell test here showed in up2's profile.)
      const int64_t m0 = strip * nr - b.z, row_len = (s.l_in - row + b.rows - 1) / b.rows;
      const int64_t w_lo = std::clamp<int64_t>(-m0, 0, b.width);
      const int64_t w_hi = std::clamp<int64_t>(row_len - m0, w_lo, b.width);
      float *d = dst + row * b.width;
      std::fill(d, d + w_lo, 0.0f);
      const float *sr = src + (m0 + w_lo) * b.rows + row;
      if (b.rows == 1) // transposed: one contiguous run (the strided loop below, scalar
        std::copy(sr, sr + (w_hi - w_lo), d + w_lo); // loads and stores, slow on up2)
      else
        for (int64_t cell = w_lo; cell < w_hi; ++cell)
          d[cell] = sr[(cell - w_lo) * b.rows];
      std::fill(d + w_hi, d + b.width, 0.0f);
    }
  }
}

// Runs every GEMM item of p on the pool, each worker its own range first.
void run_all_items(const Plan &p, RunFn run, ThreadPool &pool) {
  const int64_t items = p.items();
  const int64_t scratch_floats =
      round_up(p.acc_floats(), 16) + (p.wpack ? 0 : round_up(p.item_pack_floats(), 16));
  // Who runs which item. Each worker owns a contiguous range of the items in u-chunk-major
  // order (the oc blocks of one u chunk are neighbours), so the chunk's input strips, loaded
  // into the worker's L2 by its first item there, serve its next ones too; a worker whose range
  // is done takes items from the front of the others' ranges, for balance. (Handed out one
  // global item at a time, in oc-block-major order, every item pulled its u chunk's strips --
  // 811 KB for up2 -- from L3 or another core's cache.) Which worker runs an item never changes
  // how its cells are computed.
  const int64_t workers = std::min<int64_t>(pool.size(), items);
  struct alignas(64) Range {
    std::atomic<int64_t> next;
    int64_t end;
  };
  std::unique_ptr<Range[]> ranges(new Range[size_t(workers)]);
  for (int64_t w = 0; w < workers; ++w) {
    ranges[w].next.store(w * items / workers);
    ranges[w].end = (w + 1) * items / workers;
  }
  const int64_t per_batch = p.n_u_chunks * p.n_oc_blocks;
  auto item_of = [&](int64_t k) { // k-th item in u-chunk-major order -> run_item's index
    const int64_t b = k / per_batch, r = k % per_batch;
    const int64_t uc = r / p.n_oc_blocks, ob = r % p.n_oc_blocks;
    return (b * p.n_oc_blocks + ob) * p.n_u_chunks + uc;
  };
  pool.parallel_for(workers, [&](int64_t begin, int64_t) {
    std::unique_ptr<float, decltype(&std::free)> scratch(
        static_cast<float *>(std::aligned_alloc(64, size_t(scratch_floats) * sizeof(float))),
        &std::free);
    if (!scratch)
      throw std::bad_alloc();
    for (int64_t v = 0; v < workers; ++v) { // its own range first, then the others' in turn
      Range &r = ranges[(begin + v) % workers];
      for (int64_t k = r.next.fetch_add(1); k < r.end; k = r.next.fetch_add(1)) {
        const int64_t item = item_of(k);
        run(p, item, item + 1, scratch.get());
      }
    }
  });
}

// One rule for conv() and plan_summary(): an oc block's weights serve several items.
bool packs_once(const Plan &p) { return p.batch * p.n_u_chunks > 1; }
} // namespace

PlanSummary plan_summary(Isa isa, const ConvShape &s) {
  s.validate();
  const Built b = build_plan(s, block_of(isa));
  const Plan &p = b.plan;
  int64_t cells = 0;
  for (const Phase &f : b.phases)
    cells = std::max(cells, f.n_out);
  return PlanSummary{p.items(), p.n_oc_blocks, p.n_u_chunks, p.chunk_u, cells, packs_once(p)};
}

void conv(Isa isa, const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
          ThreadPool &pool) {
  s.validate();
  if (!isa_supported(isa))
    throw std::invalid_argument(std::string("cpu-f32: this CPU cannot run the ") + isa_name(isa) +
                                " tile");
  const Block blk = block_of(isa);
  const RunFn run = isa == Isa::avx512 ? run_items_avx512
                    : isa == Isa::avx2 ? run_items_avx2
                                       : run_items_generic;
  Built b = build_plan(s, blk);

  // The zero-padded input in strips (Plan::xbuf): xbuf[b][strip][ic][row][w]
  // holds cell strip * NR + w of the row, and cell z + m of a row is
  // x[b][ic][m*rows + row].
  thread_local ReusedBuffer xbuf_store, wpack_store;
  Plan &p = b.plan;
  float *const xbuf = xbuf_store.get(s.batch * p.x_batch_stride);
  p.xbuf = xbuf;
  p.w = w;
  p.bias = s.bias ? bias : nullptr;
  p.y = y;
  // Pack once for all items only where an oc block serves more than one (Plan::wpack).
  float *const wpack = packs_once(p) ? wpack_store.get(p.pack_floats()) : nullptr;
  p.wpack = wpack;
  const WeightPacker packer(p, wpack);

  // The input strips (one item per batch x channel) and the weight pack, handed out together in
  // one pass over the pool: one wake-up of the threads rather than two before the GEMM.
  auto fill_channel = [&](int64_t bc) { fill_strips(s, b, blk.nr, x, xbuf, bc); };
  const int64_t fills = s.batch * s.cin, prep = fills + packer.items();
  std::atomic<int64_t> next_prep{0};
  pool.parallel_for(std::min<int64_t>(pool.size(), prep), [&](int64_t, int64_t) {
    for (int64_t i = next_prep.fetch_add(1); i < prep; i = next_prep.fetch_add(1)) {
      if (i < fills)
        fill_channel(i);
      else
        packer.run(i - fills);
    }
  });

  run_all_items(p, run, pool);
}

} // namespace convbench::cpu_f32
