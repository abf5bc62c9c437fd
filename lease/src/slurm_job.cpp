// Parsing of Slurm 22.05's text output and the exclusivity judgement of the slurm lease backend.
#include "convbench/lease/slurm_job.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace convbench::lease::slurm {

using nlohmann::json;

std::string KeyValues::get(const std::string &key) const {
  for (auto &[k, v] : items)
    if (k == key)
      return v;
  return "";
}

bool KeyValues::has(const std::string &key) const {
  return std::any_of(items.begin(), items.end(), [&](auto &kv) { return kv.first == key; });
}

namespace {

// A word that opens a new pair: Key=..., the key capitalised and made of key characters
// (JobId, CPUs/Task, AllocNode:Sid, ReqB:S:C:T, MCS_label).
bool opens_pair(const std::string &word, size_t *eq) {
  size_t e = word.find('=');
  if (e == std::string::npos || e == 0 || !std::isupper(static_cast<unsigned char>(word[0])))
    return false;
  for (size_t i = 0; i < e; ++i) {
    unsigned char c = static_cast<unsigned char>(word[i]);
    if (!std::isalnum(c) && c != '_' && c != '/' && c != ':')
      return false;
  }
  *eq = e;
  return true;
}

int to_int(const std::string &s, const char *what) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(s, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (s.empty() || used != s.size() || v < 0)
    throw std::invalid_argument(std::string(what) + ": '" + s + "' is not a number");
  return v;
}

} // namespace

KeyValues parse_key_values(const std::string &line) {
  KeyValues kv;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    size_t eq = 0;
    if (opens_pair(word, &eq))
      kv.items.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    else if (!kv.items.empty())
      kv.items.back().second += " " + word;
  }
  return kv;
}

std::vector<int> expand_ranges(const std::string &ranges) {
  std::vector<int> out;
  std::istringstream in(ranges);
  for (std::string part; std::getline(in, part, ',');) {
    if (part.empty())
      throw std::invalid_argument("empty item in the range list '" + ranges + "'");
    auto dash = part.find('-');
    int a = to_int(part.substr(0, dash), "range");
    int b = dash == std::string::npos ? a : to_int(part.substr(dash + 1), "range");
    if (b < a || b - a > 65536)
      throw std::invalid_argument("bad range '" + part + "' in '" + ranges + "'");
    for (int i = a; i <= b; ++i)
      out.push_back(i);
  }
  return out;
}

namespace {

// Expands the first bracket group of one host expression, recursively for the rest.
void expand_one(const std::string &expr, std::vector<std::string> &out) {
  auto open = expr.find('[');
  if (open == std::string::npos) {
    if (expr.find(']') != std::string::npos)
      throw std::invalid_argument("unbalanced ']' in hostlist item '" + expr + "'");
    out.push_back(expr);
    return;
  }
  auto close = expr.find(']', open);
  if (close == std::string::npos)
    throw std::invalid_argument("unbalanced '[' in hostlist item '" + expr + "'");
  std::string head = expr.substr(0, open), body = expr.substr(open + 1, close - open - 1),
              tail = expr.substr(close + 1);
  std::istringstream in(body);
  for (std::string part; std::getline(in, part, ',');) {
    auto dash = part.find('-');
    std::string lo = part.substr(0, dash),
                hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    int a = to_int(lo, "hostlist"), b = to_int(hi, "hostlist");
    if (b < a || b - a > 65536)
      throw std::invalid_argument("bad hostlist range '" + part + "'");
    for (int i = a; i <= b; ++i) {
      std::string n = std::to_string(i);
      if (n.size() < lo.size()) // zero padding as written: node[01-10]
        n = std::string(lo.size() - n.size(), '0') + n;
      expand_one(head + n + tail, out);
    }
  }
}

} // namespace

std::vector<std::string> expand_hostlist(const std::string &list) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  auto flush = [&] {
    if (!item.empty())
      expand_one(item, out);
    item.clear();
  };
  for (char c : list) {
    if (c == '[')
      ++depth;
    if (c == ']')
      --depth;
    if (c == ',' && depth == 0)
      flush();
    else
      item += c;
  }
  if (depth != 0)
    throw std::invalid_argument("unbalanced brackets in hostlist '" + list + "'");
  flush();
  return out;
}

