#include "measurement/runner.hpp"

#include <exception>
#include <stdexcept>
#include <vector>

#include <benchmark/benchmark.h>

#if CONVBENCH_HAVE_CUDA
#include "measurement/device.hpp"
#endif

namespace convbench::bench {

namespace {
// Captures the final iteration run and prints nothing: the table and progress are ours.
class CaptureReporter final : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context &) override { return true; }
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const auto &r : runs)
      if (r.run_type == Run::RT_Iteration) {
        captured = true;
        iterations = int64_t(r.iterations);
        accumulated = r.real_accumulated_time;
      }
  }
  void Finalize() override {}
  bool captured = false;
  int64_t iterations = 0;
  double accumulated = 0;
};

void initialise_once() {
  static bool done = [] {
    // No command-line flags reach Google Benchmark: bench_conv owns the CLI.
    static char name[] = "bench_conv";
    static char *argv[] = {name, nullptr};
    int argc = 1;
    benchmark::Initialize(&argc, argv);
    return true;
  }();
  (void)done;
}
} // namespace

#if CONVBENCH_HAVE_CUDA
struct SampleRunner::Hold {
  device::QueueHold q;
};
#else
struct SampleRunner::Hold {};
#endif

SampleRunner::SampleRunner(double min_time, bool queued) : min_time_(min_time), queued_(queued) {
  initialise_once();
}
SampleRunner::~SampleRunner() = default;

SampleTiming SampleRunner::run(const std::string &name, PreparedArm &arm, bool device) {
  std::exception_ptr error;
  benchmark::ClearRegisteredBenchmarks();
  benchmark::internal::Benchmark *b = nullptr;
  if (!device) {
    b = benchmark::RegisterBenchmark(name.c_str(), [&](benchmark::State &st) {
      try {
        for (auto _ : st)
          arm.call();
      } catch (...) {
        error = std::current_exception();
        st.SkipWithError("arm failed");
      }
    });
    b->UseRealTime();
  } else {
#if CONVBENCH_HAVE_CUDA
    const bool held = queued_ && arm.enqueue_only();
    if (held && !hold_)
      hold_ = std::make_unique<Hold>();
    // `held` by value: the benchmark runs after this block has ended (RunSpecifiedBenchmarks
    // below), so a reference to it would dangle (read as garbage `true` in launched mode, it
    // dereferences the absent hold).
    b = benchmark::RegisterBenchmark(name.c_str(), [&, held](benchmark::State &st) {
      try {
        device::EventTimer timer;
        for (auto _ : st) {
          if (held)
            hold_->q.hold(arm.stream_begin());
          timer.start(arm.stream_begin());
          arm.call();
          timer.stop(arm.stream_end());
          if (held)
            hold_->q.release();
          const double s = timer.seconds();
          if (held && hold_->q.timed_out())
            throw std::runtime_error(
                name + ": the call waited for the GPU while its stream was held "
                       "(--device-timing queued); time it with --device-timing launched");
          st.SetIterationTime(s);
        }
      } catch (...) {
        if (held)
          hold_->q.release(); // never leave the stream spinning
        error = std::current_exception();
        st.SkipWithError("arm failed");
      }
    });
    b->UseManualTime();
#else
    throw std::logic_error("device arm in a build without CUDA");
#endif
  }
  b->MinTime(min_time_)->Unit(benchmark::kMicrosecond);
  CaptureReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::ClearRegisteredBenchmarks();
  if (error)
    std::rethrow_exception(error);
  if (!rep.captured || rep.iterations <= 0)
    throw std::runtime_error("Google Benchmark reported no run for " + name);
  SampleTiming t;
  t.iterations = rep.iterations;
  t.total_seconds = rep.accumulated;
  t.seconds = rep.accumulated / double(rep.iterations);
  return t;
}

} // namespace convbench::bench
