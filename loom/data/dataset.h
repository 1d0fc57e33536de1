#ifndef LOOM_DATA_DATASET_H_
#define LOOM_DATA_DATASET_H_

// Dataset: an immutable description of an input pipeline, TF's tf.data.Dataset. A cheap
// value type (a shared pointer to a const DatasetImpl); chaining methods return new
// Datasets and never change this one. Every Dataset knows its ElementSpec before it runs,
// and each transformation checks its input's spec when it is built (InvalidArgument naming
// the transformation and the component). Iterators hold the position and randomness; a
// dataset may have many iterators, each with its own state.
//
//   auto ds = FromTensorSlices({{"x", images}, {"label", labels}})   // zero-copy views
//                 .Shuffle(100000, {.seed = 42}).Repeat().Batch(256).Prefetch(2);
//   auto it = ds.MakeIterator();
//   while (auto batch = it->GetNext()) Train(batch->at("x"), batch->at("label"));
//
// Fast path: FromTensorSlices and Range are index-addressable; Shuffle/Repeat/Take/Skip/
// Shard over them permute and select row indices rather than tensors, Batch over them
// copies the chosen rows straight into the new batch tensors, and Prefetch over such a batch
// gathers on a worker while the consumer only advances the (cheap) index stream. Saving
// such a pipeline stores indices and RNG words, never elements.
// Graph use (MakeOneShotIterator & co.) is in iterator_ops.h. Adding a source or stage:
// dataset_impl.h. Thread-safety: Datasets are immutable and may be shared across threads.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/data/element.h"
#include "loom/data/iterator.h"
#include "loom/data/iterator_ops.h"
#include "loom/graph/graph.h"