std::vector<int> gpu_indices(const std::string &gres) {
  std::vector<int> out;
  // Items are separated by commas outside parentheses: "gpu:a100:1(IDX:0,2),gpu:v100:1(IDX:5)".
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : gres) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  items.push_back(cur);
  for (auto &it : items) {
    if (it.rfind("gpu", 0) != 0 || (it.size() > 3 && it[3] != ':' && it[3] != '('))
      continue;
    auto idx = it.find("(IDX:");
    if (idx == std::string::npos)
      continue;
    auto end = it.find(')', idx);
    if (end == std::string::npos)
      throw std::invalid_argument("GRES '" + gres + "' has an unclosed (IDX:");
    std::string ranges = it.substr(idx + 5, end - idx - 5);
    if (ranges == "N/A")
      continue;
    for (int i : expand_ranges(ranges))
      out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Job::runs_on(const std::string &host) const {
  try {
    auto hosts = expand_hostlist(nodelist);
    return std::find(hosts.begin(), hosts.end(), host) != hosts.end();
  } catch (const std::invalid_argument &) {
    return false;
  }
}

json Job::to_json() const {
  json n = json::object();
  for (auto &[host, a] : nodes)
    n[host] = {{"cpu_ids", a.cpu_ids}, {"gpu_idx", a.gpu_idx}, {"gres", a.gres}};
  auto opt = [](const std::string &s) { return s.empty() ? json() : json(s); };
  return {{"job_id", id},
          {"array_job_id", opt(array_job_id)},
          {"array_task_id", opt(array_task_id)},
          {"name", name},
          {"user", user},
          {"state", state},
          {"reason", reason},
          {"partition", partition},
          {"nodelist", nodelist},
          {"oversubscribe", oversubscribe},
          {"time_limit", time_limit},
          {"start_time", start_time},
          {"end_time", end_time},
          {"restarts", restarts},
          {"num_cpus", num_cpus},
          {"nodes", n}};
}

Job parse_job(const std::string &text, const std::string &job_name) {
  // The job name is the one value before the fields that matter that its owner writes freely (a
  // newline included): "JobId=7 JobName=x OverSubscribe=NO UserId=..." must not read as an
  // exclusive job. So the name squeue printed is cut out verbatim, and of the rest only the part
  // before the first free-text field that follows the allocation (Command, WorkDir, Comment,
  // StdOut...) is read; there every key's first occurrence is Slurm's own.
  const std::string head = text.substr(0, text.find("JobName="));
  if (head.size() == text.size() || head.rfind("JobId=", 0) != 0)
    throw std::invalid_argument("no JobId= ... JobName= in scontrol's answer: '" +
                                text.substr(0, 120) + "'");
  const std::string after_name = text.substr(head.size() + 8);
  // 22.05 prints UserId= right after the name.
  if (after_name.compare(0, job_name.size(), job_name) != 0 ||
      after_name.compare(job_name.size(), 8, " UserId=") != 0)
    throw std::invalid_argument("scontrol's JobName is not the job's name as squeue prints it");
  std::string rest = after_name.substr(job_name.size());
  // Slurm 22.05 prints every field read here before these.
  for (const char *free_text : {" Command=", " WorkDir=", " Comment=", " StdErr=", " StdIn=",
                                " StdOut=", " AdminComment=", " SystemComment="})
    rest.resize(std::min(rest.size(), rest.find(free_text)));
  if (rest.find('\n') != std::string::npos)
    throw std::invalid_argument("scontrol's answer holds a line break outside the job name");
  KeyValues kv = parse_key_values(head + rest);
  Job j;
  j.id = kv.get("JobId");
  if (j.id.empty())
    throw std::invalid_argument("no JobId= in scontrol's answer: '" + text.substr(0, 120) + "'");
  j.array_job_id = kv.get("ArrayJobId");
  j.array_task_id = kv.get("ArrayTaskId");
  j.name = job_name;
  j.user = kv.get("UserId");
  j.state = kv.get("JobState");
  j.reason = kv.get("Reason");
  j.partition = kv.get("Partition");
  j.nodelist = kv.get("NodeList");
  j.oversubscribe = kv.has("OverSubscribe") ? kv.get("OverSubscribe") : kv.get("Shared");
  j.time_limit = kv.get("TimeLimit");
  j.start_time = kv.get("StartTime");
  j.end_time = kv.get("EndTime");
  if (std::string r = kv.get("Restarts"); !r.empty())
    j.restarts = to_int(r, "Restarts");
  if (std::string c = kv.get("NumCPUs");
      !c.empty() && std::isdigit(static_cast<unsigned char>(c[0])))
    j.num_cpus = to_int(c.substr(0, c.find_first_not_of("0123456789")), "NumCPUs");
  // --details: "Nodes=a[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:2(IDX:0-1)", one group per node set,
  // between JOB_GRES= and MinCPUsNode=.
  std::vector<std::string> group_hosts;
  for (auto &[k, v] : kv.items) {
    if (k == "MinCPUsNode")
      break;
    if (k == "Nodes") {
      group_hosts = expand_hostlist(v);
      for (auto &h : group_hosts)
        j.nodes[h];
    } else if (k == "CPU_IDs" && !group_hosts.empty()) {
      for (auto &h : group_hosts)
        j.nodes[h].cpu_ids = expand_ranges(v);
    } else if (k == "GRES" && !group_hosts.empty()) {
      for (auto &h : group_hosts) {
        j.nodes[h].gres = v;
        j.nodes[h].gpu_idx = gpu_indices(v);
      }
    }
  }
  return j;
}

std::optional<double> seconds_until(const std::string &t, double now_epoch) {
  std::tm tm{};
  std::istringstream in(t);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail())
    return std::nullopt;
  tm.tm_isdst = -1; // Slurm prints local time
  std::time_t end = std::mktime(&tm);
  if (end == static_cast<std::time_t>(-1))
    return std::nullopt;
  return static_cast<double>(end) - now_epoch;
}

