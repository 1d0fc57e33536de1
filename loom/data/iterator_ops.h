#ifndef LOOM_DATA_ITERATOR_OPS_H_
#define LOOM_DATA_ITERATOR_OPS_H_

// Datasets in a graph (TF1's tf.data iterators). The graph holds only iterator ops — an
// initializer and IteratorGetNext, whose outputs are the element's components in name
// order with the spec's dtypes and shapes — never the data. The iterator itself lives in
// the Session as an IteratorResource named kIteratorResourcePrefix + shared name.
//
//   auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
//   auto it = FromTensorSlices(x).Batch(32).MakeInitializableIterator(s);
//   auto next = it.GetNext();                                // {"x": Output}
//   session.Run({{x, features}}, {}, {it.initializer()});    // binds the feed, zero-copy
//   session.Run({}, {next.at("x")});                         // OutOfRange at the end
//
// One-shot: created on the first GetNext run. Initializable: initializer() (re)starts it,
// binding the placeholders the dataset reads from that run's feeds. Reinitializable:
// GraphIterator::FromStructure(scope, spec), then MakeInitializer(train) / (eval).
// The dataset rides in the op's "dataset" attribute as a HostObject (checked by type, TF's
// DT_VARIANT) that shares ownership of it, so the graph keeps it alive without containing
// data; host objects are not serialized, so a graph loaded from disk has no dataset there
// and its iterator ops say so.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/mutex.h"
#include "loom/data/element.h"
#include "loom/data/iterator.h"
#include "loom/graph/op_def.h"

namespace loom::data {

class Dataset;

inline constexpr std::string_view kIteratorResourcePrefix = "iterator:";

// Session state of one graph iterator. Save/Restore make it part of checkpoints: a
// Restore before the iterator exists is kept and applied when it is next created (so a
// checkpoint restored before the initializer runs still resumes mid-epoch).
// Thread-safe: every method locks the resource's mutex, which guards all its state.
class IteratorResource : public Resource {
 public:
  // Replaces the iterator (an initializer ran), applying a pending restore.
  void Reset(std::unique_ptr<Iterator> iterator) LOOM_LOCKS_EXCLUDED(mu_);
  // The next element, nullopt at the end of input. When there is no iterator yet, `make`
  // creates it first (a one-shot iterator's first run) and a pending restore is applied;
  // `make` may throw (an uninitialized iterator), leaving the resource unchanged.
  std::optional<Element> GetNext(const std::function<std::unique_ptr<Iterator>()>& make)
      LOOM_LOCKS_EXCLUDED(mu_);
  bool initialized() const LOOM_LOCKS_EXCLUDED(mu_);
  // Throws FailedPrecondition when not initialized.
  std::string Save() LOOM_LOCKS_EXCLUDED(mu_);
  // `origin` (the checkpoint file) is named in the error when the blob does not fit the
  // iterator, now or when a pending restore is applied.
  void Restore(std::string_view blob, std::string origin = "") LOOM_LOCKS_EXCLUDED(mu_);
  // What a checkpoint saves: the iterator's state or, before the iterator exists, a
  // pending restore's blob (saving a one-shot iterator restored but not yet run keeps its
  // position); nullopt when there is neither.
  std::optional<std::string> SaveOrPending() LOOM_LOCKS_EXCLUDED(mu_);
  // Removes and returns the pending restore (an empty blob when none), for a caller that
  // builds the next iterator itself and applies, or deliberately skips, the restore.
  struct PendingRestore {
    std::string blob;
    std::string origin;  // the checkpoint file it came from
  };
  PendingRestore TakePendingRestore() LOOM_LOCKS_EXCLUDED(mu_);

 private:
  // Applies a pending restore to iterator_, if any.
  void ApplyPendingRestore() LOOM_REQUIRES(mu_);

  mutable Mutex mu_;
  std::unique_ptr<Iterator> iterator_ LOOM_GUARDED_BY(mu_);
  std::string pending_restore_ LOOM_GUARDED_BY(mu_);
  std::string pending_origin_ LOOM_GUARDED_BY(mu_);
};

// The seed of a graph iterator's unseeded stages (Dataset::MakeIterator's `seed`): from
// the graph seed and the iterator's resource name, as TF derives op seeds from the graph
// seed; nullopt (nondeterministic) when the graph has no seed.
std::optional<uint64_t> IteratorSeed(const Graph& graph, std::string_view resource_name);

// Names (in the ResourceMgr) of every iterator resource, for savers.
std::vector<std::string> IteratorResourceNames(const ResourceMgr& resources);

class GraphIterator {
 public:
  // A reinitializable iterator for datasets of this structure.
  static GraphIterator FromStructure(const Scope& scope, ElementSpec spec);

  // The initializer of an initializable iterator (invalid for the other kinds).
  Operation initializer() const { return initializer_; }
  // An op that (re)starts this iterator over `dataset`, whose spec must match.
  Operation MakeInitializer(const Dataset& dataset) const;
  // A new IteratorGetNext node: the next element's components by name.
  std::map<std::string, Output> GetNext() const;

  const ElementSpec& spec() const { return spec_; }
  // The ResourceMgr name of the iterator.
  const std::string& resource_name() const { return resource_name_; }

 private:
  friend class Dataset;
  GraphIterator(const Scope& scope, ElementSpec spec);

  Scope scope_;
  ElementSpec spec_;
  std::string resource_name_;
  Operation initializer_;
  HostObject one_shot_dataset_;  // the dataset of a one-shot iterator
};

void RegisterDataOps(OpRegistry& registry);

}  // namespace loom::data

#endif  // LOOM_DATA_ITERATOR_OPS_H_
