#include "plan/problem_dump.hpp"

#include <filesystem>
#include <set>

#include "core/atomic_write.hpp"
#include "core/npy.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace convbench::bench {

namespace {

std::string output_file(const std::string &arm_staging, const std::string &what) {
  std::string n = arm_staging;
  for (auto &ch : n)
    if (ch == '/')
      ch = '_';
  return "out_" + n + what + ".npy";
}

void write(const std::string &dir, const std::string &file, const std::vector<int64_t> &shape,
           const float *data, size_t n) {
  write_npy_f32(dir + "/" + file, shape, data, n);
}

// Per stage: weight and bias files, "_<stage>" when the names are unique (chain), else
// "_<index>_<stage>" (the generator repeats its AMP stages).
json dump_conv_params(const std::string &dir, const Problem &p, json &files) {
  const std::set<std::string> unique(p.stage_names.begin(), p.stage_names.end());
  const bool by_name = unique.size() == p.stage_names.size();
  json stage_files = json::array();
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    const auto &s = p.shapes[i];
    // Appended piecewise: "_" + std::string trips GCC 12's -Wrestrict (GCC bug 105329).
    std::string sfx;
    if (p.shapes.size() > 1) {
      sfx.append("_");
      if (!by_name)
        sfx.append(std::to_string(i)).append("_");
      sfx.append(p.stage_names[i]);
    }
    const std::vector<int64_t> wshape = s.op == ConvOp::transposed
                                            ? std::vector<int64_t>{s.cin, s.cout, s.k}
                                            : std::vector<int64_t>{s.cout, s.cin, s.k};
    write(dir, "weight" + sfx + ".npy", wshape, p.weights[i].data(), p.weights[i].size());
    files["weight" + sfx] = "weight" + sfx + ".npy";
    if (s.bias) { // a stage without bias (BigVGAN v2's post) has no bias file
      write(dir, "bias" + sfx + ".npy", {s.cout}, p.biases[i].data(), p.biases[i].size());
      files["bias" + sfx] = "bias" + sfx + ".npy";
    }
    stage_files.push_back({{"stage", p.stage_names[i]},
                           {"weight", "weight" + sfx + ".npy"},
                           {"bias", s.bias ? json("bias" + sfx + ".npy") : json(nullptr)}});
  }
  return stage_files;
}

void dump_causal_params(const std::string &dir, const Problem &p, json &meta) {
  const CausalConvShape &s = *p.causal;
  json &files = meta["files"];
  write(dir, "weight.npy", {s.channels, s.k}, p.weights[0].data(), p.weights[0].size());
  files["weight"] = "weight.npy";
  if (s.bias) {
    write(dir, "bias.npy", {s.channels}, p.biases[0].data(), p.biases[0].size());
    files["bias"] = "bias.npy";
  }
  if (s.initial_state) {
    write(dir, "initial_state.npy", {s.batch, s.channels, s.k - 1}, p.initial_state.data(),
          p.initial_state.size());
    files["initial_state"] = "initial_state.npy";
    json flags = json::array();
    for (uint8_t f : p.has_initial_state)
      flags.push_back(f != 0);
    meta["has_initial_state"] = flags;
  }
}

// y and the final state of a causal output (the gate's concatenation), or the last stage's.
void write_output(const std::string &dir, const Problem &p, const std::string &base,
                  const std::vector<float> &y) {
  if (p.causal) {
    const CausalConvShape &s = *p.causal;
    const size_t ny = size_t(s.output_elems());
    write(dir, base + ".npy", {s.batch, s.channels, s.length}, y.data(), ny);
    write(dir, base + "_final_state.npy", {s.batch, s.channels, s.k - 1}, y.data() + ny,
          size_t(s.state_elems()));
    return;
  }
  const auto &sl = p.shapes.back();
  write(dir, base + ".npy", {sl.batch, sl.cout, sl.l_out()}, y.data(), y.size());
}

} // namespace

std::string dump_dir(const std::string &root, const Problem &p) {
  return root + "/" + p.stage + "-" + std::to_string(p.frames);
}

void check_dump_target(const std::string &root, const Problem &p) {
  const fs::path dir = dump_dir(root, p);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || st.type() == fs::file_type::not_found)
    return;
  if (st.type() != fs::file_type::directory)
    throw WriteError("dump directory '" + dir.string() +
                     "' exists and is not a directory: move it away");
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    const fs::file_type t = e.symlink_status(ec).type();
    if (t != fs::file_type::regular)
      throw WriteError("dump file '" + e.path().string() +
                       "' exists and is not a regular file: give a --dump folder of your own");
  }
}

std::string dump_problem(const std::string &root, const Problem &p, const std::vector<float> &ref,
                         const std::vector<DumpedCase> &outputs, const json &run) {
  const std::string dir = dump_dir(root, p);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || fs::is_symlink(dir) || !fs::is_directory(dir))
    throw WriteError("cannot create the dump directory " + dir +
                     (ec ? ": " + ec.message() : ": it exists and is not a directory"));
  json meta = {{"stage", p.stage},
               {"frames", p.frames},
               {"seed", p.seed},
               {"shape", problem_shape_json(p)},
               {"files", json::object()}};
  for (const auto &[k, v] : run.items())
    meta[k] = v;
  json &files = meta["files"];
  if (p.causal) {
    const CausalConvShape &s = *p.causal;
    write(dir, "input.npy", {s.batch, s.channels, s.length}, p.input.data(), p.input.size());
    files["input"] = "input.npy";
    dump_causal_params(dir, p, meta);
  } else {
    const auto &s0 = p.shapes[0];
    write(dir, "input.npy", {s0.batch, s0.cin, s0.l_in}, p.input.data(), p.input.size());
    files["input"] = "input.npy";
    meta["stage_files"] = dump_conv_params(dir, p, files);
  }
  write_output(dir, p, "reference", ref);
  files["reference"] = "reference.npy";
  if (p.causal)
    files["reference final_state"] = "reference_final_state.npy";
  json cases = json::array();
  for (const auto &o : outputs) {
    files["output " + o.arm_staging] = output_file(o.arm_staging, "");
    json c = {{"case", o.arm_staging},
              {"output", output_file(o.arm_staging, "")},
              {"gate", o.gate},
              {"tolerance", o.tolerance}};
    if (p.causal) {
      files["output " + o.arm_staging + " final_state"] =
          output_file(o.arm_staging, "_final_state");
      c["final_state"] = output_file(o.arm_staging, "_final_state");
    }
    cases.push_back(c);
  }
  meta["outputs"] = cases;
  write_atomically(dir + "/problem.json", meta.dump(2) + "\n", "dump file");
  return dir;
}

void dump_output(const std::string &dir, const Problem &p, const std::string &arm_staging,
                 const std::vector<float> &y) {
  std::string base = output_file(arm_staging, "");
  base.resize(base.size() - 4); // without ".npy"
  write_output(dir, p, base, y);
}

} // namespace convbench::bench
