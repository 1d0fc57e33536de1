#ifndef LOOM_DATA_DATASET_IMPL_H_
#define LOOM_DATA_DATASET_IMPL_H_

// For writers of sources and transformations. A stage is one .cc file holding a
// DatasetImpl subclass (immutable: inputs, spec, options), its Iterator subclass (the
// cursor: position, random state, Save/Restore) and the factory users call. Adding a file
// source (npy, TFRecord, CSV, ...) is one file:
//
//   class NpyDataset : public DatasetImpl {
//    public:
//     NpyDataset(...) : DatasetImpl("NpyFile", spec, /*inputs=*/{}) {}
//    protected:
//     std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override;
//   };
//   Dataset NpyFile(std::string path) { return Dataset(std::make_shared<NpyDataset>(...)); }
//
// A source whose elements are rows of tensors it can view (a memory-mapped array) should
// instead say indexed() and implement MakeRows/MakeIndexCursor: it then gets the fast
// path (index shuffling, memcpy batching, index-only save/restore) for free.
// Thread-safety: DatasetImpls are immutable after construction.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/data/dataset.h"
#include "loom/graph/op_def.h"

namespace loom::data {

// Placeholder values bound by an initializer op: (node, output index) -> fed tensor.
using Bindings = std::map<std::pair<const Node*, int>, Tensor>;

struct ShardRequest;

struct IteratorContext {
  // Values of the graph Outputs that symbolic sources read. Default: none.
  std::shared_ptr<const Bindings> bindings;
  // Which pass of the enclosing Repeat(s) this iterator serves (0 for the first), so that
  // Shuffle can reshuffle each pass deterministically.
  uint64_t iteration = 0;
  // Unseeded stages (Shuffle without a seed) derive their seeds from this (random_base->
  // Get()): one per top-level iterator, saved with its state, so a restore replays it.
  std::shared_ptr<RandomBase> random_base;
  // On the fast path, the row count of the RowSource that the index cursors address (set
  // by the gather iterators): a row index read back from saved state is checked against
  // it. Default: -1, unknown (only the lower bound is checked).
  int64_t num_rows = -1;
  // Set by ShardGlobalBatches (global_batches.h): this iterator serves one shard's rows of
  // each global batch. Default: none.
  std::shared_ptr<const ShardRequest> shard;
};

// A context with a new random base: from `seed` when given, else drawn on first use.
IteratorContext TopLevelContext(std::shared_ptr<const Bindings> bindings = nullptr,
                                std::optional<uint64_t> seed = std::nullopt);

class DatasetImpl;
// The identity a saved iterator state is checked against: one line per stage in pre-order,
// indented by depth, "<stage> <Params()>", then "spec <spec>".
std::string PipelineIdentity(const DatasetImpl& dataset);
// A top-level iterator over `dataset` (TopLevelContext + set_pipeline).
std::unique_ptr<Iterator> MakeTopLevelIterator(const DatasetImpl& dataset,
                                               std::shared_ptr<const Bindings> bindings,
                                               std::optional<uint64_t> seed);

// Rows of named tensors along dim 0 (the fast path's data). Immutable, thread-safe.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual int64_t num_rows() const = 0;
  // Row i as an element; views of the source where possible (zero-copy).
  virtual Element Row(int64_t index) const = 0;
  // Rows `indices` stacked into new tensors with leading dim indices.size().
  virtual Element Gather(std::span<const int64_t> indices) const = 0;
};

// A resumable stream of items (row indices on the fast path, elements otherwise).
// Stages whose logic is the same for both (Shuffle, Repeat, Take, Skip, Shard) write it
// once as a Cursor<Item> template.
template <typename Item>
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual std::optional<Item> Next() = 0;
  virtual void Save(StateWriter& writer) = 0;
  virtual void Restore(StateReader& reader) = 0;
};
using IndexCursor = Cursor<int64_t>;

class DatasetImpl {
 public:
  DatasetImpl(std::string stage, ElementSpec spec,
              std::vector<std::shared_ptr<const DatasetImpl>> inputs);
  virtual ~DatasetImpl() = default;
  DatasetImpl(const DatasetImpl&) = delete;
  DatasetImpl& operator=(const DatasetImpl&) = delete;

