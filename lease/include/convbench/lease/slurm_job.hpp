// What the slurm lease backend reads from Slurm, as plain functions over its text output, so the
// parsing and the exclusivity judgement are tested on fixture strings (Slurm 22.05 has no --json):
// `scontrol show job -o --details ID` (one line of Key=Value pairs, values may hold spaces; the
// job's name, which its owner writes, is taken from `squeue -o %j` and matched verbatim),
// hostlists ("gpu[01-03,07]") and GRES bindings ("gpu:a100:2(IDX:0,2)").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::lease::slurm {

// The pairs of one `scontrol show ... -o` line, in order; a key may repeat (`Nodes=` starts each
// node group of --details).
struct KeyValues {
  std::vector<std::pair<std::string, std::string>> items;
  // The first value of key ("" when absent).
  std::string get(const std::string &key) const;
  bool has(const std::string &key) const;
};

// Splits at spaces; a word that does not start with a Key= (a capitalised key) continues the
// previous value, so "Reason=Job held by user" or "WorkDir=/a b" keep their spaces.
KeyValues parse_key_values(const std::string &line);

// "a,b[01-03],c[1,5-6]d" -> every host name; throws std::invalid_argument on a malformed list.
std::vector<std::string> expand_hostlist(const std::string &list);

// The device indices of GPU GRES in a --details GRES value: "gpu:2(IDX:0-1)" -> {0, 1};
// "gpu:a100:1(IDX:3),gpu:v100:1(IDX:5)" -> {3, 5}; other GRES (shard, mps) are ignored.
std::vector<int> gpu_indices(const std::string &gres);
// "0-1,4" -> {0, 1, 4} (CPU_IDs, IDX, SLURM_JOB_GPUS); throws std::invalid_argument.
std::vector<int> expand_ranges(const std::string &ranges);

// One node group of a job's allocation (--details).
struct NodeAlloc {
  std::vector<int> cpu_ids;
  std::vector<int> gpu_idx;
  std::string gres; // as Slurm printed it
};

// A job as `scontrol show job -o --details` describes it.
struct Job {
  std::string id, array_job_id, array_task_id, name, user;
  std::string state, reason, partition, nodelist, oversubscribe;
  std::string time_limit, start_time, end_time; // as printed ("UNLIMITED", "Unknown" kept)
  int restarts = 0, num_cpus = 0;
  std::map<std::string, NodeAlloc> nodes; // host -> its CPUs and GPUs in this job
  bool exclusive() const { return oversubscribe == "NO"; }
  bool runs_on(const std::string &host) const;
  nlohmann::json to_json() const;
};
// `scontrol_line` as `scontrol show job -o --details ID` printed it; `job_name` as `squeue -h -t
// all -j ID -o %j` printed it (the job's owner chooses it freely: it may hold " OverSubscribe=NO"
// or a newline, so it is matched verbatim and never parsed). Throws std::invalid_argument (no
// JobId, or the names differ).
Job parse_job(const std::string &scontrol_line, const std::string &job_name);

// Seconds from `now_utc_epoch` to a Slurm time ("2026-12-01T19:13:04", local time as Slurm
// prints it); empty when the job has no end ("Unknown", "None", "UNLIMITED").
std::optional<double> seconds_until(const std::string &slurm_time, double now_epoch);

// What the backend checks at start, at end and on renewal: the evidence Slurm gave.
struct Evidence {
  std::string host;          // this node's name (short host name)
  std::string token_job;     // the job this lease is for (the token's job id)
  std::string pid_job;       // the job Slurm says this process belongs to (`scontrol pidinfo`)
  Job job;                   // the job, as the controller describes it now
  int restarts_at_grant = 0; // Restarts= when the lease was granted
  std::optional<int> gpu;    // this process's GPU (global index); empty: host arms only
  bool gpu_wanted = false;   // the lease is for a GPU (else for the host's CPUs)
  std::vector<Job> others;   // the other RUNNING jobs that squeue lists on this node
  // A check after the grant: a job Slurm is ending (scancel, time limit, preemption) still holds
  // its allocation while it counts this process in it, until the process exits (KillWait).
  bool ending_ok = false;
};

// CANCELLED, TIMEOUT, PREEMPTED, DEADLINE, COMPLETING: the job is being ended.
bool ending_state(const std::string &state);

// "" when the job holds the resource alone; otherwise the one-line reason to refuse or void.
std::string judge(const Evidence &e);

} // namespace convbench::lease::slurm