namespace loom::data {

class DatasetImpl;
class Dataset;

// num_parallel_calls value: one worker per core. As Prefetch's buffer_size (TF's
// prefetch(AUTOTUNE)): kAutotunePrefetchBuffer elements, a fixed size (TF tunes it at run time).
inline constexpr int kAutotune = -1;
inline constexpr int kAutotunePrefetchBuffer = 2;

struct MapOptions {
  // Elements mapped concurrently on worker threads; 0 maps on the consumer's thread,
  // kAutotune uses one worker per core. Default: 0.
  int num_parallel_calls = 0;
  // Output in input order. false lets a fast element overtake a slow one. Default: true.
  bool deterministic = true;
  // The spec of fn's output. Default: unset, meaning fn keeps the input's spec.
  std::optional<ElementSpec> output_spec;
};

struct BatchOptions {
  // Drop a last batch smaller than batch_size (the leading dim is then static). Default: false.
  bool drop_remainder = false;
};

struct PaddedBatchOptions {
  // Per component, the shape to pad to; unknown dims pad to the batch's longest.
  // Default: empty, every dim pads to the batch's longest.
  std::map<std::string, Shape> padded_shapes;
  // Per component, a scalar to pad with. Default: zero (the empty string for strings).
  std::map<std::string, Tensor> padding_values;
  // Default: false.
  bool drop_remainder = false;
};

struct ShuffleOptions {
  // Default: unset, a nondeterministic seed per iterator (saved with its state).
  std::optional<uint64_t> seed;
  // A new order for each pass of an enclosing Repeat. Default: true.
  bool reshuffle_each_iteration = true;
};

struct InterleaveOptions {
  // Input elements whose datasets are open at once. Default: 0, one per core.
  int cycle_length = 0;
  // Consecutive elements taken from each before moving on. Default: 1.
  int block_length = 1;
  // >0 (or kAutotune): each open dataset prefetches on its own thread. Default: 0.
  int num_parallel_calls = 0;
};

struct WindowOptions {
  // Input elements between the starts of consecutive windows. Default: 0, the window size.
  int64_t shift = 0;
  // Input elements between consecutive elements of a window. Default: 1.
  int64_t stride = 1;
  // Drop the windows at the end that are shorter than the window size. Default: false.
  bool drop_remainder = false;
};

struct CacheOptions {
  // File system for a file cache. Default: nullptr, Env::Default().
  Env* env = nullptr;
};

using MapFn = std::function<Element(Element)>;
using PredicateFn = std::function<bool(const Element&)>;
using InterleaveFn = std::function<Dataset(const Element&)>;
// Reduce: the new state from the state and an element.
using ReduceFn = std::function<Element(Element state, Element element)>;
// GroupByWindow: an element's group key; the dataset a full (or last) group becomes; the
// window size of a key's groups.
using KeyFn = std::function<int64_t(const Element&)>;
using GroupReduceFn = std::function<Dataset(int64_t key, const Dataset& window)>;
using WindowSizeFn = std::function<int64_t(int64_t key)>;
// GroupByReducer: a key's initial state, and its state made an output element.
struct Reducer {
  std::function<Element(int64_t key)> init;
  ReduceFn reduce;
  std::function<Element(Element state)> finalize;
};

class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const DatasetImpl> impl);

  const ElementSpec& spec() const;
  // "Prefetch(Batch(Repeat(Shuffle(FromTensorSlices))))".
  std::string DebugString() const;
  const std::shared_ptr<const DatasetImpl>& impl() const { return impl_; }

  // A fresh iterator. `seed` seeds the stages that have no seed of their own (a Shuffle
  // without ShuffleOptions::seed), as TF derives op seeds from the graph seed; unset, they
  // are seeded nondeterministically (saved with the iterator's state either way). Throws
  // FailedPrecondition for a dataset over placeholders (those are bound by
  // MakeInitializableIterator's initializer in a Session).
  std::unique_ptr<Iterator> MakeIterator(std::optional<uint64_t> seed = std::nullopt) const;

  Dataset Map(MapFn fn, MapOptions options = {}) const;
  Dataset Filter(PredicateFn predicate) const;
  Dataset Batch(int64_t batch_size, BatchOptions options = {}) const;
  Dataset PaddedBatch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  Dataset Unbatch() const;
  Dataset Shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  // count < 0 repeats forever, until a pass yields nothing (an empty input never loops);
  // a finite count runs every pass, an empty one included (TF's repeat).
  Dataset Repeat(int64_t count = -1) const;
  // The count as an int32/int64 scalar graph Output (a placeholder: TF's
  // repeat(num_epochs)), read when the initializer of MakeInitializableIterator runs (with
  // it fed), as placeholder-backed sources are; InvalidArgument for another dtype or rank.
  Dataset Repeat(Output count) const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  // Every num_shards-th element starting at index (tf.data's shard).
  Dataset Shard(int64_t num_shards, int64_t index) const;
  // Up to buffer_size elements made ready on a worker thread. As in TF, 0 reads straight
  // through (no thread) and kAutotune is a buffer of kAutotunePrefetchBuffer; any other
  // negative size is InvalidArgument.
  Dataset Prefetch(int64_t buffer_size) const;
  // filename "" caches in memory (filled by the first complete pass, shared by later
  // iterators of this dataset); otherwise the first complete pass writes the file and later
  // passes stream it back element by element.
  Dataset Cache(const std::string& filename = "", CacheOptions options = {}) const;
  Dataset Concatenate(const Dataset& other) const;
  // fn maps each input element to a dataset whose spec is output_spec.
  Dataset Interleave(InterleaveFn fn, const ElementSpec& output_spec,
                     InterleaveOptions options = {}) const;
  // tf.data's window(size, shift, stride, drop_remainder): window k holds input elements
  // k*shift, k*shift + stride, ... (up to `size` of them; a window at the end may be
  // shorter unless drop_remainder). TF's window is a dataset of datasets; in Loom a window
  // is one element whose components are the window's elements stacked along a new leading
  // dim (like Batch: the length, or `size` with drop_remainder), so FromTensorSlices(window)
  // is TF's nested dataset. The elements of a window must therefore share their shapes
  // (InvalidArgument naming the element otherwise). size, shift and stride must be > 0
  // (shift 0 means size).
  Dataset Window(int64_t size, WindowOptions options = {}) const;
  // tf.data.experimental.group_by_window: key_fn gives each element a group; when a group
  // holds window_size_fn(key) elements (window_size for all keys), reduce_fn(key, group)
  // is called on the group as a dataset (its elements in input order, this dataset's
  // spec) and the elements of the dataset it returns, whose spec must be output_spec, are
  // the output; at the end of input the groups left are reduced in ascending key order.
  // The state holds the groups' elements and the current group's iterator (reduce_fn is
  // called again on restore).
  Dataset GroupByWindow(KeyFn key_fn, GroupReduceFn reduce_fn, int64_t window_size,
                        const ElementSpec& output_spec) const;
  Dataset GroupByWindow(KeyFn key_fn, GroupReduceFn reduce_fn, WindowSizeFn window_size_fn,
                        const ElementSpec& output_spec) const;
  // tf.data.experimental.group_by_reducer: reads the whole input, keeping one state per
  // key_fn(element) (reducer.init(key) when the key is new, then reducer.reduce(state,
  // element)); at the end, reducer.finalize(state) of every key in ascending order (TF's
  // order), each an element of output_spec. The state holds the keys' states.
  Dataset GroupByReducer(KeyFn key_fn, Reducer reducer, const ElementSpec& output_spec) const;
  // tf.data's reduce: runs a fresh iterator to the end, state = fn(state, element) for
  // every element, and returns the final state (initial_state for an empty dataset). fn
  // must keep the state's components and dtypes (InvalidArgument naming the component
  // otherwise); shapes may change. `seed` as for MakeIterator, which also says why a
  // dataset over placeholders throws FailedPrecondition.
  Element Reduce(Element initial_state, const ReduceFn& fn,
                 std::optional<uint64_t> seed = std::nullopt) const;
  // The same in a graph (TF1's ds.reduce returns tensors): a ReduceDataset node whose
  // outputs, by state component in name order, are the state after folding every element
  // of a fresh iterator (one per run) into initial_state, the node's first inputs; the
  // placeholders the dataset reads follow, bound as an initializer binds them.
  // state_spec: the outputs' dtypes (those of initial_state) and shapes.
  std::map<std::string, Output> Reduce(const Scope& scope,
                                       const std::map<std::string, Output>& initial_state,
                                       ReduceFn fn, const ElementSpec& state_spec) const;

  // Graph iterators (iterator_ops.h): the graph holds only iterator ops, never the data.
  GraphIterator MakeOneShotIterator(const Scope& scope) const;
  GraphIterator MakeInitializableIterator(const Scope& scope) const;

 private:
  std::shared_ptr<const DatasetImpl> impl_;
};