  const std::string& stage() const { return stage_; }
  const ElementSpec& spec() const { return spec_; }
  const std::vector<std::shared_ptr<const DatasetImpl>>& inputs() const { return inputs_; }
  // "Batch(Shuffle(FromTensorSlices))".
  std::string DebugString() const;
  // The parameters that shape this stage's output, as "name=value" words
  // ("batch_size=8 drop_remainder=false"): part of PipelineIdentity, so a saved position
  // is never restored into a pipeline that would read it differently. Knobs that leave the
  // elements unchanged (Prefetch's buffer, Map's parallelism) stay out, so tuning them
  // keeps checkpoints restorable. Default: "" (the stage has none, or only functions).
  virtual std::string Params() const { return ""; }

  // A fresh iterator: the fast-path gather iterator when gather_plan() says so, else
  // MakeIteratorInternal.
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const;

  // Sharding (global_batches.h). passes_shard(): this stage maps each input element to
  // one output element, in order, whatever the other elements are (Map, Prefetch), so a
  // shard of its output is the stage over a shard of its input and the request moves to
  // the input. Such a stage makes its iterator with LocalSpec(spec(), ctx) and hands ctx
  // to its input. Any other stage is sharded on its output (MakeIterator wraps it).
  // Default: false.
  virtual bool passes_shard() const { return false; }
  // The batch size of a Batch, which takes a shard request above it (its iterator batches
  // batch_size / num_shards rows of its shard). Default: nullopt.
  virtual std::optional<int64_t> shardable_batch_size() const { return std::nullopt; }

  // Graph Outputs this stage reads from the bindings (placeholder-backed sources).
  virtual std::vector<Output> symbolic_inputs() const { return {}; }

  // Fast path. indexed(): every element is Row(i) of MakeRows() for the indices that
  // MakeIndexCursor yields.
  virtual bool indexed() const { return false; }
  // REQUIRES: indexed().
  virtual std::shared_ptr<const RowSource> MakeRows(const IteratorContext& ctx) const;
  virtual std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext& ctx) const;

  // Elements are rows of `indexed` (batch_size 0) or batches of its rows.
  struct GatherPlan {
    const DatasetImpl* indexed = nullptr;
    int64_t batch_size = 0;
    bool drop_remainder = false;
  };
  // Default: {this, 0} when indexed(), else none.
  virtual std::optional<GatherPlan> gather_plan() const;

 protected:
  virtual std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const;

 private:
  std::string stage_;
  ElementSpec spec_;
  std::vector<std::shared_ptr<const DatasetImpl>> inputs_;
};

// ---- Helpers shared by stages (cursor.cc, gather.cc). ----

// An Element cursor reading an iterator, and an iterator reading an Element cursor.
std::unique_ptr<Cursor<Element>> CursorFromIterator(std::unique_ptr<Iterator> it);
std::unique_ptr<Iterator> IteratorFromCursor(std::string stage, ElementSpec spec,
                                             std::unique_ptr<Cursor<Element>> cursor);

// Counters in saved state (elements taken, passes, positions) above this are corrupt:
// they grow by one per element and must never overflow.
inline constexpr int64_t kMaxRestoredCount = int64_t{1} << 62;

// Checks of values read back from saved state (Restore): each throws DataLoss "<stage>
// state is corrupt: ..." so that a hostile or damaged checkpoint never reaches a kernel.
// A row index must lie in [0, ctx.num_rows) (when known); an element must match `spec`.
void CheckRestoredItem(const std::string& stage, const IteratorContext& ctx,
                       const ElementSpec& spec, int64_t row);
void CheckRestoredItem(const std::string& stage, const IteratorContext& ctx,
                       const ElementSpec& spec, const Element& element);
inline void CheckRestoredElement(const std::string& stage, const ElementSpec& spec,
                                 const Element& element) {
  CheckRestoredItem(stage, IteratorContext{}, spec, element);
}

// Item (de)serialization for Cursor templates.
inline void WriteItem(StateWriter& w, int64_t i) { w.Write<int64_t>(i); }
inline void WriteItem(StateWriter& w, const Element& e) { w.WriteElement(e); }
template <typename Item>
Item ReadItem(StateReader& r);
template <>
inline int64_t ReadItem<int64_t>(StateReader& r) {
  return r.Read<int64_t>();
}
template <>
inline Element ReadItem<Element>(StateReader& r) {
  return r.ReadElement();
}

