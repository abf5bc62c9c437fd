#include "plan/completion.hpp"

#include <map>
#include <set>
#include <vector>

#include "plan/catalog.hpp"
#include "plan/cli.hpp"
#include "plan/listing.hpp"

namespace convbench::bench {

namespace {
std::string words(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &w : v)
    s += (s.empty() ? "" : " ") + w;
  return s;
}

// What each option's value may be: words (a comma list where `list`), files, or nothing to offer.
struct Values {
  std::vector<std::string> words;
  bool list = false, files = false;
};

std::vector<std::string> listed(const std::string &what, const char *key) {
  Options o;
  o.list = what;
  std::vector<std::string> out;
  try {
    const nlohmann::json j = listing_json(o);
    if (what == "stages") {
      for (const auto &s : j["stages"])
        out.push_back(s.get<std::string>());
      for (const auto &s : j["groups"])
        out.push_back(s.get<std::string>());
      return out;
    }
    for (const auto &e : j) {
      out.push_back(e[key].get<std::string>());
      if (e.contains("aliases"))
        for (const auto &a : e["aliases"])
          out.push_back(a.get<std::string>());
    }
  } catch (const std::exception &) { // no data files here: the option completes without values
  }
  return out;
}

std::map<std::string, Values> option_values() {
  std::map<std::string, Values> v;
  v["--stage"] = {listed("stages", ""), true, false};
  v["--arms"] = {listed("arms", "name"), true, false};
  v["--model"] = {listed("models", "name"), false, false};
  v["--staging"] = {{"per-call", "resident", "both"}};
  v["--twins"] = {{"kinds", "all", "none"}};
  v["--device-timing"] = {{"queued", "launched"}};
  v["--list"] = {{"arms", "stages", "models", "cases"}};
  v["--completion"] = {{"bash"}};
  v["--gpus"] = {{"all"}};
  for (const char *f : {"--out", "--dump", "--resume", "--plugin", "--profile", "--cudnn-algo"})
    v[f] = {{}, false, true};
  return v;
}
} // namespace

std::string bash_completion() {
  const std::vector<OptionInfo> opts = cli_options();
  const std::map<std::string, Values> values = option_values();
  std::vector<std::string> all, with_value;
  std::string cases;
  for (const auto &o : opts) {
    for (size_t at = 0; at < o.names.size();) {
      const size_t comma = o.names.find(',', at);
      all.push_back(o.names.substr(at, comma - at));
      at = comma == std::string::npos ? o.names.size() : comma + 1;
    }
    if (!o.takes_value)
      continue;
    auto it = values.find(o.long_name);
    std::string action = "return 0"; // a number or a free word: nothing to offer
    if (it != values.end() && it->second.files)
      action = "COMPREPLY=($(compgen -f -- \"$cur\"))";
    else if (it != values.end() && it->second.list)
      action = "_bench_conv_items \"" + words(it->second.words) + "\"";
    else if (it != values.end())
      action = "COMPREPLY=($(compgen -W \"" + words(it->second.words) + "\" -- \"$cur\"))";
    cases += "    " + o.long_name + ") " + action + "; return 0 ;;\n";
  }
  return "# bash completion for bench_conv, made by `bench_conv --completion bash` from its own\n"
         "# options and listings. Use: source <(bench_conv --completion bash)\n"
         "_bench_conv_items() {\n"
         "  local pre=\"\"\n"
         "  [[ $cur == *,* ]] && pre=\"${cur%,*},\"\n"
         "  COMPREPLY=($(compgen -P \"$pre\" -W \"$1\" -- \"${cur##*,}\"))\n"
         "  compopt -o nospace 2>/dev/null\n"
         "}\n"
         "_bench_conv() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  COMPREPLY=()\n"
         "  case \"$prev\" in\n" +
         cases +
         "  esac\n"
         "  COMPREPLY=($(compgen -W \"" +
         words(all) +
         "\" -- \"$cur\"))\n"
         "}\n"
         "complete -F _bench_conv bench_conv\n";
}

} // namespace convbench::bench
