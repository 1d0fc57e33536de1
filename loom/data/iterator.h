#ifndef LOOM_DATA_ITERATOR_H_
#define LOOM_DATA_ITERATOR_H_

// Iterator: a cursor over a Dataset's elements, TF's IteratorBase. It owns its position and
// random state (never the dataset's data: it holds the dataset alive through shared
// pointers). End of input is a value: GetNext returns std::nullopt, and keeps returning it.
// Save() captures the exact position and random state as a small blob; Restore() on an
// iterator of the same pipeline continues exactly where the saved one was.
// The public GetNext is the protocol: it calls GetNextInternal and checks the element
// against spec(), so no implementation can hand a consumer an element of the wrong
// structure. Errors from background workers (parallel Map, Interleave, Prefetch) are
// rethrown here with their original code and message.
// Thread-safety: one consumer thread at a time (implementations may run workers inside).
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "loom/data/element.h"
#include "loom/data/state_io.h"

namespace loom::data {

// The random base of one top-level iterator, from which its unseeded stages (a Shuffle
// without a seed) derive their seeds. Made from a seed when the iterator has one (graph
// iterators in a graph with a seed, as TF derives op seeds from the graph seed), else
// drawn from the OS the first time a stage asks for it; so a pipeline whose random stages
// are all seeded never draws one and saves 0, and two runs save identical states.
// Thread-safe (stages may be created on worker threads).
class RandomBase {
 public:
  // From `seed` (deterministic), or unset (drawn on first use).
  explicit RandomBase(std::optional<uint64_t> seed = std::nullopt);
  // The base, drawn now if unset. Never 0.
  uint64_t Get();
  // What a saved state holds: the base, or 0 when none was made or drawn.
  uint64_t saved() const;
  // Adopts a saved value; 0 leaves the base as it is.
  void Restore(uint64_t saved);

 private:
  mutable std::mutex mu_;
  uint64_t value_ = 0;  // 0: not drawn yet
};

class Iterator {
 public:
  virtual ~Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element, or nullopt at the end of input.
  std::optional<Element> GetNext();
  // Advances past the next element without handing it out; false at the end of input.
  // Sources override SkipInternal to skip without decoding (a TFRecord's payload is not
  // turned into a tensor, a CSV record's fields are not parsed); the state afterwards is
  // the one GetNext would have left.
  bool Skip() { return SkipInternal(); }

  // A self-describing blob: a header naming the pipeline, then each stage's state.
  std::string Save();
  // Throws InvalidArgument when `blob` was saved from a different pipeline (its message
  // names the first stage, parameter or spec that differs), DataLoss when it is truncated
  // or corrupt.
  void Restore(std::string_view blob);

  const ElementSpec& spec() const { return spec_; }
  // The stage that made this iterator ("Shuffle", ...), for messages and state tags.
  const std::string& stage() const { return stage_; }

  // For stages that nest iterators: the state without the pipeline header.
  void SaveState(StateWriter& writer);
  void RestoreState(StateReader& reader);

  // Set by whoever makes a top-level iterator (MakeTopLevelIterator): the pipeline
  // identity checked by Restore (PipelineIdentity: every stage with the parameters that
  // shape its output, and the spec), the identity states saved before parameters were
  // part of it carry ("Batch(Shuffle(FromTensorSlices)) <spec>": accepted, with a warning
  // that the parameters are unchecked), and the random base that unseeded stages derive
  // their seeds from (saved and restored with the state).
  void set_pipeline(std::string pipeline, std::string legacy_pipeline,
                    std::shared_ptr<RandomBase> random_base) {
    pipeline_ = std::move(pipeline);
    legacy_pipeline_ = std::move(legacy_pipeline);
    random_base_ = std::move(random_base);
  }

 protected:
  Iterator(std::string stage, ElementSpec spec)
      : stage_(std::move(stage)), spec_(std::move(spec)) {}

  virtual std::optional<Element> GetNextInternal() = 0;
  // Default: GetNextInternal(), the element dropped.
  virtual bool SkipInternal() { return GetNextInternal().has_value(); }
  virtual void SaveInternal(StateWriter& writer) = 0;
  virtual void RestoreInternal(StateReader& reader) = 0;

 private:
  std::string stage_;
  ElementSpec spec_;
  std::string pipeline_;
  std::string legacy_pipeline_;
  std::shared_ptr<RandomBase> random_base_;
};

}  // namespace loom::data

#endif  // LOOM_DATA_ITERATOR_H_
