#ifndef LOOM_DISTRIBUTE_REPLICA_DATASET_H_
#define LOOM_DISTRIBUTE_REPLICA_DATASET_H_

// ReplicaDataset: one rank's input for data-parallel training, made from a dataset that
// every rank builds alike.
//   - shard_rows (the Estimator's default): `global` yields GLOBAL batches, the same on
//     every rank (same pipeline, same seed); rank r of N takes rows [r*b/N, (r+1)*b/N) of
//     each batch of b rows: data::ShardGlobalBatches (data/global_batches.h), which reads,
//     decodes and maps only rank r's rows where the pipeline allows (the sharding goes
//     below the Batch and its Maps). The sequence of global batches does not depend on
//     N, so 1, 2 or 3 ranks see the same rows at the same step, and the saved position
//     is global: a checkpoint written by the chief resumes any N exactly (one process
//     included: the Estimator wraps its input in ShardGlobalBatches(1, 0)). A last global
//     batch the ranks cannot share evenly ends the input on every rank (a warning).
//   - !shard_rows: `global` is already this rank's shard (an input_fn that shards itself
//     with an InputContext); elements pass through unchanged. Its position is this rank's:
//     the stage's identity names N (num_input_pipelines), so a checkpoint resumed on
//     another number of ranks is an error naming both (restart the input to proceed).
// Either way the end of input is AGREED: each GetNext asks every rank (one tiny
// collective) whether it has an element, and when any rank has none, every rank's input
// ends at that same step. So a shorter shard stops every rank cleanly, never a hang.
// GetNext is collective: it must run on the thread that drives training (the
// IteratorGetNext kernel) and be the outermost stage (after any Prefetch).
#include <memory>

#include "loom/data/dataset.h"
#include "loom/distribute/communicator.h"

namespace loom::distribute {

data::Dataset ReplicaDataset(const data::Dataset& global, std::shared_ptr<Communicator> comm,
                             bool shard_rows = true);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_REPLICA_DATASET_H_
