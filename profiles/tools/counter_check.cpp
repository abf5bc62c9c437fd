// counter_check: applies the analytic count checks to the counters blocks of a bench_conv result.
//   counter_check results/<run>.json
// The multiply-adds a case's kernel issues come from its "kernel": {"issued_macs"} block (the fast
// polyphase kernel also issues the taps that padding and tile remainders cut off, with x = 0),
// else from shape.valid_macs() (the simple kernel).
// cuda-f64 cases: DFMA == 0, DMUL == issued, DADD == issued + one bias add per output cell
// (transposed stages; see expected_f64_dadd below). cuda-f64-fma: DFMA == issued, DMUL == 0.
// cuda-f32 cases: no fp64 work.
// Tensor-core arms (cuda-f64-dmma: fp64; cuda-tf32, cuda-f32x3: tf32): the case's counters are
// derived again through the profile (the block's, from the profiles folder, or --profile), and
// the FLOP of the arm's tensor path must equal 2 x issued_macs exactly, the other tensor paths 0.
// Prints one line per checked case; exit 0 all pass, 1 a check failed, 2 bad input.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "convbench/profiles/counters.hpp"
#include "convbench/shape.hpp"
#include "convbench/shape_json.hpp"

namespace cp = convbench::profiles;
using nlohmann::json;

namespace {

// kernels/src/cuda/conv_kernels.cu (AccumF64): one __dadd_rn per non-zero-input tap; a transposed
// stage adds the bias last (one more per output cell), a forward one starts from it (no add).
// Inputs of bench_conv are seeded random values; a zero input would lower both counts equally.
double bias_adds(const convbench::ConvShape &s) {
  const double cells = double(s.batch) * double(s.cout) * double(s.l_out());
  return s.bias && s.op == convbench::ConvOp::transposed ? cells : 0.0;
}

double issued_macs(const json &c, const convbench::ConvShape &s) {
  const json k = c.value("kernel", json());
  if (k.is_object() && k.contains("issued_macs"))
    return k.at("issued_macs").get<double>();
  return double(s.valid_macs());
}

// cuda-f64-fma: every tap one DFMA, no DMUL, DADD only for the bias.
cp::CountCheck check_fp64_fma(const json &m, double issued, double dadd) {
  cp::CountCheck r;
  auto num = [&](const char *k) { return m.contains(k) ? m.at(k).get<double>() : -1.0; };
  auto expect = [&](const char *what, const char *k, double want) {
    if (num(k) != want) {
      r.ok = false;
      r.failures.push_back(std::string(what) + " " + std::to_string(num(k)) + " != expected " +
                           std::to_string(want));
    }
  };
  expect("DFMA", cp::metric::dfma, issued);
  expect("DMUL", cp::metric::dmul, 0.0);
  expect("DADD", cp::metric::dadd, dadd);
  return r;
}

} // namespace

// The tensor precision a tensor-core arm's kernels run in, "" for the other arms.
std::string tensor_precision(const std::string &arm) {
  if (arm == "cuda-f64-dmma")
    return "fp64";
  if (arm == "cuda-tf32" || arm == "cuda-f32x3")
    return "tf32";
  return "";
}

// Reads the result file at `path` into `run`; false, said on stderr, when it cannot.
bool read_result(const std::string &path, json &run) {
  try {
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot read");
    run = json::parse(in);
    return true;
  } catch (const std::exception &e) {
    std::cerr << "counter_check: " << path << ": " << e.what() << "\n";
    return false;
  }
}

int main(int argc, char **argv) {
  CLI::App app{
      "Checks the counters of a bench_conv result against the instruction counts its "
      "shapes imply (cuda-f64: no FMA, one DMUL + DADD per MAC; cuda-f64-fma: one DFMA "
      "per MAC; cuda-f32: no fp64; tensor-core arms: their tensor FLOP = 2 x issued MACs). Exit 0 "
      "all ok, 1 a count differs, 2 bad input.",
      "counter_check"};
  std::string path, profile_arg;
  app.add_option("result", path, "a bench_conv result file (.json)")->required();
  app.add_option("--profile", profile_arg,
                 "derive the tensor arms' counters through this profile (a name or a .json path) "
                 "instead of the one each counters block names");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::cerr << "counter_check: " << e.what() << " (usage: counter_check <result.json>)\n";
    return 2;
  }
  json run;
  if (!read_result(path, run))
    return 2;
  std::map<std::string, cp::Profile> profiles; // by the name a block gives, loaded once
  auto profile_for = [&](const json &counters) -> const cp::Profile & {
    const std::string name =
        profile_arg.empty() ? counters.value("profile", std::string("fp-throughput")) : profile_arg;
    auto it = profiles.find(name);
    if (it == profiles.end())
      it = profiles.emplace(name, cp::load_profile(name, "")).first;
    return it->second;
  };
  int checked = 0, failed = 0;
  try {
    for (const json &c : run.at("cases")) {
      const std::string arm = c.at("arm"), id = c.value("id", arm);
      const std::string tensor = tensor_precision(arm);
      if (arm != "cuda-f64" && arm != "cuda-f32" && arm != "cuda-f64-fma" && tensor.empty())
        continue;
      const json &counters = c.value("counters", json::object());
      if (counters.value("status", "") != "collected" || !c.at("shape").contains("op")) {
        std::printf("%-40s not checked: counters %s\n", id.c_str(),
                    counters.value("status", std::string("absent")).c_str());
        continue;
      }
      const convbench::ConvShape s = convbench::shape_from_json(c.at("shape"));
      const json &m = counters.at("metrics");
      if (!tensor.empty()) {
        const json k = c.value("kernel", json());
        if (!k.is_object() || !k.contains("issued_macs"))
          throw std::runtime_error(id + ": a tensor-core case without kernel.issued_macs");
        const cp::Profile &p = profile_for(counters);
        const json d = cp::derive(p, m, 1.0, s.flops(), {},
                                  counters.value("rejected_metrics", json::object()));
        const cp::CountCheck r =
            cp::check_tensor_work(p, d, tensor, k.at("issued_macs").get<double>());
        ++checked;
        failed += r.ok ? 0 : 1;
        std::printf("%-40s %s\n", id.c_str(), r.ok ? "ok" : ("FAIL: " + r.summary()).c_str());
        continue;
      }
      const double issued = issued_macs(c, s);
      const cp::CountCheck r = arm == "cuda-f64"
                                   ? cp::check_fp64_nofma(m, issued, issued + bias_adds(s), 0)
                               : arm == "cuda-f64-fma" ? check_fp64_fma(m, issued, bias_adds(s))
                                                       : cp::check_no_fp64(m);
      ++checked;
      failed += r.ok ? 0 : 1;
      std::printf("%-40s %s\n", id.c_str(), r.ok ? "ok" : ("FAIL: " + r.summary()).c_str());
    }
  } catch (const cp::ProfileError &e) {
    std::cerr << "counter_check: " << e.what() << "\n";
    return 2;
  } catch (const std::exception &e) {
    std::cerr << "counter_check: " << path << ": malformed case: " << e.what() << "\n";
    return 2;
  }
  std::printf("%d case(s) checked, %d failed\n", checked, failed);
  return failed ? 1 : 0;
}
