// cpu-f32 on each instruction set it is built for (cpu-f32@avx512, cpu-f32@avx2,
// cpu-f32@generic): the same addition order in a different tile, so the same gate as cpu-f32.
// Hidden: `--arms 'cpu-f32@*'` names every one this CPU runs; one it lacks is not available.
#include "arms/host_arm.hpp"

namespace convbench::bench {
namespace {

template <int I>
void conv_on(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
             ThreadPool &pool) {
  conv_cpu_f32_on(cpu_f32_isas()[I], s, x, w, b, y, pool);
}

template <int I> class CpuF32Isa final : public HostArm {
public:
  std::string name() const override { return std::string("cpu-f32@") + cpu_f32_isas()[I]; }
  bool hidden() const override { return true; }
  GateKind gate() const override { return find_arm("cpu-f32")->gate(); }
  double tolerance() const override { return find_arm("cpu-f32")->tolerance(); }
  ArmFacts facts() const override { return find_arm("cpu-f32")->facts(); }
  bool available(std::string *why_not) const override {
    if (cpu_f32_isa_supported(cpu_f32_isas()[I]))
      return true;
    if (why_not)
      *why_not = std::string("this CPU lacks ") + cpu_f32_isas()[I];
    return false;
  }
  HostConvFn function() const override { return &conv_on<I>; }
  nlohmann::json describe(const Problem &) const override {
    const std::string isa = cpu_f32_isas()[I];
    return {{"name", "cpu-f32 " + isa + " register-blocked polyphase GEMM"}, {"isa", isa}};
  }
};

} // namespace
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CpuF32Isa<0>)
CONVBENCH_REGISTER_ARM(convbench::bench::CpuF32Isa<1>)
CONVBENCH_REGISTER_ARM(convbench::bench::CpuF32Isa<2>)
