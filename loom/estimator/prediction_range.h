#ifndef LOOM_ESTIMATOR_PREDICTION_RANGE_H_
#define LOOM_ESTIMATOR_PREDICTION_RANGE_H_

// PredictionRange: the lazy result of Estimator::Predict, TF's predict() generator. An
// input range: iterating it runs the prediction graph one batch at a time, and ends when
// the input ends (or a prediction hook requests a stop). With yield_single_examples each
// element is one example — every tensor a zero-copy view of its row of the batch — else
// one batch. Owns what it runs (graph, session, hooks); the Estimator may be destroyed
// before it. Iterate it once. Not thread-safe.
//
//   for (const loom::Prediction& p : estimator.Predict(input_fn)) Print(p.at("classes"));
#include <cstddef>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

// One example's (or one batch's) prediction tensors by key.
using Prediction = std::map<std::string, Tensor>;

// Where a PredictionRange gets its batches (implemented by the Estimator).
class PredictionSource {
 public:
  virtual ~PredictionSource() = default;
  // The next batch, or nullopt at the end (then never called again).
  virtual std::optional<Prediction> NextBatch() = 0;
};

class PredictionRange {
 public:
  PredictionRange(std::unique_ptr<PredictionSource> source, bool yield_single_examples);
  PredictionRange(PredictionRange&&) noexcept;
  PredictionRange& operator=(PredictionRange&&) noexcept;
  ~PredictionRange();

  // The next prediction, or nullopt at the end. Throws InvalidArgument (single examples)
  // when the predictions of a batch disagree on the batch size, naming both.
  std::optional<Prediction> Next();
  // Every remaining prediction.
  std::vector<Prediction> ToVector();

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = Prediction;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    const Prediction& operator*() const { return *current_; }
    const Prediction* operator->() const { return &*current_; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    friend class PredictionRange;
    explicit Iterator(PredictionRange* range);
    PredictionRange* range_ = nullptr;
    std::optional<Prediction> current_;
  };
  // Starts pulling predictions. REQUIRES: called at most once.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  std::unique_ptr<PredictionSource> source_;
  bool single_;
  std::optional<Prediction> batch_;
  int64_t batch_size_ = 0;
  int64_t row_ = 0;
};

}  // namespace loom

#endif  // LOOM_ESTIMATOR_PREDICTION_RANGE_H_
