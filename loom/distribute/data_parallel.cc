#include "loom/distribute/data_parallel.h"

#include <algorithm>

#include "loom/base/thread_pool.h"
#include "loom/distribute/hooks.h"
#include "loom/distribute/replica_agreement.h"
#include "loom/distribute/replica_dataset.h"

namespace loom::distribute {
namespace {

class DataParallelImpl : public TrainDistribution {
 public:
  DataParallelImpl(std::shared_ptr<Communicator> comm, DataParallelOptions options)
      : comm_(std::move(comm)), options_(options) {}

  int num_replicas() const override { return comm_->size(); }
  int replica_id() const override { return comm_->rank(); }

  data::Dataset ReplicaInput(const data::Dataset& dataset) const override {
    return ReplicaDataset(dataset, comm_, options_.shard_input);
  }
  bool shards_rows() const override { return options_.shard_input; }

  std::unique_ptr<train::Optimizer> WrapOptimizer(
      std::unique_ptr<train::Optimizer> optimizer) const override {
    if (dynamic_cast<DistributedOptimizer*>(optimizer.get()) != nullptr) return optimizer;
    return std::make_unique<DistributedOptimizer>(std::move(optimizer), options_.optimizer);
  }

  void CheckTrainGraph(const Graph& graph, const data::Dataset* input) const override {
    // Self-sharded input (shard_input = false) is each rank's own, so it may differ.
    CheckReplicasAgree(*comm_, graph, options_.shard_input ? input : nullptr);
    if (CountAllReduceBuckets(graph) + CountAllGatherRows(graph) == 0) {
      throw FailedPrecondition(
          "distributed training over ", comm_->size(),
          " ranks: the training graph does not "
          "average its gradients across ranks, so each rank would train a model of its own; "
          "wrap the model function's optimizer: DistributeOptimizer(config, std::move(opt)) "
          "or distribute::DistributedOptimizer");
    }
  }

  train::HookList StartHooks(const std::string& iterator_resource) const override {
    BroadcastOptions broadcast;
    if (!iterator_resource.empty()) broadcast.iterator_resources.push_back(iterator_resource);
    return {std::make_shared<BroadcastGlobalVariablesHook>(comm_, broadcast)};
  }
  train::HookList EndHooks() const override { return {std::make_shared<StopAgreementHook>(comm_)}; }

  int64_t BroadcastFromChief(int64_t value) const override {
    return BroadcastInt(*comm_, value, 0);
  }
  void CheckSameOnEveryReplica(std::string_view what, const std::string& value) const override {
    CheckReplicasAgreeOn(*comm_, what, value);
  }
  void Barrier() const override { AnyRank(*comm_, false); }

 private:
  std::shared_ptr<Communicator> comm_;
  DataParallelOptions options_;
};

}  // namespace

std::shared_ptr<TrainDistribution> DataParallel(std::shared_ptr<Communicator> comm,
                                                DataParallelOptions options) {
  if (comm == nullptr) throw InvalidArgument("DataParallel: null communicator");
  return std::make_shared<DataParallelImpl>(std::move(comm), options);
}

RunConfig DataParallelRunConfig(RunConfig config, std::shared_ptr<Communicator> comm,
                                DataParallelOptions options) {
  if (config.session_config.intra_op_threads == 0 && comm != nullptr) {
    config.session_config.intra_op_threads =
        std::max(1, ThreadPool::DefaultThreadCount() / std::max(1, comm->local_size()));
  }
  // Rank r's graph seed is tf_random_seed + r: dropout and other random ops draw
  // independent masks on each rank's rows (the initial values are rank 0's anyway: they
  // are broadcast), instead of the same mask on every rank.
  if (config.tf_random_seed && comm != nullptr) *config.tf_random_seed += comm->rank();
  config.train_distribute = DataParallel(std::move(comm), options);
  return config;
}

}  // namespace loom::distribute