// Sources. A single tensor or Output becomes one component named "x" (the features key
// that Estimator model functions read); a map names its components. Slices are taken
// along dim 0, which must agree across components.
// Over host tensors: zero-copy (element i views row i of the source buffer).
Dataset FromTensorSlices(std::map<std::string, Tensor> components);
Dataset FromTensorSlices(const Tensor& x);
// Over graph Outputs (placeholders): values are bound by the initializer of
// MakeInitializableIterator from the Session's feeds, zero-copy.
Dataset FromTensorSlices(std::map<std::string, Output> components);
Dataset FromTensorSlices(const Output& x);
// One element: the tensors themselves.
Dataset FromTensors(std::map<std::string, Tensor> components);
Dataset FromTensors(const Tensor& x);
// int64 scalars start, start+step, ... before stop, in a component named "x".
Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
Dataset Range(int64_t stop);
// make_generator is called once per iterator and returns a callable yielding elements
// (nullopt at the end). Restoring replays the generator, so it must be deterministic for
// an exact restore.
using Generator = std::function<std::optional<Element>()>;
Dataset FromGenerator(std::function<Generator()> make_generator, ElementSpec spec);
// Elements of all datasets side by side; component names must be distinct. Ends with the
// shortest input.
Dataset Zip(const std::vector<Dataset>& datasets);

}  // namespace loom::data

#endif  // LOOM_DATA_DATASET_H_
