// tensor_probe: which tensor-pipe metrics the range profiler accepts on this chip, what they
// count, and the numbers ncu compares against.
//   tensor_probe metrics [--profile P]   each candidate metric offered alone: accepted (or CUPTI's
//                                        error) and its passes; then profile P's passes (default
//                                        fp-throughput), the figure its description states
//   tensor_probe capture                 every accepted candidate captured on kernels whose MMA
//                                        count is known (tensor_loops.hpp and the conv kernels);
//                                        per metric: value, per PTX MMA, per multiply-add; then,
//                                        per precision, the metrics that count its work exactly
//   tensor_probe launch KERNEL           one call of KERNEL and nothing else (run it under ncu)
//   tensor_probe capture-one KERNEL --metrics a,b,...   the same call captured by CUPTI (JSON)
// KERNEL: a loop of tensor_loops.hpp (dmma_m16n8k16, wgmma_tf32_m64n128k8, ...), or dmma-conv,
// wgmma-conv, f32x3-conv: cuda-f64-dmma's, cuda-tf32's and cuda-f32x3's kernels on stage up0 of
// the default model at 96 frames (bench/data/models.json). One JSON object per line on stdout.
// Exit 0, 1 when the device or the profiler refuses, 2 on bad usage.
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include "convbench/profiles/counters.hpp"
#include "convbench/tc_conv.hpp"
#include "convbench/tensor_loops.hpp"
#include "model_stages.hpp"

namespace cp = convbench::profiles;
namespace loops = convbench::tc::loops;
using nlohmann::json;

