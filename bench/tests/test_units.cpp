// Unit tests of bench_conv's pieces. Each check was seen failing once with a planted fault (noted
// beside it) before it was trusted.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "arms/ceiling_arm.hpp"
#include "convbench/cuda_conv.hpp"
#include "core/atomic_write.hpp"
#include "core/device_gate.hpp"
#include "core/npy.hpp"
#include "core/shuffle.hpp"
#include "core/stats.hpp"
#include "gate/gate.hpp"
#include "measurement/device.hpp"
#include "plan/arm.hpp"
#include "plan/catalog.hpp"
#include "plan/cli.hpp"
#include "plan/plan.hpp"
#include "probes/gpu_probe.hpp"
#include "record/record.hpp"

namespace fs = std::filesystem;
using namespace convbench::bench;

namespace {
fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("bench_units_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::vector<std::string> listing(const fs::path &d) {
  std::vector<std::string> out;
  for (auto &e : fs::directory_iterator(d))
    out.push_back(e.path().filename().string());
  return out;
}
} // namespace

// ---- the interleaving ----

// bench_conv guards the device before its lease: an entry point reached before open() throws (a
// waiting run would show on the GPU), none after. Planted: enter() without its check: failed.
TEST(DeviceGate, AnEntryBeforeTheLeaseIsVerifiedThrowsAndNoneAfter) {
  namespace dg = convbench::bench::device_gate;
  EXPECT_TRUE(dg::is_open()); // unguarded (a tool, a test): every entry is allowed
  EXPECT_NO_THROW(dg::enter("unguarded"));
  dg::guard();
  EXPECT_FALSE(dg::is_open());
  try {
    dg::enter("device facts");
    ADD_FAILURE() << "a device entry before the lease was let through";
  } catch (const std::logic_error &e) {
    EXPECT_NE(std::string(e.what()).find("device facts"), std::string::npos) << e.what();
  }
  dg::open();
  EXPECT_TRUE(dg::is_open());
  EXPECT_NO_THROW(dg::enter("device facts"));
}

TEST(Shuffle, Splitmix64MatchesTheReferenceStream) {
  // First outputs of the reference splitmix64 generator started at state 0 (Vigna's splitmix64.c).
  // Planted: a wrong shift constant (30 -> 31) fails this.
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
}

TEST(Shuffle, OrderIsAPureFunctionOfSeedAndRound) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xFFFFFFFFFFFFFFFFull})
    for (int r = 0; r < 5; ++r) {
      auto a = round_order(17, seed, r);
      auto b = round_order(17, seed, r);
      EXPECT_EQ(a, b) << "seed " << seed << " round " << r;
      std::set<int> distinct(a.begin(), a.end());
      EXPECT_EQ(distinct.size(), 17u) << "not a permutation";
      EXPECT_EQ(*distinct.begin(), 0);
      EXPECT_EQ(*distinct.rbegin(), 16);
    }
}

TEST(Shuffle, PinnedOrderDoesNotDrift) {
  // The documented algorithm (shuffle.hpp) for seed 1, n 8: results recorded with an order can be
  // re-derived only while this holds. Planted: std::shuffle instead of the hand-written
  // Fisher-Yates, or seeding mt19937_64 with `seed` instead of s_r, fails this.
  EXPECT_EQ(round_seed(1, 0), splitmix64(1));
  EXPECT_EQ(round_seed(1, 2), splitmix64(1 + 2 * 0x9E3779B97F4A7C15ull));
  std::vector<int> r0 = round_order(8, 1, 0), r1 = round_order(8, 1, 1);
  EXPECT_EQ(r0, (std::vector<int>{1, 4, 6, 0, 5, 2, 7, 3}));
  EXPECT_EQ(r1, (std::vector<int>{7, 1, 6, 3, 0, 5, 4, 2}));
}

TEST(Shuffle, DifferentSeedsAndRoundsGiveDifferentOrders) {
  // With n = 12 there are 12! orders; two equal ones by chance are ~2e-9 likely. Planted: a
  // round_seed ignoring `round` fails the per-round check.
  std::set<std::vector<int>> by_round, by_seed;
  for (int r = 0; r < 8; ++r)
    by_round.insert(round_order(12, 7, r));
  EXPECT_EQ(by_round.size(), 8u);
  for (uint64_t s = 0; s < 8; ++s)
    by_seed.insert(round_order(12, s, 0));
  EXPECT_EQ(by_seed.size(), 8u);
  EXPECT_TRUE(round_order(0, 1, 0).empty());
  EXPECT_EQ(round_order(1, 1, 0), std::vector<int>{0});
}

// ---- the result writer ----

