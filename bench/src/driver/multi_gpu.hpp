// bench_conv --gpus LIST|all: the same plan on several GPUs of one node at once. One child
// bench_conv per GPU (CUDA_VISIBLE_DEVICES=<its UUID>) rather than one process driving them all:
// each GPU gets its own CUDA context, its own lease and its own crash domain, and each child's
// record is an ordinary record. The children start together: each, once it holds its lease and
// passed its gate, says so on a shared pipe and waits on a second pipe that the launcher closes
// when every child has said so (or died), so their rounds overlap. The launcher writes the node
// summary <out> linking the per-GPU records <out stem>.gpu<i>.json.
#pragma once

#include <string>
#include <vector>

#include "plan/cli.hpp"

namespace convbench::bench {

// The node's GPUs `spec` names ("all" or "0,2"); throws UsageError when NVML lists none or an index
// is not there. CONVBENCH_TEST_NODE_GPUS=N stands in a node of N GPUs for host-only tests.
std::vector<int> node_gpus(const std::string &spec);

// "<stem>.gpu<i>.json" beside the node summary `out` (".json" stripped from its
// end).
std::string gpu_record_path(const std::string &out, int index);

// Runs one child per GPU and writes the node summary; the exit status is 0 when
// every child's is, else the first non-zero one in GPU order.
int run_node(const Options &opt, int argc, const char *const *argv);

// In a child of run_node: says this run holds its lease and passed its gate,
// then waits until every sibling has. Elsewhere: returns at once.
void wait_at_node_barrier();

} // namespace convbench::bench