namespace {

// The candidates: the tensor-pipe names of `ncu --query-metrics --chip gh100` (known_metrics.txt)
// with the rollups a profile would use, and the sustained peaks of the main ones.
const std::vector<std::string> kCandidates = {
    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "smsp__inst_executed_pipe_tensor_op_dmma.sum",
    "smsp__inst_executed_pipe_tensor_op_hmma.sum",
    "smsp__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_cycles_active.sum",
    "sm__pipe_tensor_op_dmma_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.sum",
    "sm__pipe_tensor_op_gmma_cycles_active.sum",
    "smsp__pipe_tensor_op_dmma_cycles_active.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ops_path_tensor_src_fp64.sum",
    "sm__ops_path_tensor_src_fp64_dst_fp64.sum",
    "sm__ops_path_tensor_op_dmma_src_fp64.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_op_hgmma_src_fp16.sum",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum",
    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off.sum",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum.peak_sustained",
    "sm__ops_path_tensor_src_fp64.sum.peak_sustained",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum.peak_sustained",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained"};

// One kernel with a known tensor-core workload: its precision, PTX MMA instructions (per warp
// for mma.sync, per warpgroup for wgmma) and multiply-adds per call, and the call itself.
struct Work {
  std::string name, precision;
  double mma = 0, macs = 0;
  std::function<void()> call; // enqueues one call and waits for it
  std::shared_ptr<void> owner;
};

std::vector<float> ramp(size_t n, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = step * float(int(i % 97) - 48);
  return v;
}

Work conv_work(const std::string &name) {
  const convbench::ConvShape s =
      convbench::testing::model_stages(convbench::testing::default_model(), 96).at(0).shape;
  const auto prec = name == "dmma-conv"    ? convbench::tc::Precision::f64
                    : name == "wgmma-conv" ? convbench::tc::Precision::tf32
                                           : convbench::tc::Precision::f32x3;
  const auto w = ramp(size_t(s.weight_elems()), 1e-3f), b = ramp(size_t(s.cout), 1e-2f),
             x = ramp(size_t(s.input_elems()), 1e-2f);
  auto conv = std::make_shared<convbench::tc::ResidentTc>(s, prec, w.data(), b.data());
  conv->upload_input(x.data());
  cudaStreamSynchronize(static_cast<cudaStream_t>(conv->stream()));
  Work k;
  k.name = name + " (" + convbench::tc::tc_kernel_name(s, prec) + ")";
  k.precision = prec == convbench::tc::Precision::f64 ? "fp64" : "tf32";
  k.macs = double(convbench::tc::tc_issued_macs(s, prec));
  // PTX MMAs: m16n8k16 (DMMA), m64nNk8 with N from the kernel's name (wgmma).
  std::smatch m;
  if (prec == convbench::tc::Precision::f64 && k.name.find("m16n8k16") != std::string::npos)
    k.mma = k.macs / (16 * 8 * 16);
  else if (std::regex_search(k.name, m, std::regex("m64n([0-9]+)k8")))
    k.mma = k.macs / (64.0 * std::stod(m[1]) * 8);
  k.call = [conv] {
    conv->launch();
    cudaStreamSynchronize(static_cast<cudaStream_t>(conv->stream()));
  };
  k.owner = conv;
  return k;
}

Work loop_work(loops::Kind kind, int sms) {
  const loops::Info i = loops::info(kind);
  const int units = i.warpgroup ? 2 : 4, iters = 16;
  const loops::Issued n = loops::issued(kind, sms, units, iters);
  Work k;
  k.name = i.name;
  k.precision = i.precision;
  k.mma = double(n.mma);
  k.macs = double(n.macs);
  k.call = [kind, sms, units, iters] {
    loops::launch(kind, sms, units, iters);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw std::runtime_error(std::string("tensor_probe: ") + cudaGetErrorString(e));
  };
  return k;
}

Work work_named(const std::string &name) {
  if (name == "dmma-conv" || name == "wgmma-conv" || name == "f32x3-conv")
    return conv_work(name);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (loops::Kind k : loops::kinds())
    if (loops::info(k).name == name)
      return loop_work(k, sms);
  throw CLI::ValidationError("KERNEL", "unknown kernel '" + name + "'");
}

cp::Profile profile_of(const std::vector<std::string> &metrics) {
  cp::Profile p;
  p.name = "tensor-probe";
  p.description = "the probe's candidates";
  p.metrics = metrics;
  p.derived = json::array();
  return p;
}

std::vector<std::string> accepted_of(const json &probed) {
  std::vector<std::string> out;
  for (const json &m : probed.at("metrics"))
    if (m.at("accepted").get<bool>())
      out.push_back(m.at("name"));
  return out;
}

int cmd_metrics(const std::string &profile) {
  const json probed = cp::probe_metrics(kCandidates, 0);
  if (probed.at("status") != "probed") {
    std::cout << probed.dump() << "\n";
    return 1;
  }
  for (const json &m : probed.at("metrics"))
    std::cout << json{{"metric", m}}.dump() << "\n";
  std::cout << json{{"candidates_accepted", accepted_of(probed).size()},
                    {"candidates", kCandidates.size()},
                    {"accepted_passes", probed.at("accepted_passes")},
                    {"chip", probed.at("chip")}}
                   .dump()
            << "\n";
  const cp::Profile p = cp::load_profile(profile, "");
  const json pp = cp::probe_metrics(p.metrics, 0);
  json refused = json::object();
  for (const json &m : pp.at("metrics"))
    if (!m.at("accepted").get<bool>())
      refused[m.at("name").get<std::string>()] = m.at("message");
  std::cout << json{{"profile", p.name},
                    {"metrics", p.metrics.size()},
                    {"passes_of_accepted", pp.value("accepted_passes", json())},
                    {"refused", refused}}
                   .dump()
            << "\n";
  return 0;
}

// Whether every value of `xs` is the same finite non-zero number (to 1e-9).
bool constant(const std::vector<double> &xs) {
  if (xs.empty() || !(xs[0] != 0) || !std::isfinite(xs[0]))
    return false;
  for (double x : xs)
    if (std::fabs(x - xs[0]) > 1e-9 * std::fabs(xs[0]))
      return false;
  return true;
}

// Per precision: the metrics whose count per multiply-add (an exact unit of work) or per PTX
// MMA of the loops (an instruction count) is one constant over its kernels, and zero on the
// other precisions' kernels.
void print_exact_metrics(const std::vector<std::string> &metrics, const std::vector<Work> &works,
                         const std::vector<std::vector<double>> &values) {
  for (const char *prec : {"fp64", "tf32", "bf16", "fp16"}) {
    for (size_t i = 0; i < metrics.size(); ++i) {
      std::vector<double> per_mac, per_mma;
      bool others_zero = true;
      for (size_t w = 0; w < works.size(); ++w) {
        if (works[w].precision == prec) {
          per_mac.push_back(values[i][w] / works[w].macs);
          if (works[w].mma > 0)
            per_mma.push_back(values[i][w] / works[w].mma);
        } else if (values[i][w] != 0) {
          others_zero = false;
        }
      }
      if (!others_zero)
        continue;
      if (constant(per_mac))
        std::cout << json{{"exact_for", prec},
                          {"metric", metrics[i]},
                          {"per_mac", per_mac[0]},
                          {"flop_scale", 2.0 / per_mac[0]}}
                         .dump()
                  << "\n";
      else if (constant(per_mma))
        std::cout << json{{"instructions_for", prec},
                          {"metric", metrics[i]},
                          {"per_ptx_mma", per_mma[0]}}
                         .dump()
                  << "\n";
    }
  }
}

int cmd_capture() {
  if (const std::string why = loops::device_reason(); !why.empty()) {
    std::cerr << "tensor_probe: " << why << "\n";
    return 1;
  }
  const json probed = cp::probe_metrics(kCandidates, 0);
  if (probed.at("status") != "probed") {
    std::cout << probed.dump() << "\n";
    return 1;
  }
  const std::vector<std::string> metrics = accepted_of(probed);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  std::vector<Work> works;
  for (loops::Kind k : loops::kinds())
    works.push_back(loop_work(k, sms));
  for (const char *c : {"dmma-conv", "wgmma-conv", "f32x3-conv"})
    works.push_back(conv_work(c));
  auto session = cp::CounterSession::open(profile_of(metrics), 0);
  if (session->describe().at("status") != "ready") {
    std::cout << session->describe().dump() << "\n";
    return 1;
  }
  std::cout << json{{"session", session->describe()}}.dump() << "\n";
  // values[metric][work]
  std::vector<std::vector<double>> values(metrics.size(), std::vector<double>(works.size(), NAN));
  for (size_t w = 0; w < works.size(); ++w) {
    works[w].call(); // warm: module load stays out of the range
    const json b = session->capture(works[w].call, 1.0, 1.0);
    json row = {{"kernel", works[w].name},
                {"precision", works[w].precision},
                {"mma", works[w].mma},
                {"macs", works[w].macs},
                {"status", b.at("status")}};
    if (b.at("status") == "collected") {
      json per = json::object();
      for (size_t i = 0; i < metrics.size(); ++i) {
        const json &v = b.at("metrics").at(metrics[i]);
        if (!v.is_number())
          continue;
        values[i][w] = v.get<double>();
        per[metrics[i]] = {
            {"value", v},
            {"per_mma", works[w].mma > 0 ? json(v.get<double>() / works[w].mma) : json(nullptr)},
            {"per_mac", v.get<double>() / works[w].macs}};
      }
      row["metrics"] = per;
    } else {
      row["block"] = b;
    }
    std::cout << row.dump() << "\n";
  }
  print_exact_metrics(metrics, works, values);
  return 0;
}

int cmd_capture_one(const std::string &kernel, const std::string &metric_list) {
  std::vector<std::string> metrics;
  for (size_t a = 0; a <= metric_list.size();) {
    size_t b = metric_list.find(',', a);
    if (b == std::string::npos)
      b = metric_list.size();
    if (b > a)
      metrics.push_back(metric_list.substr(a, b - a));
    a = b + 1;
  }
  Work w = work_named(kernel);
  w.call();
  auto session = cp::CounterSession::open(profile_of(metrics), 0);
  const json b = session->capture(w.call, 1.0, 1.0);
  std::cout << json{{"kernel", w.name}, {"macs", w.macs}, {"mma", w.mma}, {"block", b}}.dump()
            << "\n";
  return b.at("status") == "collected" ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "What the tensor-pipe counters are on this chip: accepted metrics and passes, their "
      "counts on kernels with a known MMA count, and one capture for a comparison with ncu.",
      "tensor_probe"};
  app.require_subcommand(1);
  std::string profile = "fp-throughput", kernel, metric_list;
  auto *m = app.add_subcommand("metrics", "each candidate metric alone, then a profile's passes");
  m->add_option("--profile", profile, "the profile whose passes to state");
  auto *c = app.add_subcommand("capture", "every accepted candidate on the known kernels");
  auto *l = app.add_subcommand("launch", "one call of KERNEL, nothing else (for ncu)");
  l->add_option("kernel", kernel, "the kernel")->required();
  auto *o = app.add_subcommand("capture-one", "one call of KERNEL under CUPTI");
  o->add_option("kernel", kernel, "the kernel")->required();
  o->add_option("--metrics", metric_list, "comma-separated metric names")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::cerr << "tensor_probe: " << e.what() << "\n";
    return 2;
  }
  try {
    if (m->parsed())
      return cmd_metrics(profile);
    if (c->parsed())
      return cmd_capture();
    if (l->parsed()) {
      Work w = work_named(kernel);
      w.call();
      std::cout << json{{"kernel", w.name}, {"macs", w.macs}, {"mma", w.mma}}.dump() << "\n";
      return 0;
    }
    return cmd_capture_one(kernel, metric_list);
  } catch (const CLI::ValidationError &e) {
    std::cerr << "tensor_probe: " << e.what() << "\n";
    return 2;
  } catch (const std::exception &e) {
    std::cerr << "tensor_probe: " << e.what() << "\n";
    return 1;
  }
}
