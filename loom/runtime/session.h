#ifndef LOOM_RUNTIME_SESSION_H_
#define LOOM_RUNTIME_SESSION_H_

// Session: runs a Graph, TF1's tf.Session. Run(feeds, fetches, targets) prunes the graph
// to the nodes the fetches and targets need (a fed output's producer is not run), caches
// that execution plan per feed/fetch/target signature, and executes the kernels in
// topological order (chains such as Conv2D -> BiasAdd -> Relu as one fused kernel:
// graph_fusion.h, SessionOptions::fuse_ops); each kernel parallelizes itself over the Session's
// intra-op thread pool. Matrix products run in OpenBLAS's own threads, whose one process-wide count
// each Run sets to the Session's intra_op_threads as it starts (SetBlasThreads), so a Session alone
// in a process never oversubscribes the cores; Sessions running at the same time share whichever
// count was set last. Variables, iterators and other state live in the Session's ResourceMgr and
// persist across runs. The graph must outlive the Session; nodes may still be appended while it
// runs (plans stay valid because appended nodes never change an existing node's ancestors).
// Thread-safety: Run may be called from several threads.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/base/thread_pool.h"
#include "loom/graph/graph.h"
#include "loom/graph/resource.h"

namespace loom {

struct SessionOptions {
  // Threads for kernels, and OpenBLAS's thread count while this Session runs (see
  // above). Default: 0, the machine's core count.
  int intra_op_threads = 0;
  // Run chains such as Conv2D -> BiasAdd -> Relu as one kernel (graph_fusion.h: when, and
  // what stays the same). Default: true.
  bool fuse_ops = true;
};

struct RunOptions {
  // Record per-node timings into RunMetadata::step_stats. Default: false.
  bool trace = false;
};

struct NodeExecStats {
  std::string node_name;
  std::string op;
  int64_t start_micros = 0;  // since the Unix epoch
  int64_t end_micros = 0;
};

struct RunMetadata {
  std::vector<NodeExecStats> step_stats;
};

using FeedList = std::vector<std::pair<Output, Tensor>>;

class Session {
 public:
  explicit Session(Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds values for outputs (usually placeholders), runs what `fetches` and `targets`
  // need, and returns the fetched values in order. Errors name the node: a missing feed
  // (InvalidArgument), a feed of the wrong dtype or shape (InvalidArgument), an
  // uninitialized variable (FailedPrecondition), end of input (OutOfRange). In a graph
  // with a cond (ops/control.h), nodes on the untaken side of a Switch do not run: such
  // a target is skipped, and such a fetch is an InvalidArgument naming the Switch.
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<Output>& fetches,
                          const std::vector<Operation>& targets = {},
                          const RunOptions* options = nullptr, RunMetadata* metadata = nullptr);
  // Run({}, {fetch})[0] with optional feeds.
  Tensor Eval(Output fetch, const FeedList& feeds = {});
  // Runs `target` for its effect.
  void RunTarget(Operation target, const FeedList& feeds = {});

  Graph& graph() const { return graph_; }
  ResourceMgr& resources() { return resources_; }
  ThreadPool& pool() { return pool_; }
  // How many Run calls have started (step ids for kernels).
  int64_t num_runs() const { return run_counter_; }

  // Variable values by variable node name, for savers. ReadVariable throws
  // FailedPrecondition when uninitialized; WriteVariable checks dtype and shape.
  Tensor ReadVariable(const std::string& name);
  void WriteVariable(const std::string& name, const Tensor& value);
  bool VariableInitialized(const std::string& name);

 private:
  struct Plan;
  const Plan& GetPlan(const FeedList& feeds, const std::vector<Output>& fetches,
                      const std::vector<Operation>& targets);
  std::unique_ptr<Plan> BuildPlan(const FeedList& feeds, const std::vector<Output>& fetches,
                                  const std::vector<Operation>& targets) const;

  Graph& graph_;
  SessionOptions options_;
  ThreadPool pool_;
  ResourceMgr resources_;
  std::mutex plans_mu_;
  std::unordered_map<std::string, std::unique_ptr<Plan>> plans_;
  std::atomic<int64_t> run_counter_{0};
};

}  // namespace loom

#endif  // LOOM_RUNTIME_SESSION_H_
