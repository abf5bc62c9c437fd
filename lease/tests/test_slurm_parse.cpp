// The slurm backend's reading of Slurm 22.05 output and its exclusivity judgement, on fixture
// strings. The fixtures are `scontrol show job -o --details` lines as slurmctld 22.05.8 printed
// them here (single node "vm"), plus multi-node and multi-GPU variants edited from those: the GPU
// sharing cases cannot be produced by a real Slurm (it never binds one GRES GPU to two jobs), so
// they are tested here; the real-job tests (test_slurm_jobs.py) use a GRES with no devices.
// Each check names the planted fault it was seen to catch.
#include <gtest/gtest.h>

#include <cstdlib>

#include "convbench/lease/lease.hpp"
#include "convbench/lease/slurm_job.hpp"

using namespace convbench::lease::slurm;

namespace {

// Exclusive srun with --gres=gpu:1 (the job was given both GPUs of the node).
const char *kExclusive =
    "JobId=1 JobName=bash UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 "
    "Restarts=0 BatchFlag=0 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:00 "
    "TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-01T19:07:59 "
    "EligibleTime=2026-12-01T19:07:59 AccrueTime=Unknown StartTime=2026-12-01T19:07:59 "
    "EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T19:07:59 Scheduler=Main Partition=debug "
    "AllocNode:Sid=localhost:6026 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm "
    "NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=1,billing=2 "
    "Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* JOB_GRES=gpu:2   Nodes=vm CPU_IDs=0-1 "
    "Mem=0 GRES=gpu:2(IDX:0-1) MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) "
    "Command=bash WorkDir=/tmp Power= TresPerNode=gres:gpu:1 ";

// A shared-node job holding GPU 0; pending reason with spaces and a work dir with a space.
std::string shared_gpu_job(const std::string &id, const std::string &idx,
                           const std::string &state = "RUNNING") {
  return "JobId=" + id + " JobName=my bench UserId=ana(1001) GroupId=ana(1001) JobState=" + state +
         " Reason=Job's time limit exhausted Restarts=0 TimeLimit=00:05:00 "
         "StartTime=2026-12-01T19:08:04 EndTime=2026-12-01T19:13:04 Partition=gpu "
         "NodeList=vm NumNodes=1 NumCPUs=1 JOB_GRES=gpu:1   Nodes=vm CPU_IDs=0 Mem=0 "
         "GRES=gpu:1(IDX:" +
         idx + ") OverSubscribe=OK WorkDir=/tmp/a b/c StdOut=/tmp/o.out";
}

// The fixtures' names hold no " UserId=": what squeue would print for them.
std::string name_in(const std::string &line) {
  const size_t at = line.find("JobName=") + 8;
  return line.substr(at, line.find(" UserId=") - at);
}

Evidence evidence(const std::string &line, bool gpu, std::optional<int> index) {
  Evidence e;
  e.host = "vm";
  e.job = parse_job(line, name_in(line));
  e.token_job = e.job.id;
  e.pid_job = e.job.id;
  e.gpu_wanted = gpu;
  e.gpu = index;
  return e;
}

} // namespace

TEST(SlurmParse, ValuesKeepTheirSpaces) {
  // Planted: a word without Key= starting a new (keyless) item instead of continuing the value
  // -> Reason read "Job's": failed here.
  KeyValues kv = parse_key_values(shared_gpu_job("3", "0"));
  EXPECT_EQ(kv.get("Reason"), "Job's time limit exhausted");
  EXPECT_EQ(kv.get("JobName"), "my bench");
  EXPECT_EQ(kv.get("WorkDir"), "/tmp/a b/c");
  EXPECT_EQ(kv.get("StdOut"), "/tmp/o.out");
  EXPECT_EQ(kv.get("UserId"), "ana(1001)");
  EXPECT_FALSE(kv.has("b/c"));
}

TEST(SlurmParse, KeysWithSlashesAndColonsAndEmptyValues) {
  KeyValues kv = parse_key_values(kExclusive);
  EXPECT_EQ(kv.get("CPUs/Task"), "1");
  EXPECT_EQ(kv.get("AllocNode:Sid"), "localhost:6026");
  EXPECT_EQ(kv.get("ReqB:S:C:T"), "0:0:*:*");
  EXPECT_EQ(kv.get("TRES"), "cpu=2,node=1,billing=2");
  EXPECT_TRUE(kv.has("Power"));
  EXPECT_EQ(kv.get("Power"), "");
  EXPECT_EQ(kv.get("TresPerNode"), "gres:gpu:1");
}

