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
#include <optional>
#include <string>
#include <string_view>

#include "loom/data/element.h"
#include "loom/data/state_io.h"

namespace loom::data {

class Iterator {
 public:
  virtual ~Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element, or nullopt at the end of input.
  std::optional<Element> GetNext();

  // A self-describing blob: a header naming the pipeline, then each stage's state.
  std::string Save();
  // Throws InvalidArgument when `blob` was saved from a different pipeline, DataLoss when
  // it is truncated or corrupt.
  void Restore(std::string_view blob);

  const ElementSpec& spec() const { return spec_; }
  // The stage that made this iterator ("Shuffle", ...), for messages and state tags.
  const std::string& stage() const { return stage_; }

  // For stages that nest iterators: the state without the pipeline header.
  void SaveState(StateWriter& writer);
  void RestoreState(StateReader& reader);

  // Set by whoever makes a top-level iterator (Dataset::MakeIterator, the iterator ops):
  // the pipeline description checked by Restore, and the cell holding the random base
  // that unseeded stages derive their seeds from (saved and restored with the state).
  void set_pipeline(std::string pipeline, std::shared_ptr<uint64_t> random_base) {
    pipeline_ = std::move(pipeline);
    random_base_ = std::move(random_base);
  }

 protected:
  Iterator(std::string stage, ElementSpec spec) : stage_(std::move(stage)), spec_(std::move(spec)) {}

  virtual std::optional<Element> GetNextInternal() = 0;
  virtual void SaveInternal(StateWriter& writer) = 0;
  virtual void RestoreInternal(StateReader& reader) = 0;

 private:
  std::string stage_;
  ElementSpec spec_;
  std::string pipeline_;
  std::shared_ptr<uint64_t> random_base_;
};

}  // namespace loom::data

#endif  // LOOM_DATA_ITERATOR_H_