TEST(AtomicWrite, WritesTheWholeFileAndLeavesNoTemp) {
  fs::path d = fresh_dir("ok");
  std::string text(1 << 20, 'x');
  write_atomically((d / "r.json").string(), text);
  std::ifstream in(d / "r.json", std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(back, text);
  EXPECT_EQ(listing(d), std::vector<std::string>{"r.json"});
  fs::remove_all(d);
}

TEST(AtomicWrite, FailedRenameRemovesTheTempAndKeepsTheTarget) {
  // The target is a non-empty directory: refused before a temp file exists (it used to fail at
  // rename(2), after the temp was written). Planted: dropping the unlink in the rename branch
  // left ".target.tmp.<pid>" and failed the listing check.
  fs::path d = fresh_dir("rename");
  fs::create_directories(d / "target" / "inside");
  EXPECT_THROW(write_atomically((d / "target").string(), "{}"), WriteError);
  EXPECT_EQ(listing(d), std::vector<std::string>{"target"});
  EXPECT_TRUE(fs::is_directory(d / "target" / "inside"));
  fs::remove_all(d);
}

TEST(AtomicWrite, UncreatableDirectoryFailsWithTheReason) {
  // /proc refuses new files even to root, unlike a chmod'ed directory.
  try {
    write_atomically("/proc/convbench-unit.json", "{}");
    FAIL() << "writing under /proc succeeded";
  } catch (const WriteError &e) {
    EXPECT_NE(std::string(e.what()).find("cannot create"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_writable("/proc/convbench-unit.json"), WriteError);
  EXPECT_THROW(check_writable("/nonexistent-dir-xyz/r.json"), WriteError);
}

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(AtomicWrite, ExistingSpecialFilesAreRefusedNotReplaced) {
  // A FIFO, a symlink and a directory at the target: refused with the kind named, each left as it
  // was. Fails on a writer that renames over whatever is there (the FIFO became a regular file,
  // the symlink a file of results: as root, --out /dev/null replaced /dev/null).
  fs::path d = fresh_dir("special");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0644), 0);
  std::ofstream(d / "victim") << "theirs";
  fs::create_symlink(d / "victim", d / "link");
  fs::create_directories(d / "dir");
  for (const char *name : {"fifo", "link", "dir"}) {
    const std::string path = (d / name).string();
    EXPECT_THROW(check_writable(path), WriteError) << name;
    try {
      write_atomically(path, "{}");
      ADD_FAILURE() << name << ": written";
    } catch (const WriteError &e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  struct stat st {};
  ASSERT_EQ(::lstat((d / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(slurp(d / "victim"), "theirs");
  EXPECT_EQ(listing(d).size(), 4u); // no temp file left
  // A regular file is replaced as before.
  std::ofstream(d / "r.json") << "old";
  write_atomically((d / "r.json").string(), "new");
  EXPECT_EQ(slurp(d / "r.json"), "new");
  fs::remove_all(d);
}

TEST(AtomicWrite, APlantedTempNameIsNeverWrittenThrough) {
  // Another local user plants symlinks at the temp names a writer could pick (the old name was
  // ".<name>.tmp.<pid>", opened with O_TRUNC and no O_NOFOLLOW: a root run wrote its record into
  // the victim). Fails on a predictable name or an open that follows the link.
  fs::path d = fresh_dir("planted");
  std::ofstream(d / "victim") << "theirs";
  fs::create_symlink(d / "victim", d / (".r.json.tmp." + std::to_string(getpid())));
  write_atomically((d / "r.json").string(), "ours");
  check_writable((d / "r2.json").string());
  EXPECT_EQ(slurp(d / "victim"), "theirs");
  EXPECT_EQ(slurp(d / "r.json"), "ours");
  EXPECT_EQ(listing(d).size(), 3u); // victim, the planted link, r.json
  fs::remove_all(d);
}

TEST(AtomicWrite, TheTempIsCreatedWithTheUmasksMode) {
  // A record others on the machine can read, as any file the user writes. Planted: the temp
  // created 0600 (mkstemp's mode) made the record 0600: failed here.
  fs::path d = fresh_dir("mode");
  const mode_t old = ::umask(022);
  write_atomically((d / "r.json").string(), "{}");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((d / "r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  fs::remove_all(d);
}

// Runs `f` with writes beyond `bytes` failing (EFBIG, the full-disk path: a short write).
template <class F> void with_file_size_limit(rlim_t bytes, F f) {
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = bytes;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  f();
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
}

TEST(Npy, AFailedWriteLeavesNoTruncatedFile) {
  // The disk fills while an array is written: an error naming the file, and neither a truncated
  // .npy nor a temp file. Fails on a writer that writes in place (the truncated .npy stayed).
  fs::path d = fresh_dir("npyfull");
  std::vector<float> big(64 * 1024, 1.f);
  with_file_size_limit(4096, [&] {
    EXPECT_THROW(
        write_npy_f32((d / "x.npy").string(), {int64_t(big.size())}, big.data(), big.size()),
        WriteError);
  });
  EXPECT_TRUE(listing(d).empty()) << listing(d)[0];
  // A FIFO where the dump goes: refused, never opened (an open would block on it).
  ASSERT_EQ(::mkfifo((d / "y.npy").c_str(), 0644), 0);
  EXPECT_THROW(write_npy_f32((d / "y.npy").string(), {1}, big.data(), 1), WriteError);
  fs::remove_all(d);
}

// ---- the gate ----

TEST(Gate, BitwiseCountsEveryDifferingCell) {
  std::vector<float> ref{1.f, 2.f, 3.f, 0.f}, y = ref;
  auto g = gate_output(GateKind::bitwise, 0, y, ref);
  EXPECT_TRUE(g.pass);
  EXPECT_EQ(g.mismatches, 0);
  y[1] = std::nextafter(2.f, 3.f); // one ulp
  y[3] = -0.f;                     // equal as numbers, not as bytes
  g = gate_output(GateKind::bitwise, 0, y, ref);
  EXPECT_FALSE(g.pass);
  EXPECT_EQ(g.mismatches, 2);
  EXPECT_GT(g.max_abs_err, 0);
}

TEST(Gate, ToleranceUsesRelativeL2AndRejectsNaN) {
  std::vector<float> ref(100, 1.f), y = ref;
  y[0] = 1.0f + 1e-3f; // rel L2 = 1e-3 / 10 = 1e-4
  EXPECT_TRUE(gate_output(GateKind::tolerance, 2e-4, y, ref).pass);
  EXPECT_FALSE(gate_output(GateKind::tolerance, 5e-5, y, ref).pass);
  y[5] = NAN;
  auto g = gate_output(GateKind::tolerance, 1.0, y, ref);
  EXPECT_FALSE(g.pass);
  EXPECT_TRUE(gate_json(g)["max_abs_err"].is_null());
}

// Every cell within torch's allclose(rel, floor): |y - ref| <= floor + rel |ref|, in f64 over the
// f32 cells, with 1e-12 of slack for the rounding of (|y - ref| - floor) / |ref| itself.
namespace {
bool allclose(const std::vector<float> &y, const std::vector<float> &ref, double rel,
              double floor) {
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = std::fabs(double(y[i]) - double(ref[i]));
    if (!(d <= (floor + rel * std::fabs(double(ref[i]))) * (1 + 1e-12)))
      return false;
  }
  return true;
}
} // namespace

// A cell of each kind: differences in ulps of powers of two, so each cell's need is exact.
// cell 0: ref 2, off by 2^-10 (its rel 2^-11 is the worst); cell 1: ref 0, off by 2^-20 (about
// 9.5e-7: no rel covers it below the floor 1e-6); cell 2: ref 0.5, off by 2^-14 (covered from the
// floor 1e-4 on); cell 3: ref 1024, one ulp (2^-13) over; cells 4, 5 exact (one of them 0).
// planted: dividing by |y| instead of |ref| (the max_rel_err and the allclose property fail);
// folding every floor, not only those the difference exceeds (the dropped max(0, .): cell 1 then
// makes the floor 1e-6 need inf) -- each seen failing.
TEST(Gate, RecordsTheLeastAllcloseRelPerFloor) {
  const std::vector<float> ref{2.f, 0.f, 0.5f, 1024.f, 0.f, -4.f};
  std::vector<float> y{2.f + 0x1p-10f, 0x1p-20f, 0.5f - 0x1p-14f, 1024.f + 0x1p-13f, 0.f, -4.f};
  auto g = gate_output(GateKind::tolerance, 1.0, y, ref);
  ASSERT_EQ(g.allclose_rel_needed.size(), std::size(kAllcloseFloors));
  for (size_t k = 0; k < std::size(kAllcloseFloors); ++k) {
    const double a = kAllcloseFloors[k], r = g.allclose_rel_needed[k];
    if (a < 0x1p-20) { // the zero-reference cell differs by more than the floor
      EXPECT_EQ(r, INFINITY) << "floor " << a;
      continue;
    }
    ASSERT_TRUE(std::isfinite(r)) << "floor " << a;
    EXPECT_TRUE(allclose(y, ref, r, a)) << "floor " << a << ": rel " << r << " is not enough";
    if (r > 0) // and the least: any smaller rel leaves a cell out
      EXPECT_FALSE(allclose(y, ref, r * (1 - 1e-6), a)) << "floor " << a;
  }
  EXPECT_DOUBLE_EQ(g.allclose_rel_needed[7], (0x1p-10 - 1e-6) / 2); // floor 1e-6: cell 0
  EXPECT_DOUBLE_EQ(g.allclose_rel_needed[11], (0x1p-10 - 1e-4) / 2);
  EXPECT_EQ(g.allclose_rel_needed[13], 0.0); // floor 1e-3 covers every difference
  EXPECT_EQ(g.max_rel_err, INFINITY);
  nlohmann::json j = gate_json(g);
  EXPECT_EQ(j["allclose_rel_needed"].size(), std::size(kAllcloseFloors));
  EXPECT_TRUE(j["allclose_rel_needed"]["0"].is_null());
  EXPECT_TRUE(j["allclose_rel_needed"]["3e-07"].is_null());
  EXPECT_DOUBLE_EQ(j["allclose_rel_needed"]["1e-06"].get<double>(), (0x1p-10 - 1e-6) / 2);
  EXPECT_EQ(j["allclose_rel_needed"]["1e-03"], 0.0);
  EXPECT_TRUE(j["max_rel_err"].is_null());
  EXPECT_TRUE(j["unavailable"]["max_rel_err"].is_string());
  EXPECT_TRUE(j["unavailable"]["allclose_rel_needed"].is_string());
  EXPECT_FALSE(j["unavailable"].contains("max_abs_err"));

  y[1] = 0.f; // no zero-reference cell differs: the worst relative error is cell 0's, 2^-11
  g = gate_output(GateKind::tolerance, 1.0, y, ref);
  EXPECT_EQ(g.max_rel_err, 0x1p-11);
  EXPECT_EQ(g.allclose_rel_needed[0], g.max_rel_err);
  j = gate_json(g);
  EXPECT_EQ(j["max_rel_err"], 0x1p-11);
  EXPECT_FALSE(j.contains("unavailable"));

  y[5] = NAN; // a non-finite output: nothing relative is recorded, and the gate fails
  g = gate_output(GateKind::tolerance, 1.0, y, ref);
  EXPECT_FALSE(g.pass);
  EXPECT_TRUE(g.allclose_rel_needed.empty());
  j = gate_json(g);
  EXPECT_FALSE(j.contains("allclose_rel_needed"));
  EXPECT_TRUE(j["max_rel_err"].is_null());
}

TEST(Gate, Crc32IsZlibs) {
  // zlib.crc32(b"123456789") == 0xCBF43926, the check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
}

// ---- stats ----

TEST(Stats, BestIsTheMinimumAndCvUsesNMinusOne) {
  Stats s = compute_stats({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(s.best, 1.0);
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.5); // stdev 1 (n-1) over mean 2
  EXPECT_DOUBLE_EQ(s.spread, 3.0);
  EXPECT_DOUBLE_EQ(compute_stats({1.0, 4.0}).median, 2.5);
}

// ---- npy ----

TEST(Npy, HeaderIsVersion1AlignedTo64) {
  std::string h = npy_header_f32({2, 3, 5});
  ASSERT_GE(h.size(), 10u);
  EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(h[6], 1);
  EXPECT_EQ(h[7], 0);
  EXPECT_EQ(h.size() % 64, 0u);
  size_t len = size_t((unsigned char)h[8]) | size_t((unsigned char)h[9]) << 8;
  EXPECT_EQ(len + 10, h.size());
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(h.find("'shape': (2, 3, 5), }"), std::string::npos) << h;
  EXPECT_NE(npy_header_f32({7}).find("'shape': (7,), }"), std::string::npos);
}

// ---- models ----

TEST(Models, StageShapesFollowTheConfigs) {
  ModelCatalog cat = load_models(data_dir() + "/models.json");
  const Model *m = cat.find(cat.default_model);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name, "bigvgan_v2_44khz_128band_512x");
  auto up0 = m->stage_shape(0, 96);
  EXPECT_EQ(up0.cin, 1536);
  EXPECT_EQ(up0.cout, 768);
  EXPECT_EQ(up0.k, 16);
  EXPECT_EQ(up0.stride, 8);
  EXPECT_EQ(up0.padding, 4);
  EXPECT_EQ(up0.l_in, 96);
  EXPECT_EQ(up0.l_out(), 768);
  EXPECT_NEAR(up0.flops(), 3.62e9, 0.01e9); // 2 x 1536 x 768 x 16 x 96
  auto up2 = m->stage_shape(2, 96);
  EXPECT_EQ(up2.cin, 384);
  EXPECT_EQ(up2.l_in, 96 * 8 * 4);
  EXPECT_EQ(up2.padding, 1);
  ASSERT_NE(cat.find("hifigan_v1"), nullptr);
  EXPECT_EQ(cat.find("hifigan_v1")->name, "bigvgan_base_22khz_80band");
  // An alias with its own mel count is a model of its own (its pre stage differs).
  EXPECT_EQ(cat.find("bigvgan_v2_22khz_80band_256x")->name, "bigvgan_v2_22khz_80band_256x");
  EXPECT_EQ(cat.find("bigvgan_v2_22khz_80band_256x")->num_mels, 80);
  EXPECT_EQ(cat.find("bigvgan_v2_22khz_80band_256x")->strides,
            cat.find("bigvgan_v2_44khz_128band_256x")->strides);
  EXPECT_EQ(cat.find("nope"), nullptr);
}

TEST(Devices, H200FloorsMatchFacts) {
  DeviceCatalog cat = load_devices(data_dir() + "/devices.json");
  auto d = cat.find("NVIDIA H200");
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->fp32_fma, 60.8e12);
  EXPECT_DOUBLE_EQ(d->fp64_fma, 31.7e12);
  EXPECT_DOUBLE_EQ(d->fp64_nofma, d->fp64_fma / 2);
  EXPECT_DOUBLE_EQ(d->memory, 4.3e12);
  EXPECT_FALSE(cat.find("NVIDIA A100-SXM4-80GB").has_value());
  // Every number of the entry by its key, for the counter profiles' {"device": key} inputs.
  EXPECT_DOUBLE_EQ(d->rates.at("fp64_dmma_flops"), d->fp64_dmma);
  EXPECT_DOUBLE_EQ(d->rates.at("fp32_fma_flops"), d->fp32_fma);
  EXPECT_EQ(d->rates.count("match"), 0u);
}

TEST(DataDir, EnvOverrideWinsAndAWrongOneIsAnError) {
  fs::path d = fresh_dir("data");
  fs::copy_file(data_dir() + "/models.json", d / "models.json");
  setenv("CONVBENCH_DATA_DIR", d.c_str(), 1);
  EXPECT_EQ(data_dir(), d.string());
  setenv("CONVBENCH_DATA_DIR", "/nonexistent-convbench-data", 1);
  EXPECT_THROW(data_dir(), DataError);
  unsetenv("CONVBENCH_DATA_DIR");
  fs::remove_all(d);
}

// ---- registry ----

TEST(Registry, HostArmsRegisteredReferenceFirst) {
  auto arms = registered_arms();
  ASSERT_GE(arms.size(), 2u);
  EXPECT_EQ(arms[0]->name(), "cpu-f64");
  EXPECT_EQ(reference_arm().name(), "cpu-f64");
  ASSERT_NE(find_arm("cpu-f32"), nullptr);
  EXPECT_EQ(find_arm("cpu-f32")->gate(), GateKind::tolerance);
  EXPECT_EQ(find_arm("cpu-f32")->stagings(), std::vector<std::string>{"host"});
#if CONVBENCH_HAVE_CUDA
  ASSERT_NE(find_arm("cuda-f64"), nullptr);
  EXPECT_EQ(find_arm("cuda-f64")->gate(), GateKind::bitwise);
  EXPECT_EQ(find_arm("cuda-f64")->stagings(), (std::vector<std::string>{"per-call", "resident"}));
#endif
}

// Each arm states what it computes with; the record carries it. One reference, and it is the
// reference arm; the cuDNN arms are the peer; every arm names its math and (built-ins) precision.
TEST(Registry, EveryArmStatesItsFacts) {
  int references = 0, checked = 0;
  for (const Arm *a : registered_arms()) {
    const ArmFacts f = a->facts();
    ++checked;
    EXPECT_TRUE(f.precision.has_value()) << a->name();
    EXPECT_FALSE(f.math.empty()) << a->name();
    EXPECT_EQ(f.role == ArmRole::reference, a->gate() == GateKind::reference) << a->name();
    EXPECT_EQ(f.role == ArmRole::peer, a->name().rfind("cudnn-", 0) == 0) << a->name();
    EXPECT_EQ(f.role == ArmRole::ceiling, checks_itself(a->gate())) << a->name();
    references += f.role == ArmRole::reference;
  }
  EXPECT_GE(checked, 2);
  EXPECT_EQ(references, 1);
  const auto facts = [](const char *arm) {
    const ArmFacts f = find_arm(arm)->facts();
    return to_string(*f.precision) + " " + f.math + " " + to_string(f.role);
  };
  EXPECT_EQ(facts("cpu-f64"), "f64 host reference");
  EXPECT_EQ(facts("cpu-f32"), "f32 host candidate");
  EXPECT_EQ(facts("cpu-f32@generic"), "f32 host candidate"); // hidden: cpu-f32's facts
  EXPECT_EQ(to_string(twin_arm(*find_arm("cpu-f64"), 2)->facts().role), "reference");
#if CONVBENCH_HAVE_CUDA
  EXPECT_EQ(facts("cuda-f64"), "f64 simt candidate");
  EXPECT_EQ(facts("cuda-f64-fma"), "f64 simt-fma candidate");
  EXPECT_EQ(facts("cuda-f32"), "f32 simt-fma candidate");
  EXPECT_EQ(facts("cuda-causal-tiled-bf16"), "bf16 simt candidate");
#endif
#if CONVBENCH_HAVE_CUDNN
  EXPECT_EQ(facts("cudnn-tf32"), "tf32 cudnn peer");
#endif
#if CONVBENCH_HAVE_CUBLAS
  EXPECT_EQ(facts("cublas-dgemm"), "f64 cublas ceiling");
  EXPECT_EQ(facts("cublas-bf16"), "bf16 cublas ceiling");
#endif
}

// ---- CLI (the parser; exit codes and stderr are tested end to end in e2e.py) ----

TEST(Cli, ParsesEveryFlagBothSpellings) {
  const char *argv[] = {"bench_conv",      "--stage",
                        "up0,chain",       "--model=hifigan_v1",
                        "--frames",        "96,384",
                        "--arms",          "cpu-f64",
                        "--staging",       "resident",
                        "--reps",          "5",
                        "--seed",          "18446744073709551615",
                        "--threads",       "3",
                        "--min-time",      "0.2",
                        "--out",           "x.json",
                        "--dump",          "d",
                        "--lease-wait",    "2.5",
                        "--profile",       "memory",
                        "--device-timing", "launched"};
  Options o = parse_cli(int(sizeof argv / sizeof *argv), argv);
  EXPECT_EQ(o.stages, (std::vector<std::string>{"up0", "chain"}));
  EXPECT_EQ(o.model, "hifigan_v1");
  EXPECT_EQ(o.frames, (std::vector<int64_t>{96, 384}));
  EXPECT_EQ(o.staging, "resident");
  EXPECT_EQ(o.reps, 5);
  EXPECT_EQ(o.seed, 18446744073709551615ull);
  EXPECT_EQ(o.threads, 3);
  EXPECT_DOUBLE_EQ(o.min_time, 0.2);
  EXPECT_DOUBLE_EQ(o.lease_wait, 2.5);
  EXPECT_EQ(o.profile.value_or(""), "memory");
  EXPECT_EQ(o.device_timing, "launched");
  EXPECT_EQ(Options{}.device_timing, "queued");
}

// --plugin is repeatable and keeps its order (the plugin loader reads Options::plugins); every
// other option given twice is refused. Planted: skipping --plugin in the given-twice exemption
// made the first case throw "--plugin given twice".
TEST(Cli, PluginIsRepeatableInOrderOthersAreNot) {
  const char *argv[] = {"bench_conv", "--plugin", "liba.so", "--plugin=libb.so", "--reps", "2"};
  Options o = parse_cli(int(sizeof argv / sizeof *argv), argv);
  EXPECT_EQ(o.plugins, (std::vector<std::string>{"liba.so", "libb.so"}));
  EXPECT_TRUE(Options{}.plugins.empty());
  const char *twice[] = {"bench_conv", "--seed", "1", "--seed", "2"};
  EXPECT_THROW(parse_cli(5, twice), UsageError);
  const char *flag_as_value[] = {"bench_conv", "--plugin", "--reps", "2"};
  EXPECT_THROW(parse_cli(4, flag_as_value), UsageError);
}

// The stopping and placement flags: values parsed, defaults kept, exclusions refused. Planted:
// parse_percent accepting 100 (a target no interval can miss) fails the last throw.
TEST(Cli, StoppingPlacementAndResumeFlags) {
  const char *argv[] = {"bench_conv", "--target-ci", "0.25", "--max-time", "12.5", "--max-rounds",
                        "40",         "--cpus",      "0-1",  "--reps",     "4"};
  Options o = parse_cli(int(sizeof argv / sizeof *argv), argv);
  EXPECT_DOUBLE_EQ(o.target_ci_percent.value_or(-1), 0.25);
  EXPECT_DOUBLE_EQ(o.max_time, 12.5);
  EXPECT_EQ(o.max_rounds, 40);
  EXPECT_EQ(o.cpus, "0-1");
  EXPECT_FALSE(o.no_pin);
  EXPECT_FALSE(Options{}.target_ci_percent.has_value()) << "default: the per-kind targets";
  const char *fixed[] = {"bench_conv", "--target-ci", "0"};
  EXPECT_DOUBLE_EQ(parse_cli(3, fixed).target_ci_percent.value_or(-1), 0.0);
  const char *resume[] = {"bench_conv", "--resume", "r.json.journal", "--out", "x.json"};
  EXPECT_EQ(parse_cli(5, resume).resume, "r.json.journal");
  const char *pin_both[] = {"bench_conv", "--cpus", "0", "--no-pin"};
  EXPECT_THROW(parse_cli(4, pin_both), UsageError);
  const char *resume_more[] = {"bench_conv", "--resume", "j", "--reps", "3"};
  EXPECT_THROW(parse_cli(5, resume_more), UsageError);
  const char *rounds_below[] = {"bench_conv", "--reps", "5", "--max-rounds", "4"};
  EXPECT_THROW(parse_cli(5, rounds_below), UsageError);
  const char *hundred[] = {"bench_conv", "--target-ci", "100"};
  EXPECT_THROW(parse_cli(3, hundred), UsageError);
}

// ---- the NVML shim (lease/nvml_gpu) and the GPU probe over it ----

// Clock event reasons by bit, an unknown remainder named rather than dropped. Planted: leaving
// out the remainder fails the third name.
TEST(Nvml, ClockEventReasonBitsAreNamed) {
  using convbench::lease::clock_event_reason_names;
  EXPECT_EQ(clock_event_reason_names(0x4 | 0x40 | 0x800),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown", "other_0x800"}));
  EXPECT_TRUE(clock_event_reason_names(0).empty());
}

// Without a driver (CI) every reading is missing and says why; with one (the GPU machine) the
// violation counters are read for every policy or named as unavailable.
TEST(Nvml, EveryReadingIsThereOrSaysWhyNot) {
  GpuProbe probe("");
  GpuSnapshot s = probe.snapshot(true);
  auto accounted = [&](const char *field, bool present) {
    EXPECT_TRUE(present || s.unavailable.count(field)) << field << " missing without a reason";
  };
  accounted("sm_clock_mhz", s.sm_clock_mhz.has_value());
  accounted("temperature_c", s.temperature_c.has_value());
  accounted("power_w", s.power_w.has_value());
  accounted("throttle_reasons", s.throttle_reasons.has_value());
  accounted("processes", s.processes.has_value());
  if (!probe.ok()) {
    EXPECT_TRUE(s.violation_ns.empty());
    EXPECT_TRUE(s.unavailable.count("violation_ns"));
    return;
  }
  for (const auto &p : convbench::lease::kViolationPolicies)
    EXPECT_TRUE(s.violation_ns.count(p.name) ||
                s.unavailable.count(std::string("violation_ns.") + p.name))
        << p.name;
}

// ---- the queue hold of --device-timing queued (GPU machine; skipped elsewhere) ----

#if CONVBENCH_HAVE_CUDA
namespace {
void sleep_ms(int ms) { usleep(useconds_t(ms) * 1000); }
} // namespace

// The events around a 30 ms host pause: without a hold they time the pause (the GPU records the
// start event at once); behind a hold both events are queued when the GPU reaches them, so they
// time ~nothing. The first half is the control: a hold that did not hold (its kernel returning
// at once) gives the control's >= 29 ms and fails the second half.
TEST(QueueHold, EventsBehindAHoldTimeTheGpuNotTheHost) {
  std::string why;
  if (!convbench::cuda::device_available(&why))
    GTEST_SKIP() << "no CUDA device here (" << why << "): the queue hold runs on the GPU machine";
  device::EventTimer timer;
  timer.start(nullptr);
  sleep_ms(30);
  timer.stop(nullptr);
  EXPECT_GE(timer.seconds(), 0.029) << "control: events on an idle stream time the host's pause";
  device::QueueHold hold(5.0);
  for (int i = 0; i < 3; ++i) { // reusable: each hold starts from a cleared flag
    hold.hold(nullptr);
    timer.start(nullptr);
    sleep_ms(30);
    timer.stop(nullptr);
    hold.release();
    EXPECT_LT(timer.seconds(), 0.005) << "round " << i;
    EXPECT_FALSE(hold.timed_out()) << "round " << i;
  }
}

// A call that waits for the GPU while the queue is held would wait forever: the hold gives up
// after its timeout, and says so.
TEST(QueueHold, GivesUpAfterItsTimeoutAndSaysSo) {
  std::string why;
  if (!convbench::cuda::device_available(&why))
    GTEST_SKIP() << "no CUDA device here (" << why << "): the queue hold runs on the GPU machine";
  device::QueueHold hold(0.05);
  device::EventTimer timer;
  hold.hold(nullptr);
  timer.start(nullptr);
  timer.stop(nullptr);
  (void)timer.seconds(); // waits: nobody releases the hold
  EXPECT_TRUE(hold.timed_out());
  hold.hold(nullptr);
  hold.release();
  timer.start(nullptr);
  timer.stop(nullptr);
  (void)timer.seconds();
  EXPECT_FALSE(hold.timed_out()) << "a released hold is not a timeout";
}

// ---- the copy and launch ceilings' own checks (GPU machine; skipped elsewhere) ----

namespace {
// A causal case of 2 x 64 x 1000 with a state (its least bytes need not be a multiple of 32: the
// copy's halves are rounded).
Problem ceiling_case() {
  Problem p;
  p.stage = "causal.c64.l1000.b2.state";
  p.frames = 1000;
  convbench::CausalConvShape s;
  s.batch = 2;
  s.channels = 64;
  s.length = 1000;
  s.initial_state = true;
  p.causal = s;
  p.seed = 11;
  return p;
}
#define SKIP_WITHOUT_CEILING_GPU()                                                                 \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!convbench::cuda::device_available(&why))                                                  \
      GTEST_SKIP() << "no usable GPU, copy and launch ceilings not run: " << why;                  \
  } while (0)
} // namespace

// The copy moves the case's least bytes (half each way, rounded up to 16) and its gate, the one
// the bench runs before timing, passes; a copy 16 bytes short leaves the poisoned tail and fails.
// Teeth: the short copy is the planted fault; to be seen failing on the GPU machine, the copy's
// check comparing only the first bytes - 16 (the short copy then passes).
TEST(CeilingGate, TheCopyPassesAndACopyShortBy16BytesFails) {
  SKIP_WITHOUT_CEILING_GPU();
  const Problem p = ceiling_case();
  const size_t n = convbench::ceilings::copy_bytes(p.min_bytes());
  EXPECT_EQ(n % 16, 0u);
  EXPECT_GE(double(n), p.min_bytes() / 2);
  EXPECT_LT(double(n), p.min_bytes() / 2 + 16);
  const Arm *copy = find_arm("cuda-copy");
  ASSERT_NE(copy, nullptr);
  ArmContext ctx;
  auto good = copy->prepare(p, "resident", ctx);
  const GateResult g = good->own_check();
  EXPECT_TRUE(g.pass);
  EXPECT_EQ(g.kind, GateKind::self);
  EXPECT_EQ(g.cells, int64_t(n));
  EXPECT_EQ(g.mismatches, 0);
  good->call(); // timed as the rounds time it: enqueued, then synchronised
  good->sync();
  CopyPrepared short_copy(p, n, p.seed | 1, convbench::ceilings::Fault::short_copy);
  const GateResult f = short_copy.own_check();
  EXPECT_FALSE(f.pass);
  EXPECT_EQ(f.mismatches, 16); // the unwritten tail, poisoned with bytes the source never holds
}

// The launch stores its sequence number and its gate passes, again after more launches; a
// launch that is counted but never enqueued leaves the poisoned word and fails. Teeth: the
// skipped launch is the planted fault; to be seen failing on the GPU machine, EmptyLaunch::check
// not reading the word (mismatches always 0: the skipped launch passes).
TEST(CeilingGate, TheLaunchPassesAndASkippedLaunchFails) {
  SKIP_WITHOUT_CEILING_GPU();
  const Problem p = ceiling_case();
  const Arm *launch = find_arm("cuda-launch");
  ASSERT_NE(launch, nullptr);
  ArmContext ctx;
  auto good = launch->prepare(p, "resident", ctx);
  EXPECT_TRUE(good->own_check().pass);
  for (int i = 0; i < 5; ++i)
    good->call();
  const GateResult g = good->own_check(); // the 7th launch's number
  EXPECT_TRUE(g.pass);
  EXPECT_EQ(g.cells, 1);
  LaunchPrepared skipped(p, convbench::ceilings::Fault::skipped_launch);
  const GateResult f = skipped.own_check();
  EXPECT_FALSE(f.pass);
  EXPECT_EQ(f.mismatches, 1);
}
#endif

// ---- the run's own A/A twins (--twins) ----

namespace {
std::vector<const Case *> twin_cases(const Plan &p) {
  std::vector<const Case *> out;
  for (const auto &c : p.cases)
    if (!c.twin_of.empty())
      out.push_back(&c);
  return out;
}
Plan twin_plan(const std::string &mode, std::vector<std::string> arms) {
  static const fs::path dir = fresh_dir("twins");
  Options o;
  o.stages = {"up0", "up2"};
  o.arms = std::move(arms);
  o.twins = mode;
  o.no_counters = true;
  o.out = (dir / ("r-" + mode + ".json")).string();
  return make_plan(o, {"bench_conv"}, "2026-12-04T00:00:00Z");
}
} // namespace

// Planted, seen failing: twin_cost without the FLOPs (cpu-f64 chosen, on up0).
TEST(Twins, KindsAddsOneTwinPerKindOnItsCheapestCase) {
  const Plan p = twin_plan("kinds", {"cpu-f64", "cpu-f32"});
  const auto twins = twin_cases(p);
  ASSERT_EQ(twins.size(), 1u);
  EXPECT_EQ(twins[0]->arm->name(), "cpu-f32#2");
  EXPECT_EQ(twins[0]->id, "up2/96/cpu-f32#2/host");
  EXPECT_EQ(twins[0]->twin_of, "up2/96/cpu-f32/host");
  EXPECT_EQ(twins[0]->problem->stage, "up2");
}

TEST(Twins, AllTwinsEveryCaseAndNoneTwinsNothing) {
  const Plan all = twin_plan("all", {"cpu-f64", "cpu-f32"});
  std::set<std::string> ids;
  for (const auto &c : all.cases)
    ids.insert(c.id);
  const auto twins = twin_cases(all);
  EXPECT_EQ(twins.size(), 4u);
  for (const Case *t : twins)
    EXPECT_TRUE(ids.count(t->twin_of)) << t->id << " repeats " << t->twin_of;
  EXPECT_TRUE(twin_cases(twin_plan("none", {"cpu-f64", "cpu-f32"})).empty());
}

TEST(Twins, AnArmListedTwiceIsTheKindsTwin) {
  const Plan p = twin_plan("kinds", {"cpu-f64", "cpu-f32", "cpu-f32"});
  const auto twins = twin_cases(p);
  ASSERT_EQ(twins.size(), 2u); // the user's twin on both stages, none added
  for (const Case *t : twins)
    EXPECT_EQ(t->arm->name(), "cpu-f32#2");
  EXPECT_EQ(twins[0]->twin_of, "up0/96/cpu-f32/host");
}

TEST(Twins, TheFlagTakesItsThreeModes) {
  const char *ok[] = {"bench_conv", "--twins", "all"};
  EXPECT_EQ(parse_cli(3, ok).twins, "all");
  const char *def[] = {"bench_conv"};
  EXPECT_EQ(parse_cli(1, def).twins, "kinds");
  const char *bad[] = {"bench_conv", "--twins", "some"};
  EXPECT_THROW(parse_cli(3, bad), UsageError);
}
