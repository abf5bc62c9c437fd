#include "dump.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "npy.hpp"
#include "plan.hpp"
#include "record.hpp"

namespace convbench::bench {

using nlohmann::json;

std::string dump_problem(const Plan &plan, const Problem &p, const std::vector<float> &reference,
                         const std::string &run_id) {
  const std::string dir = plan.opt.dump + "/" + p.stage + "-" + std::to_string(p.frames);
  std::filesystem::create_directories(dir);
  const auto &s0 = p.shapes[0];
  write_npy_f32(dir + "/input.npy", {s0.batch, s0.cin, s0.l_in}, p.input.data(), p.input.size());
  json meta = {{"stage", p.stage},
               {"frames", p.frames},
               {"model", plan.model.name},
               {"seed", p.seed},
               {"run_seed", plan.opt.seed},
               {"run_id", run_id},
               {"shape", problem_shape_json(p)},
               {"files", json::object()}};
  meta["files"]["input"] = "input.npy";
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    const auto &s = p.shapes[i];
    std::string sfx = p.shapes.size() > 1 ? "_" + p.stage_names[i] : "";
    std::vector<int64_t> wshape = s.op == ConvOp::transposed
                                      ? std::vector<int64_t>{s.cin, s.cout, s.k}
                                      : std::vector<int64_t>{s.cout, s.cin, s.k};
    write_npy_f32(dir + "/weight" + sfx + ".npy", wshape, p.weights[i].data(), p.weights[i].size());
    write_npy_f32(dir + "/bias" + sfx + ".npy", {s.cout}, p.biases[i].data(), p.biases[i].size());
    meta["files"]["weight" + sfx] = "weight" + sfx + ".npy";
    meta["files"]["bias" + sfx] = "bias" + sfx + ".npy";
  }
  meta["files"]["reference"] = "reference.npy";
  const auto &sl = p.shapes.back();
  write_npy_f32(dir + "/reference.npy", {sl.batch, sl.cout, sl.l_out()}, reference.data(),
                reference.size());
  for (auto &c : plan.cases)
    if (c.problem == &p)
      meta["files"]["output " + c.arm->name() + "/" + c.staging] =
          "out_" + c.arm->name() + "_" + c.staging + ".npy";
  std::ofstream(dir + "/problem.json") << meta.dump(2) << "\n";
  return dir;
}

void dump_output(const std::string &dir, const Problem &p, const std::string &arm,
                 const std::string &staging, const std::vector<float> &y) {
  const auto &sl = p.shapes.back();
  write_npy_f32(dir + "/out_" + arm + "_" + staging + ".npy", {sl.batch, sl.cout, sl.l_out()},
                y.data(), y.size());
}

} // namespace convbench::bench
