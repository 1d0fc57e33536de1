#ifndef LOOM_DATA_GLOBAL_BATCHES_H_
#define LOOM_DATA_GLOBAL_BATCHES_H_

// ShardGlobalBatches: one shard's part of a pipeline of GLOBAL batches, for data-parallel
// training (distribute/replica_dataset.h builds it for each rank). `global` yields batches
// of B rows; shard `index` of `num_shards` (N) yields rows [index*B/N, (index+1)*B/N) of
// each, so the union of the shards' k-th batches is the global pipeline's k-th batch, in
// order, whatever N is.
//
// Where the pipeline allows, each shard reads, decodes and maps only its own rows. The
// request goes down through the stages above the first Batch that map each element on its
// own (Map with an ordered output, Prefetch; ParseExamples is a Map), that Batch batches
// B/N rows, and below it the request goes down through such stages again to the first
// stage that does not pass it, whose output is sharded:
//   - over an index-addressable source (FromTensorSlices, Range, FromNpy, FromIdx) and
//     the Shuffle/Repeat/Take/Skip/Shard over it: the row indices, so other shards' rows
//     are never gathered (memory-mapped pages never touched);
//   - over a file source (TFRecordDataset, CsvDataset, TextLineDataset) directly or
//     through Maps: other shards' records are skipped without being decoded (no tensor,
//     no field parsing), and the Maps (ParseExamples) see only this shard's records;
//   - otherwise (a Shuffle over records, an Interleave, a Filter): other shards' elements
//     are produced by that stage and dropped; the stages above it run on this shard's.
// A Map above the first Batch sees B/N rows: a function that mixes rows (normalizing by a
// batch statistic) sees this shard's rows only.
// A pipeline without such a Batch (a PaddedBatch, or a Filter/Shuffle/Repeat above the
// Batch) is sharded the old way: every shard builds each global batch and keeps its rows
// (views, no copy); a short batch whose rows N divides is shared as rows/N each, and one
// it does not divide (each epoch's last, with a Repeat above the Batch) is skipped by
// every shard alike (a warning, once): the input goes on.
//
// The end of input: a shard whose batch is short (the last, partial, global batch) or
// missing ends the input; `all_shards_have`, given, is asked with "this shard has a full
// batch" at every GetNext and must return whether every shard has (a collective, for
// ranks), so that every shard ends at the same batch.
//
// The saved state is GLOBAL: the number of global batches consumed and the position of
// the global stream below the shard (state of the stages below it, element count), the
// same for every shard up to where within the last batch it stopped; the pipeline
// identity does not name N or index. So a state saved by shard i of N restores into shard
// j of M (another number of ranks, or one process with N = 1) and continues at the next
// global batch exactly. Stages that read ahead (Prefetch, a parallel Map) make the
// shard record that position after each of its blocks (one Save of the stages below the
// shard per batch: cheap over row indices, a copy of the buffer for a Shuffle of records).
// Throws InvalidArgument when N does not divide the Batch's B, or the spec's batch dim.
#include <cstdint>
#include <functional>
#include <optional>

#include "loom/data/dataset.h"

namespace loom::data {

// Called by every shard at every GetNext with whether it has a full batch; returns whether
// all shards have. Default (empty): this shard's answer alone.
using AllShardsHaveFn = std::function<bool(bool this_shard_has)>;

Dataset ShardGlobalBatches(const Dataset& global, int64_t num_shards, int64_t index,
                           AllShardsHaveFn all_shards_have = nullptr);

// `global` when `dataset` is ShardGlobalBatches(global, 1, 0) (one process), else nullopt.
// A position saved by a plain iterator over `global` (before positions were global) fits
// `global`'s own iterator, not the shard's.
std::optional<Dataset> SingleShardSource(const Dataset& dataset);

// Whether ShardGlobalBatches reads only each shard's rows of `global` (a Batch reached
// through passing stages), not the whole global batch.
bool ShardsBelowBatch(const Dataset& global);

}  // namespace loom::data

#endif  // LOOM_DATA_GLOBAL_BATCHES_H_