namespace {

std::string list(const std::vector<int> &v) {
  std::string s;
  for (int i : v) {
    if (!s.empty())
      s += ',';
    s += std::to_string(i);
  }
  return s.empty() ? "none" : s;
}

bool holds(const std::vector<int> &v, int i) { return std::find(v.begin(), v.end(), i) != v.end(); }

std::string gpu_problem(const Evidence &e) {
  const std::string &T = e.token_job;
  auto mine = e.job.nodes.find(e.host);
  std::vector<int> idx = mine == e.job.nodes.end() ? std::vector<int>{} : mine->second.gpu_idx;
  if (!e.gpu) {
    if (!e.job.exclusive())
      return "cannot tell which of " + e.host +
             "'s GPUs this process uses (no SLURM_STEP_GPUS "
             "or SLURM_JOB_GPUS) and job " +
             T +
             " does not hold the node alone: request the GPU "
             "with --gres=gpu:1 (or --gpus=1), or submit with --exclusive";
  } else if (!holds(idx, *e.gpu)) {
    // An exclusive job on a site without GPU GRES holds every GPU of the node.
    if (!(idx.empty() && e.job.exclusive()))
      return "GPU " + std::to_string(*e.gpu) + " of " + e.host + " is not bound to job " + T +
             " (its GPUs there: " + list(idx) + "): request it with --gres=gpu:1";
  }
  for (auto &o : e.others) {
    auto on = o.nodes.find(e.host);
    std::vector<int> theirs = on == o.nodes.end() ? std::vector<int>{} : on->second.gpu_idx;
    if (e.job.exclusive())
      return "job " + o.id + " (" + o.user + ") is RUNNING on " + e.host +
             " beside exclusive job " + T +
             ": something placed it past the scheduler's exclusivity";
    if (e.gpu && holds(theirs, *e.gpu))
      return "GPU " + std::to_string(*e.gpu) + " of " + e.host + " is shared: job " + o.id + " (" +
             o.user + ") holds it too (GRES " + (on == o.nodes.end() ? "?" : on->second.gres) + ")";
  }
  return "";
}

std::string cpu_problem(const Evidence &e) {
  const std::string &T = e.token_job;
  if (!e.job.exclusive())
    return "job " + T + " shares node " + e.host + " (OverSubscribe=" + e.job.oversubscribe +
           "): host arms need the node alone; submit with --exclusive";
  for (auto &o : e.others)
    return "job " + o.id + " (" + o.user + ") is RUNNING on " + e.host + " beside exclusive job " +
           T + ": host arms do not have the node alone";
  return "";
}

} // namespace

bool ending_state(const std::string &s) {
  return s == "CANCELLED" || s == "TIMEOUT" || s == "PREEMPTED" || s == "DEADLINE" ||
         s == "COMPLETING";
}

std::string judge(const Evidence &e) {
  const std::string &T = e.token_job;
  if (e.pid_job.empty())
    return "Slurm does not count this process as part of any job (scontrol pidinfo): it runs "
           "outside job " +
           T + "'s allocation";
  if (e.pid_job != T)
    return "token mismatch: Slurm counts this process in job " + e.pid_job + ", not in job " + T;
  if (e.job.id != T)
    return "token mismatch: the controller described job " + e.job.id + ", not job " + T;
  if (e.job.state != "RUNNING" && !(e.ending_ok && ending_state(e.job.state)))
    return "job " + T + " is " + e.job.state +
           (e.job.reason.empty() || e.job.reason == "None" ? "" : " (" + e.job.reason + ")") +
           ", not RUNNING";
  if (!e.job.runs_on(e.host))
    return "job " + T + " runs on " + e.job.nodelist + ", not on this node " + e.host;
  if (e.job.restarts != e.restarts_at_grant)
    return "job " + T + " was requeued since the lease was granted (restarts " +
           std::to_string(e.restarts_at_grant) + " -> " + std::to_string(e.job.restarts) + ")";
  return e.gpu_wanted ? gpu_problem(e) : cpu_problem(e);
}

} // namespace convbench::lease::slurm
