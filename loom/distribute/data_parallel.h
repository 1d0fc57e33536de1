#ifndef LOOM_DISTRIBUTE_DATA_PARALLEL_H_
#define LOOM_DISTRIBUTE_DATA_PARALLEL_H_

// DataParallel: the TrainDistribution (estimator/distribution.h) of a job whose ranks
// each hold a full replica of the model and take 1/N of every global batch, the gradients
// averaged by all-reduce (DistributedOptimizer), the chief's state broadcast at start
// (BroadcastGlobalVariablesHook), stops agreed (StopAgreementHook, ReplicaDataset).
//
//   auto comm = distribute::MpiCommunicator();              // under `mpirun -np N`
//   loom::RunConfig config = distribute::DataParallelRunConfig(
//       {.model_dir = "runs/1", .tf_random_seed = 42}, comm);
//   loom::DNNClassifier classifier({...}, config);          // canned: nothing else to do
//   classifier.Train(input_fn, {.max_steps = 1000});        // input_fn: GLOBAL batches
//
// A model_fn wraps its optimizer itself: DistributeOptimizer(config, std::move(opt)).
#include <memory>

#include "loom/distribute/communicator.h"
#include "loom/distribute/distributed_optimizer.h"
#include "loom/estimator/run_config.h"

namespace loom::distribute {

struct DataParallelOptions {
  // The Estimator takes this rank's rows of each global batch (ReplicaDataset). false:
  // the input_fn shards its own input (RunConfig::input_context()) and yields per-replica
  // batches. Default: true.
  bool shard_input = true;
  DistributedOptimizerOptions optimizer;
};

std::shared_ptr<TrainDistribution> DataParallel(std::shared_ptr<Communicator> comm,
                                                DataParallelOptions options = {});

// `config` for one rank of the job: train_distribute = DataParallel(comm, options); when
// session_config.intra_op_threads is 0 (the default), cores / (ranks on this machine)
// threads, so N ranks on one machine do not oversubscribe it; and tf_random_seed, when
// set, becomes tf_random_seed + rank, so random ops (dropout) draw independent values on
// each rank (rank 0 keeps the seed; initial values are rank 0's through the broadcast).
RunConfig DataParallelRunConfig(RunConfig config, std::shared_ptr<Communicator> comm,
                                DataParallelOptions options = {});

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_DATA_PARALLEL_H_