TEST(SlurmParse, Hostlists) {
  // Planted: zero padding dropped (node1 instead of node01): failed here.
  EXPECT_EQ(expand_hostlist("node[01-03,07]"),
            (std::vector<std::string>{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(expand_hostlist("a,b[1-2]"), (std::vector<std::string>{"a", "b1", "b2"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[8-9]"),
            (std::vector<std::string>{"r1n8", "r1n9", "r2n8", "r2n9"}));
  EXPECT_EQ(expand_hostlist("vm"), (std::vector<std::string>{"vm"}));
  EXPECT_THROW(expand_hostlist("node[1-3"), std::invalid_argument);
  EXPECT_THROW(expand_hostlist("node[3-1]"), std::invalid_argument);
}

TEST(SlurmParse, GpuIndices) {
  EXPECT_EQ(gpu_indices("gpu:2(IDX:0-1)"), (std::vector<int>{0, 1}));
  EXPECT_EQ(gpu_indices("gpu:a100:1(IDX:3),gpu:v100:2(IDX:5,7)"), (std::vector<int>{3, 5, 7}));
  // Planted: every GRES counted as a GPU -> the shard's index 4 appeared: failed here.
  EXPECT_EQ(gpu_indices("shard:2(IDX:4),gpu:1(IDX:6)"), (std::vector<int>{6}));
  EXPECT_TRUE(gpu_indices("").empty());
  EXPECT_TRUE(gpu_indices("gpu:0(IDX:N/A)").empty());
  EXPECT_THROW(gpu_indices("gpu:1(IDX:x)"), std::invalid_argument);
}

TEST(SlurmParse, JobWithDetails) {
  Job j = parse_job(kExclusive, "bash");
  EXPECT_EQ(j.id, "1");
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.partition, "debug");
  EXPECT_TRUE(j.exclusive());
  EXPECT_TRUE(j.runs_on("vm"));
  EXPECT_FALSE(j.runs_on("vm2"));
  ASSERT_EQ(j.nodes.count("vm"), 1u);
  EXPECT_EQ(j.nodes.at("vm").cpu_ids, (std::vector<int>{0, 1}));
  EXPECT_EQ(j.nodes.at("vm").gpu_idx, (std::vector<int>{0, 1}));
  EXPECT_EQ(j.num_cpus, 2);
  EXPECT_THROW(parse_job("Slurm error", ""), std::invalid_argument);
}

TEST(SlurmParse, MultiNodeGroups) {
  // Two node groups with different bindings: each host gets its own group's GPUs.
  Job j =
      parse_job("JobId=9 JobName=x UserId=u(1) JobState=RUNNING NodeList=g[1-3] OverSubscribe=OK "
                "Nodes=g[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:2(IDX:0-1) "
                "Nodes=g3 CPU_IDs=4 Mem=0 GRES=gpu:1(IDX:3)",
                "x");
  // Planted: GRES applied to every host of the job -> g3 had 0-1: failed here.
  EXPECT_EQ(j.nodes.at("g1").gpu_idx, (std::vector<int>{0, 1}));
  EXPECT_EQ(j.nodes.at("g2").cpu_ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(j.nodes.at("g3").gpu_idx, (std::vector<int>{3}));
  EXPECT_TRUE(j.runs_on("g3"));
}

// A shared job (--oversubscribe) named "bench OverSubscribe=NO" with a comment saying the same,
// as slurmctld 22.05.8 printed it here. Splitting the line at spaces read the name's
// "OverSubscribe=NO" as the field and gave the shared job a valid lease.
const char *kInjectedName =
    "JobId=1 JobName=bench OverSubscribe=NO UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "DerivedExitCode=0:0 RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A "
    "SubmitTime=2026-12-04T17:14:25 EligibleTime=2026-12-04T17:14:25 "
    "AccrueTime=2026-12-04T17:14:25 StartTime=2026-12-04T17:14:26 EndTime=Unknown Deadline=N/A "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-04T17:14:26 Scheduler=Main "
    "Partition=debug AllocNode:Sid=localhost:4713 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "JOB_GRES=(null)   Nodes=vm CPU_IDs=0 Mem=0 GRES= MinCPUsNode=1 MinMemoryNode=0 "
    "MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=YES Contiguous=0 "
    "Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp Comment=x OverSubscribe=NO  "
    "StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= ";

TEST(SlurmParse, AJobNameOrCommentCannotPoseAsFields) {
  // Fails on a reader that splits the whole line (the name's OverSubscribe=NO came first).
  Job j = parse_job(kInjectedName, "bench OverSubscribe=NO");
  EXPECT_EQ(j.name, "bench OverSubscribe=NO");
  EXPECT_EQ(j.oversubscribe, "YES");
  EXPECT_FALSE(j.exclusive());
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.nodes.at("vm").cpu_ids, (std::vector<int>{0}));
  // A name with a newline (sbatch takes one; scontrol -o prints it raw), posing as the next line.
  std::string nl = kInjectedName;
  nl.replace(nl.find("bench OverSubscribe=NO"), 22, "a\n   OverSubscribe=NO");
  Job k = parse_job(nl, "a\n   OverSubscribe=NO");
  EXPECT_EQ(k.oversubscribe, "YES");
  // Allocation groups written into a free-text field after the real ones are not read.
  std::string groups = kInjectedName;
  groups.replace(groups.find("Comment=x"), 9,
                 "Comment=x Nodes=vm CPU_IDs=0-63 Mem=0 GRES=gpu:8(IDX:0-7)");
  Job g = parse_job(groups, "bench OverSubscribe=NO");
  EXPECT_EQ(g.nodes.at("vm").cpu_ids, (std::vector<int>{0}));
  EXPECT_TRUE(g.nodes.at("vm").gpu_idx.empty());
  // squeue's name must be the one scontrol printed, verbatim.
  EXPECT_THROW(parse_job(kInjectedName, "bench"), std::invalid_argument);
  EXPECT_THROW(parse_job(kInjectedName, "other"), std::invalid_argument);
}

TEST(SlurmJudge, ExclusiveJobHoldsHostAndGpu) {
  EXPECT_EQ(judge(evidence(kExclusive, false, std::nullopt)), "");
  EXPECT_EQ(judge(evidence(kExclusive, true, 1)), "");
  EXPECT_EQ(judge(evidence(kExclusive, true, std::nullopt)), "");
}

TEST(SlurmJudge, TokenIsComparedWithWhatSlurmSays) {
  // Planted: the pid's job not compared with the token -> "": failed here.
  Evidence e = evidence(kExclusive, false, std::nullopt);
  e.pid_job = "2";
  EXPECT_NE(judge(e).find("token mismatch"), std::string::npos) << judge(e);
  e.pid_job = "";
  EXPECT_NE(judge(e).find("outside job 1"), std::string::npos) << judge(e);
  e = evidence(kExclusive, false, std::nullopt);
  e.token_job = "7";
  e.pid_job = "7";
  EXPECT_NE(judge(e).find("token mismatch"), std::string::npos) << judge(e);
}

TEST(SlurmJudge, EndedOrRequeuedJobs) {
  // Planted: JobState not checked -> a TIMEOUT job judged "": failed here.
  Evidence e = evidence(shared_gpu_job("3", "0", "TIMEOUT"), true, 0);
  EXPECT_NE(judge(e).find("is TIMEOUT (Job's time limit exhausted), not RUNNING"),
            std::string::npos)
      << judge(e);
  // A job being ended still holds its allocation at a later check while this process is in it,
  // never at the grant. Planted: ending_ok ignored -> the CANCELLED job's end check failed here.
  e = evidence(kExclusive, false, std::nullopt);
  e.job.state = "CANCELLED";
  EXPECT_NE(judge(e).find("is CANCELLED, not RUNNING"), std::string::npos) << judge(e);
  e.ending_ok = true;
  EXPECT_EQ(judge(e), "");
  e.job.state = "PENDING";
  EXPECT_NE(judge(e).find("not RUNNING"), std::string::npos) << judge(e);
  e = evidence(kExclusive, false, std::nullopt);
  e.restarts_at_grant = 0;
  e.job.restarts = 1;
  EXPECT_NE(judge(e).find("requeued"), std::string::npos) << judge(e);
  e = evidence(kExclusive, false, std::nullopt);
  e.host = "other";
  EXPECT_NE(judge(e).find("not on this node other"), std::string::npos) << judge(e);
}

TEST(SlurmJudge, HostArmsNeedTheNodeAlone) {
  // Planted: OverSubscribe not read (exclusive() always true) -> "": failed here.
  Evidence e = evidence(shared_gpu_job("3", "0"), false, std::nullopt);
  EXPECT_NE(judge(e).find("shares node vm (OverSubscribe=OK)"), std::string::npos) << judge(e);
  e = evidence(kExclusive, false, std::nullopt);
  e.others.push_back(parse_job(shared_gpu_job("4", "1"), "my bench"));
  EXPECT_NE(judge(e).find("job 4 (ana(1001)) is RUNNING on vm"), std::string::npos) << judge(e);
}

TEST(SlurmJudge, GpuBoundToThisJobAlone) {
  // The shared-node job holds GPU 0 by GRES: that GPU is its lease, GPU 1 is not.
  EXPECT_EQ(judge(evidence(shared_gpu_job("3", "0"), true, 0)), "");
  // Planted: the binding not checked (any index accepted) -> "": failed here.
  Evidence e = evidence(shared_gpu_job("3", "0"), true, 1);
  EXPECT_NE(judge(e).find("GPU 1 of vm is not bound to job 3 (its GPUs there: 0)"),
            std::string::npos)
      << judge(e);
  // Another job bound to the same GPU (a GRES misconfiguration, or shards): shared.
  // Planted: other jobs' GRES not compared -> "": failed here.
  e = evidence(shared_gpu_job("3", "0"), true, 0);
  e.others.push_back(parse_job(shared_gpu_job("5", "0-1"), "my bench"));
  EXPECT_NE(judge(e).find("GPU 0 of vm is shared: job 5"), std::string::npos) << judge(e);
  // A job on another GPU of the node does not share ours.
  e = evidence(shared_gpu_job("3", "0"), true, 0);
  e.others.push_back(parse_job(shared_gpu_job("6", "1"), "my bench"));
  EXPECT_EQ(judge(e), "");
  // Which GPU is unknown and the node is shared: refuse rather than guess.
  e = evidence(shared_gpu_job("3", "0"), true, std::nullopt);
  EXPECT_NE(judge(e).find("cannot tell which"), std::string::npos) << judge(e);
}

TEST(SlurmParse, SecondsUntil) {
  EXPECT_FALSE(seconds_until("Unknown", 0).has_value());
  EXPECT_FALSE(seconds_until("UNLIMITED", 0).has_value());
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 11;
  tm.tm_mday = 1;
  tm.tm_hour = 19;
  tm.tm_min = 13;
  tm.tm_sec = 4;
  tm.tm_isdst = -1;
  double end = static_cast<double>(std::mktime(&tm));
  auto left = seconds_until("2026-12-01T19:13:04", end - 300);
  ASSERT_TRUE(left.has_value());
  EXPECT_DOUBLE_EQ(*left, 300);
}

// Inside a Slurm job with no site choice the job is the lease; an explicit choice stands.
// Planted: Policy::load without the in-job default -> "file": failed here.
TEST(SlurmPolicy, DefaultInsideAJob) {
  ::setenv("CONVBENCH_LEASE_POLICY", "none", 1);
  ::unsetenv("CONVBENCH_LEASE_BACKEND");
  ::unsetenv("SLURM_JOB_ID");
  EXPECT_EQ(convbench::lease::Policy::load().backend, "file");
  ::setenv("SLURM_JOB_ID", "42", 1);
  EXPECT_EQ(convbench::lease::Policy::load().backend, "slurm");
  ::setenv("CONVBENCH_LEASE_BACKEND", "file", 1);
  EXPECT_EQ(convbench::lease::Policy::load().backend, "file");
  ::unsetenv("CONVBENCH_LEASE_BACKEND");
  ::unsetenv("SLURM_JOB_ID");
}
