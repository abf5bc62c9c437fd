#include "plan/listing.hpp"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/arm.hpp"
#include "plan/catalog.hpp"
#include "plan/problem.hpp"

using nlohmann::json;

namespace convbench::bench {

namespace {

json arm_json(const Arm &a) {
  std::string why;
  const bool available = a.available(&why);
  const ArmFacts f = a.facts();
  return {{"name", a.name()},
          {"precision", f.precision ? json(to_string(*f.precision)) : json(nullptr)},
          {"math", f.math},
          {"role", to_string(f.role)},
          {"device", a.device()},
          {"gate", to_string(a.gate())},
          {"tolerance", a.gate() == GateKind::tolerance ? json(a.tolerance()) : json(nullptr)},
          {"floor_kind", a.floor_kind()},
          {"stagings", a.stagings()},
          {"hidden", a.hidden()},
          {"available", available},
          {"why_not", available ? json(nullptr) : json(why)}};
}

// Every registered arm, the default set first (reference first), then the hidden ones by name.
json arms_json() {
  json out = json::array();
  std::vector<std::string> listed;
  for (const Arm *a : registered_arms()) {
    out.push_back(arm_json(*a));
    listed.push_back(a->name());
  }
  std::vector<const Arm *> hidden;
  for (const Arm *a : every_arm())
    if (std::find(listed.begin(), listed.end(), a->name()) == listed.end())
      hidden.push_back(a);
  std::sort(hidden.begin(), hidden.end(),
            [](const Arm *a, const Arm *b) { return a->name() < b->name(); });
  for (const Arm *a : hidden)
    out.push_back(arm_json(*a));
  return out;
}

json model_json(const Model &m, const ModelCatalog &cat) {
  return {{"name", m.name},
          {"aliases", m.aliases},
          {"variant_of", m.variant_of.empty() ? json(nullptr) : json(m.variant_of)},
          {"default", m.name == cat.default_model},
          {"num_mels", m.num_mels},
          {"channels", m.channels},
          {"strides", m.strides},
          {"kernels", m.kernels},
          {"resblock_kernels", m.resblock_kernels},
          {"resblock_dilations", m.resblock_dilations},
          {"pre_kernel", m.pre_kernel},
          {"post_kernel", m.post_kernel},
          {"post_bias", m.post_bias}};
}

const Model &chosen_model(const Options &opt, const ModelCatalog &cat) {
  const std::string name = opt.model.empty() ? cat.default_model : opt.model;
  const Model *m = cat.find(name);
  if (!m) {
    std::string known;
    for (const auto &n : cat.names())
      known += (known.empty() ? "" : ", ") + n;
    throw UsageError("--model: unknown model '" + name + "' (known: " + known + ")");
  }
  return *m;
}

// The model's distinct stages in the generator's order, and the group words --stage takes.
json stages_json(const Model &m) {
  json stages = json::array();
  for (const auto &s : expand_stages({"generator"}, m))
    if (s != "generator")
      stages.push_back(s);
  json groups = json::array();
  for (int i = 0; i < m.stages(); ++i)
    groups.push_back("amp" + std::to_string(i));
  for (const char *g : {"amp", "chain", "all", "generator", "causal"})
    groups.push_back(g);
  return {{"model", m.name}, {"stages", stages}, {"groups", groups}};
}

// The problems a run of this selection plans (stage x frames), with the record's shape of each.
json cases_json(const Options &opt, const Model &m) {
  json out = json::array();
  for (const auto &stage : expand_stages(opt.stages, m))
    for (int64_t frames : opt.frames) {
      const Problem p = plan_stage(stage, frames, m);
      out.push_back({{"id", p.stage + "/" + std::to_string(p.frames)},
                     {"model", m.name},
                     {"stage", p.stage},
                     {"frames", p.frames},
                     {"stage_names", p.stage_names},
                     {"shape", problem_shape_json(p)},
                     {"flops", p.flops()},
                     {"min_bytes", p.min_bytes()}});
      if (p.causal) // a causal case has its own length: listed once
        break;
    }
  return out;
}

// One line per entry for people: the name, then the facts that tell entries apart.
std::string text_line(const std::string &kind, const json &e) {
  std::ostringstream s;
  if (kind == "arms")
    s << e["name"].get<std::string>() << "  "
      << (e["precision"].is_null() ? "?" : e["precision"].get<std::string>()) << " "
      << e["math"].get<std::string>() << " " << e["role"].get<std::string>()
      << (e["hidden"].get<bool>() ? " hidden" : "")
      << (e["available"].get<bool>() ? "" : " (not here: " + e["why_not"].get<std::string>() + ")");
  else if (kind == "models")
    s << e["name"].get<std::string>() << (e["default"].get<bool>() ? " (default)" : "")
      << "  channels " << e["channels"] << ", strides " << e["strides"].dump() << ", num_mels "
      << e["num_mels"];
  else if (kind == "cases")
    s << e["id"].get<std::string>() << "  " << e["shape"].dump();
  else
    s << e.get<std::string>();
  return s.str();
}

} // namespace

json listing_json(const Options &opt) {
  if (opt.list == "arms")
    return arms_json();
  const ModelCatalog cat = load_models(data_dir() + "/models.json");
  if (opt.list == "models") {
    json listing = json::array();
    for (const Model &m : cat.models)
      listing.push_back(model_json(m, cat));
    return listing;
  }
  if (opt.list == "stages")
    return stages_json(chosen_model(opt, cat));
  return cases_json(opt, chosen_model(opt, cat));
}

void write_listing(const Options &opt, std::ostream &out) {
  const json listing = listing_json(opt);
  if (opt.json) {
    out << listing.dump(2) << "\n";
    return;
  }
  if (opt.list == "stages") {
    for (const auto &s : listing["stages"])
      out << s.get<std::string>() << "\n";
    out << "groups: " << listing["groups"].dump() << "\n";
    return;
  }
  for (const auto &e : listing)
    out << text_line(opt.list, e) << "\n";
}

} // namespace convbench::bench