// The fast-path iterators (gather.cc): rows or batches of rows; and Prefetch over them,
// gathering on a worker thread while the consumer advances the index stream.
std::unique_ptr<Iterator> MakeGatherIterator(const DatasetImpl::GatherPlan& plan,
                                             const IteratorContext& ctx, std::string stage,
                                             ElementSpec spec);
std::unique_ptr<Iterator> MakeGatherPrefetchIterator(const DatasetImpl::GatherPlan& plan,
                                                     const IteratorContext& ctx, ElementSpec spec,
                                                     int64_t buffer_size);

// Stacks equally shaped elements into a batch; `stage` names the caller in errors, which
// name the element's index in the input (first_index + position), the component and both
// shapes. Consumes `elements`: string values are moved, not copied, out of tensors whose
// buffer no other Tensor shares.
Element StackElements(std::vector<Element>&& elements, const ElementSpec& spec,
                      const std::string& stage, int64_t first_index);

// ---- Sharding below the first Batch (global_batches.cc). ----

class ShardLedger;
// One shard's part of a pipeline of global batches of global_batch rows: shard `index`
// of num_shards takes rows [index*block, (index+1)*block) of each, block = global_batch /
// num_shards. Above the first Batch (at_batch) the request travels with the context
// through passing stages to that Batch, which batches `block` rows and hands the request
// on (at_batch false); below it, element q of the stream (counted from the request's
// start) belongs to the shard when (q % global_batch) / block == index, and the request
// travels down through passing stages to the first stage that does not pass it, whose
// output is then sharded: elements of other shards are skipped (Iterator::Skip, or an
// index cursor's Next), never gathered, decoded or mapped.
struct ShardRequest {
  int64_t global_batch = 1;
  int64_t num_shards = 1;
  int64_t index = 0;
  bool at_batch = true;
  std::shared_ptr<ShardLedger> ledger;
  int64_t block() const { return global_batch / num_shards; }
};
// `spec` with a leading dim of global_batch made block, above the first Batch; else spec.
ElementSpec LocalSpec(const ElementSpec& spec, const IteratorContext& ctx);
// The context for the input of the Batch that takes the request (at_batch false).
IteratorContext BelowBatch(IteratorContext ctx);
IteratorContext WithoutShard(IteratorContext ctx);
// A stage that reads ahead of its consumer (Prefetch, a parallel Map) says so while its
// iterator is made under a shard request: the position is then recorded after each block.
void NoteReadAhead(const IteratorContext& ctx);
// The shard of `input`'s elements (or row indices) that ctx.shard names; input itself
// when ctx has no request.
std::unique_ptr<Iterator> MakeShardIterator(std::unique_ptr<Iterator> input,
                                            const IteratorContext& ctx);
std::unique_ptr<IndexCursor> MakeShardIndexCursor(std::unique_ptr<IndexCursor> input,
                                                  const IteratorContext& ctx);

// The op record of Dataset::Reduce's graph node (reduce.cc), for RegisterDataOps.
const OpDef& ReduceDatasetOp();

// The attributes of a node whose outputs are one element's components (IteratorGetNext,
// ReduceDataset) and the shape rule that reads them (iterator_ops.cc).
inline constexpr Attr<std::vector<DType>> kOutputTypes{"output_types"};
inline constexpr Attr<std::vector<Shape>> kOutputShapes{"output_shapes"};
void ElementOutputShapes(InferenceContext& c);

// The host-side object (a dataset, a fold) that attribute `key` of c's node holds; a
// graph loaded without it (host objects are not serialized) is FailedPrecondition at
// the node, saying to rebuild the input pipeline.
const HostObject& HostObjectAttr(const KernelContext& c, const Attr<HostObject>& key);

// Throws InvalidArgument "<stage>: <message>" unless `condition`.
template <typename... Args>
void CheckArg(bool condition, const std::string& stage, const Args&... message) {
  if (!condition) throw InvalidArgument(stage, ": ", message...);
}

}  // namespace loom::data

#endif  // LOOM_DATA_DATASET_IMPL_H_
