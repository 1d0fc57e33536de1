#ifndef LOOM_DISTRIBUTE_REPLICA_AGREEMENT_H_
#define LOOM_DISTRIBUTE_REPLICA_AGREEMENT_H_

// CheckReplicasAgree: a data-parallel job is correct only when every rank built the same
// training graph (same variables, same shapes, same optimizer and its constants, same
// all-reduce buckets) over the same global input pipeline. A rank that differs (another
// model_fn, other params, another batch_size, an older binary on one host) would otherwise
// broadcast into variables of another shape, all-reduce buffers of other sizes (an MPI
// truncation error, a hang, or garbage) or, where the sizes happen to match, train
// silently wrong numbers. So the Estimator calls this once, right after building the
// training graph and before any variable or step collective, on every rank.
//
// What is compared: one line per node in id order (name, op, inputs, control inputs,
// attributes, output shapes; a tensor attribute by its dtype, shape, a crc32c of its
// bytes and, when it has at most 8 numbers, its values), leaving out the "seed"
// attribute (rank r's graph seed is tf_random_seed + r on purpose: dropout masks differ
// per rank); and, when given, the input pipeline's identity (PipelineIdentity: every
// stage and its parameters), which does not depend on N or the rank for the
// Estimator's global batches.
#include "loom/data/dataset.h"
#include "loom/distribute/communicator.h"
#include "loom/graph/graph.h"

namespace loom::distribute {

// Collective (one AllGather). Throws FailedPrecondition on every rank, with the same
// message, when some rank's graph or input differs from rank 0's: it names the lowest
// such rank, the first node (or pipeline stage) that differs and both versions.
// `input` may be null (an input_fn that shards its own input legitimately differs).
void CheckReplicasAgree(Communicator& comm, const Graph& graph, const data::Dataset* input);

// Collective (one AllGather). Throws FailedPrecondition on every rank, with the same
// message, when some rank's `value` differs from rank 0's: it names the lowest such rank,
// `what` (e.g. "Train's steps and max_steps") and both values.
void CheckReplicasAgreeOn(Communicator& comm, std::string_view what, const std::string& value);

// The lines CheckReplicasAgree compares for `graph` (exposed for tests).
std::string ReplicaGraphSignature(const Graph& graph);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_REPLICA_AGREEMENT_H_
