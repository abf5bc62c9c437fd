#include "plan/cudnn_algo.hpp"

#include <filesystem>
#include <fstream>

#include "plan/cli.hpp"

namespace convbench::bench {

namespace {

const char *const kMaths[] = {"default math", "tensor-op math", "tensor-op math, conversion",
                              "fma math"};

[[noreturn]] void bad(const std::string &what) { throw UsageError("--cudnn-algo: " + what); }

// "N" as a non-negative decimal below `count`, else -1.
int index_below(const std::string &digits, int count) {
  if (digits.empty() || digits.size() > 3)
    return -1;
  int n = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9')
      return -1;
    n = n * 10 + (ch - '0');
  }
  return n < count ? n : -1;
}

// Splits at the commas outside parentheses ("tensor-op math, conversion" holds one).
std::vector<std::string> split_top(const std::string &s) {
  std::vector<std::string> out{""};
  int depth = 0;
  for (char ch : s) {
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (ch == ',' && depth == 0)
      out.emplace_back();
    else
      out.back() += ch;
  }
  return out;
}

bool tensor_op(const CudnnAlgo &a) { return a.math.rfind("tensor-op", 0) == 0; }

} // namespace

std::string CudnnAlgo::name() const {
  std::string n = (forward ? "fwd_algo_" : "bwd_data_algo_") + std::to_string(index);
  return math.empty() ? n : n + " (" + math + ")";
}

CudnnAlgo parse_cudnn_algo(const std::string &text) {
  CudnnAlgo a;
  std::string head = text;
  if (const auto open = text.find(" ("); open != std::string::npos) {
    if (text.back() != ')')
      bad("'" + text + "': expected ALGO or ALGO (MATH)");
    a.math = text.substr(open + 2, text.size() - open - 3);
    head = text.substr(0, open);
    bool known = false;
    for (const char *m : kMaths)
      known |= a.math == m;
    if (!known)
      bad("unknown math '" + a.math + "' (one of 'default math', 'tensor-op math', " +
          "'tensor-op math, conversion', 'fma math')");
  }
  const std::string fwd = "fwd_algo_", bwd = "bwd_data_algo_";
  int index = -1;
  if (head.rfind(fwd, 0) == 0) {
    a.forward = true;
    index = index_below(head.substr(fwd.size()), kCudnnFwdAlgos);
  } else if (head.rfind(bwd, 0) == 0) {
    index = index_below(head.substr(bwd.size()), kCudnnBwdDataAlgos);
  }
  if (index < 0)
    bad("unknown algorithm '" + head + "' (fwd_algo_0.." + std::to_string(kCudnnFwdAlgos - 1) +
        " for Conv1d, bwd_data_algo_0.." + std::to_string(kCudnnBwdDataAlgos - 1) +
        " for ConvTranspose1d, as a record's kernel.algorithm spells them)");
  a.index = index;
  return a;
}

std::map<std::string, CudnnAlgo> cudnn_algos_of_record(const nlohmann::json &record,
                                                       const std::string &where) {
  if (!record.is_object() || !record.contains("cases") || !record["cases"].is_array())
    bad(where + ": not a bench_conv record (no cases)");
  std::map<std::string, CudnnAlgo> out;
  for (const auto &c : record["cases"]) {
    if (!c.is_object() || !c.value("arm", nlohmann::json()).is_string() ||
        !c.value("id", nlohmann::json()).is_string())
      bad(where + ": a case without its id or arm");
    if (c["arm"].get<std::string>().rfind("cudnn-", 0) != 0)
      continue;
    const auto kernel = c.value("kernel", nlohmann::json());
    if (!kernel.is_object() || !kernel.value("algorithm", nlohmann::json()).is_string())
      continue; // a case that never got as far as choosing (unavailable, refused earlier)
    out[c["id"].get<std::string>()] = parse_cudnn_algo(kernel["algorithm"].get<std::string>());
  }
  if (out.empty())
    bad(where + ": no cuDNN case with a kernel.algorithm to replay");
  return out;
}

CudnnAlgoSpec parse_cudnn_algo_spec(const std::string &spec) {
  CudnnAlgoSpec s;
  if (spec.empty())
    bad("empty value");
  if (spec[0] == '@') {
    s.record = spec.substr(1);
    std::error_code ec;
    std::ifstream in(s.record);
    if (!std::filesystem::is_regular_file(s.record, ec) || !in)
      bad("cannot read the record " + s.record + " (not a readable file)");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in, nullptr, false);
    } catch (const std::exception &e) { // a read error, not a syntax one
      bad("cannot read the record " + s.record + ": " + e.what());
    }
    if (j.is_discarded())
      bad(s.record + ": not JSON");
    s.by_case = cudnn_algos_of_record(j, s.record);
    return s;
  }
  if (spec.find('=') == std::string::npos) {
    s.every = parse_cudnn_algo(spec);
    return s;
  }
  for (const auto &item : split_top(spec)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      bad("expected CASE_ID=ALGO, got '" + item + "'");
    if (!s.by_case.emplace(item.substr(0, eq), parse_cudnn_algo(item.substr(eq + 1))).second)
      bad("case '" + item.substr(0, eq) + "' given twice");
  }
  return s;
}

std::map<std::string, CudnnAlgo> pin_cudnn_cases(const CudnnAlgoSpec &spec,
                                                 const std::vector<CudnnTarget> &targets) {
  if (targets.empty())
    bad("no cuDNN case is planned (no cudnn-* arm runs here, or none runs these stages)");
  auto check = [](const CudnnTarget &t, const CudnnAlgo &a) {
    if (a.forward != t.forward)
      bad(t.id + " is a " +
          (t.forward ? "Conv1d: it runs fwd_algo_*" : "ConvTranspose1d: it runs bwd_data_algo_*") +
          ", not " + a.name());
    if (tensor_op(a) && t.arm.rfind("cudnn-f32", 0) == 0)
      bad(t.id + ": cudnn-f32 promises IEEE f32, not " + a.name());
  };
  std::map<std::string, CudnnAlgo> out;
  if (spec.every) {
    for (const auto &t : targets)
      if (t.forward == spec.every->forward) {
        check(t, *spec.every);
        out[t.id] = *spec.every;
      }
    if (out.empty())
      bad("no planned cuDNN case runs " + spec.every->name() + " (the planned ones are " +
          (targets[0].forward ? "Conv1d: fwd_algo_*)" : "ConvTranspose1d: bwd_data_algo_*)"));
    return out;
  }
  for (const auto &[id, algo] : spec.by_case) {
    const CudnnTarget *t = nullptr;
    for (const auto &x : targets)
      if (x.id == id)
        t = &x;
    if (t) {
      check(*t, algo);
      out[id] = algo;
    } else if (spec.record.empty()) {
      bad("no planned cuDNN case '" + id + "' (planned: " + targets[0].id +
          (targets.size() > 1 ? ", ..." : "") + ")");
    } // a replayed record may hold cases this run does not plan
  }
  if (out.empty())
    bad(spec.record + ": none of its cuDNN cases is planned now (first planned: " + targets[0].id +
        ")");
  return out;
}

} // namespace convbench::bench
