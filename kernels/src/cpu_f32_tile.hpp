// cpu-f32's register-blocked tile, written once and compiled per instruction
// set: each cpu_f32_<isa>.cpp defines a vector traits struct `V` and includes
// this header inside an anonymous namespace, under its own `#pragma GCC
// target`. No standard-library calls in here (see cpu_f32_plan.hpp for why).
//
// Order of the additions into one output cell (fixed by the shape alone, so the
// result does not depend on the thread count): for each block of kc input
// channels, a partial sum starts at 0 in an f32 register and takes that block's
// (ic ascending, tap ascending) products by FMA; the partial is then added into
// the cell's f32 accumulator (zero at the start); bias is added last. Every
// step is f32: nothing is ever held in double.
//
// Expects: struct V { using R; static constexpr int VL; zero, load, bcast,
// fma(a, b, c) = a*b+c, add, store }, and constants kMR (oc rows) and kNV
// (vectors of VL cells) of the register block.

#ifndef CONVBENCH_CPU_F32_TILE_BODY
#error "include cpu_f32_tile.hpp only from a cpu_f32_<isa>.cpp, inside its anonymous namespace"
#endif

constexpr int kNR = kNV * V::VL;

// One MR x NR block of partial sums over n_ic input channels, added into c (row
// stride c_rows). a: packed weights [ic][tap][mr_full] of this phase (MR of the
// mr_full used); x: the first channel's buffer at this block's first cell;
// taps: this phase's taps (x_off).
template <int MR>
void block(const float *a, int64_t a_ic_stride, int64_t mr_full, const cpu_f32::Tap *taps,
           int64_t n_taps, const float *x, int64_t x_ic_stride, int64_t n_ic, float *c,
           int64_t c_rows) {
  typename V::R acc[MR][kNV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v)
      acc[i][v] = V::zero();
  for (int64_t ic = 0; ic < n_ic; ++ic) {
    const float *xr = x + ic * x_ic_stride;
    const float *ar = a + ic * a_ic_stride;
    for (int64_t t = 0; t < n_taps; ++t) {
      const float *xp = xr + taps[t].x_off;
      const float *ap = ar + t * mr_full;
      typename V::R bv[kNV];
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v)
        bv[v] = V::load(xp + v * V::VL);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const typename V::R av = V::bcast(ap + i);
#pragma GCC unroll 4
        for (int v = 0; v < kNV; ++v)
          acc[i][v] = V::fma(av, bv[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) {
      float *cp = c + i * c_rows + v * V::VL;
      V::store(cp, V::add(V::load(cp), acc[i][v]));
    }
}

using BlockFn = void (*)(const float *, int64_t, int64_t, const cpu_f32::Tap *, int64_t,
                         const float *, int64_t, int64_t, float *, int64_t);

// block<1> .. block<kMR>, so the oc remainder of a shape runs the same code
// with fewer rows.
template <int... I> BlockFn block_for_rows(int64_t rows, std::integer_sequence<int, I...>) {
  const BlockFn table[] = {&block<I + 1>...};
  return table[rows - 1];
}

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Packs weights of rows oc0.. oc0 + rows, channels ic0 .. ic0 + n_ic into dst
// (Plan::wpack's block layout). Channel by channel, so the reads run along the
// torch layout's rows; the rows of a channel a few ahead are prefetched, since
// each channel sits a whole cout * K floats further on (48 KB for up0), past
// what the hardware prefetchers follow.
const float *pack_block(const cpu_f32::Plan &p, int64_t oc0, int64_t rows, int64_t ic0,
                        int64_t n_ic, float *dst) {
  const int64_t mr = p.mr;
  for (int64_t ph = 0; ph < p.n_phases; ++ph) {
    const cpu_f32::Phase &f = p.phases[ph];
    float *dst_phase = dst + f.first_tap * n_ic * mr;
    for (int64_t l = 0; l < n_ic; ++l)
      for (int64_t i = 0; i < rows; ++i) {
        const float *src = p.w + (ic0 + l) * p.w_ic_stride + (oc0 + i) * p.w_oc_stride;
        float *d = dst_phase + l * f.n_taps * mr + i;
        for (int64_t t = 0; t < f.n_taps; ++t)
          d[t * mr] = src[p.taps[f.first_tap + t].k];
      }
  }
  return dst;
}

// Cells [u0, u1) of S phases into y0[S u + j] (phase j's cell u) plus bias, in y order.
template <int S>
void write_interleaved(float *y0, const float *const *c, int64_t u0, int64_t u1, float bv) {
  for (int64_t u = u0; u < u1; ++u)
#pragma GCC unroll 8
    for (int j = 0; j < S; ++j)
      y0[S * u + j] = c[j][u] + bv;
}

// The item's cells from acc ([phase][mr][chunk]) into y, bias added: rows oc0.. of batch b,
// cells u_begin.. of every phase.
void write_rows(const cpu_f32::Plan &p, const float *acc, int64_t b, int64_t oc0, int64_t rows,
                int64_t u_begin) {
  const int64_t mr = p.mr, chunk = p.chunk_u;
  // Strides 2, 4 and 8 (s phases whose cells interleave in y: y_first values s consecutive
  // integers, y_step s): all phases' cells of a row are written in one pass, in y order, which
  // the compiler vectorises (permutes and full-width stores). Phase by phase, each cell was a
  // scalar load, add and store at stride s, which profiles showed in up2's time.
  const int64_t n_ph = p.n_phases;
  int64_t order[8]; // order[j]: the phase whose y_first is the smallest plus j
  bool interleave = n_ph == 2 || n_ph == 4 || n_ph == 8;
  int64_t f0 = interleave ? p.phases[0].y_first : 0;
  for (int64_t ph = 0; interleave && ph < n_ph; ++ph)
    f0 = p.phases[ph].y_first < f0 ? p.phases[ph].y_first : f0;
  for (int64_t j = 0; interleave && j < n_ph; ++j)
    order[j] = -1;
  for (int64_t ph = 0; interleave && ph < n_ph; ++ph) {
    const int64_t j = p.phases[ph].y_first - f0;
    interleave = p.phases[ph].y_step == n_ph && j < n_ph && order[j] < 0;
    if (interleave)
      order[j] = ph;
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float bv = p.bias ? p.bias[oc0 + i] : 0.0f;
    float *yrow = p.y + (b * p.cout + oc0 + i) * p.l_out;
    int64_t u_paired = u_begin; // cells [u_begin, u_paired) of every phase are written
    if (interleave) {
      int64_t all = u_begin + chunk;
      const float *c[8];
      for (int64_t j = 0; j < n_ph; ++j) {
        all = min64(all, p.phases[order[j]].n_out);
        c[j] = acc + (order[j] * mr + i) * chunk - u_begin;
      }
      float *y0 = yrow + f0; // y0[s u + j] is phase order[j]'s cell u
      if (n_ph == 2)
        write_interleaved<2>(y0, c, u_begin, all, bv);
      else if (n_ph == 4)
        write_interleaved<4>(y0, c, u_begin, all, bv);
      else
        write_interleaved<8>(y0, c, u_begin, all, bv);
      u_paired = all > u_begin ? all : u_begin;
    }
    for (int64_t ph = 0; ph < p.n_phases; ++ph) {
      const cpu_f32::Phase &f = p.phases[ph];
      const int64_t u_end = min64(u_begin + chunk, f.n_out);
      const float *c = acc + (ph * mr + i) * chunk - u_begin;
      float *yr = yrow + f.y_first;
      for (int64_t u = u_paired; u < u_end; ++u)
        yr[u * f.y_step] = c[u] + bv;
    }
  }
}

// One item: batch b, oc block ob, u chunk uc, over all phases and all input
// channels.
void run_item(const cpu_f32::Plan &p, int64_t item, float *scratch) {
  const int64_t uc = item % p.n_u_chunks;
  const int64_t ob = (item / p.n_u_chunks) % p.n_oc_blocks;
  const int64_t b = item / (p.n_u_chunks * p.n_oc_blocks);
  const int64_t mr = p.mr, chunk = p.chunk_u;
  const int64_t oc0 = ob * mr;
  const int64_t rows = min64(mr, p.cout - oc0);
  const int64_t u_begin = uc * chunk;
  float *acc = scratch; // [phase][mr][chunk]
  for (int64_t i = 0; i < p.n_phases * mr * chunk; ++i)
    acc[i] = 0.0f;
  const BlockFn fn = block_for_rows(rows, std::make_integer_sequence<int, kMR>{});

  for (int64_t ic0 = 0; ic0 < p.cin; ic0 += p.kc) {
    const int64_t n_ic = min64(p.kc, p.cin - ic0);
    // This block's weights, [phase][ic][tap][mr] (see Plan::wpack).
    const float *pack = p.wpack ? p.wpack + ob * p.pack_ob_floats() + ic0 * p.n_taps_total * mr
                                : pack_block(p, oc0, rows, ic0, n_ic, scratch + p.acc_floats());
    const float *x = p.xbuf + b * p.x_batch_stride + ic0 * p.x_ic_stride;
    // Where this item packs its own weights, the next channel block's rows are prefetched a few
    // lines per tile call, while this block computes: each channel's rows sit cout * K floats
    // apart (48 KB for up0), where no hardware prefetcher follows, and the pack otherwise waits
    // on memory for every channel. (Only the transposed layout, whose rows of one channel are
    // contiguous.)
    const int64_t next_ic0 = ic0 + p.kc;
    const bool prefetch = !p.wpack && next_ic0 < p.cin && p.w_oc_stride == p.k;
    const int64_t lines_per_ic = (rows * p.k * 4 + 63) / 64;
    const int64_t pf_lines = prefetch ? min64(p.kc, p.cin - next_ic0) * lines_per_ic : 0;
    const char *pf_base =
        reinterpret_cast<const char *>(p.w + next_ic0 * p.w_ic_stride + oc0 * p.w_oc_stride);
    const int64_t calls = p.n_phases * ((chunk + kNR - 1) / kNR);
    const int64_t pf_per_call = (pf_lines + calls - 1) / calls;
    int64_t pf_next = 0;
    for (int64_t ph = 0; ph < p.n_phases; ++ph) {
      const cpu_f32::Phase &f = p.phases[ph];
      const int64_t u_end = min64(u_begin + chunk, f.n_out);
      if (f.n_taps == 0)
        continue;
      float *c = acc + ph * mr * chunk;
      for (int64_t u0 = u_begin; u0 < u_end; u0 += kNR) {
        for (const int64_t stop = min64(pf_next + pf_per_call, pf_lines); pf_next < stop; ++pf_next)
          __builtin_prefetch(pf_base + pf_next / lines_per_ic * p.w_ic_stride * 4 +
                             pf_next % lines_per_ic * 64);
        fn(pack + f.first_tap * n_ic * mr, f.n_taps * mr, mr, p.taps + f.first_tap, f.n_taps,
           x + u0 / kNR * p.x_strip_stride, p.x_ic_stride, n_ic, c + (u0 - u_begin), chunk);
      }
    }
  }

  write_rows(p, acc, b, oc0, rows, u_begin);
}
