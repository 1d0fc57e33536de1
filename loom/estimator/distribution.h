#ifndef LOOM_ESTIMATOR_DISTRIBUTION_H_
#define LOOM_ESTIMATOR_DISTRIBUTION_H_

// What an Estimator needs to know to train as one replica of a data-parallel job (TF's
// RunConfig.train_distribute / tf.distribute.Strategy). The estimator layer only defines
// the interface; loom/distribute implements it over MPI (distribute::DataParallel) and
// sets it in RunConfig::train_distribute. Unset, the Estimator is one process, as always.
//
// With a TrainDistribution, Estimator::Train (estimator.h) differs in these ways only:
//   - the Dataset input_fn returns is passed through ReplicaInput (by default: this
//     replica's rows of each global batch, with the end of input agreed by all replicas);
//     an input_fn that builds its own iterator is InvalidArgument;
//   - CheckTrainGraph must accept the training graph (its gradients are averaged across
//     replicas: canned estimators do it through DistributeOptimizer below);
//   - chief-only hooks (CheckpointSaverHook, SummarySaverHook, StepCounterHook,
//     LoggingTensorHook, spec.training_chief_hooks) run on the chief only, so no two
//     processes write the same file; StartHooks run first (after the dataset
//     initializer) and EndHooks last on every replica;
//   - steps and max_steps must agree (CheckSameOnEveryReplica, before anything else);
//     the "max_steps already reached" decision is the chief's; the session does not
//     recover from Aborted/Unavailable (a replica cannot rejoin a step alone);
//   - it ends with Barrier, after the chief's last checkpoint save.
// Thread-safety: as the Estimator's (one thread per replica).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loom/data/dataset.h"
#include "loom/train/optimizer.h"
#include "loom/train/session_run_hook.h"

namespace loom {

// TF's tf.distribute.InputContext: what an input_fn that shards its own input needs.
struct InputContext {
  // The number of input pipelines (replicas) and this one's id in [0, num).
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;
  // global_batch_size / num_replicas_in_sync; throws InvalidArgument naming both when it
  // does not divide.
  int64_t GetPerReplicaBatchSize(int64_t global_batch_size) const;
};

class TrainDistribution {
 public:
  virtual ~TrainDistribution() = default;

  virtual int num_replicas() const = 0;
  // In [0, num_replicas); 0 is the chief.
  virtual int replica_id() const = 0;
  bool is_chief() const { return replica_id() == 0; }
  InputContext input_context() const { return {num_replicas(), replica_id(), num_replicas()}; }

  // This replica's input, from the Dataset that input_fn returned on this replica.
  virtual data::Dataset ReplicaInput(const data::Dataset& dataset) const = 0;
  // Whether ReplicaInput takes rows of the same global pipeline on every replica (then
  // the chief's input position is broadcast with the variables).
  virtual bool shards_rows() const = 0;
  // `optimizer` made to average its gradients across replicas.
  virtual std::unique_ptr<train::Optimizer> WrapOptimizer(
      std::unique_ptr<train::Optimizer> optimizer) const = 0;
  // Collective (every replica calls it once per Train, right after building the training
  // graph, before any other collective of the session). Throws FailedPrecondition when
  // the training graph does not average gradients (a model_fn that forgot
  // DistributeOptimizer would train num_replicas different models), or when a replica's
  // graph or `input` (this replica's input, ReplicaInput's result; null without a Dataset)
  // differs from the chief's, naming the first difference.
  virtual void CheckTrainGraph(const Graph& graph, const data::Dataset* input) const = 0;
  // Hooks for every replica, run right after the dataset initializer, before all
  // others (so StopAtStepHook and the rest see the chief's global step): the chief's
  // state broadcast after the session is created or restored (with `iterator_resource`'s
  // position when not empty).
  virtual train::HookList StartHooks(const std::string& iterator_resource) const = 0;
  // Hooks for every replica, run after all others: the stop agreement.
  virtual train::HookList EndHooks() const = 0;
  // Collective: the chief's `value` on every replica.
  virtual int64_t BroadcastFromChief(int64_t value) const = 0;
  // Collective (one all-gather). Throws FailedPrecondition on every replica, with the same
  // message, when some replica's `value` differs from the chief's, naming the lowest such
  // replica, `what` and both values. For arguments that no graph shows but that every
  // replica must share (Train's steps and max_steps: one replica stopping or skipping
  // alone would leave the others waiting in a collective).
  virtual void CheckSameOnEveryReplica(std::string_view what, const std::string& value) const = 0;
  // Collective: returns once every replica has called it (Train ends with it, after the
  // chief's last checkpoint save, so that what a replica does next sees that checkpoint).
  virtual void Barrier() const = 0;
};

}  // namespace loom

#endif  // LOOM_ESTIMATOR_DISTRIBUTION_H_
