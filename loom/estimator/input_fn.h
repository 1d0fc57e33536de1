#ifndef LOOM_ESTIMATOR_INPUT_FN_H_
#define LOOM_ESTIMATOR_INPUT_FN_H_

// Input functions: what an Estimator calls to get its input, TF1's input_fn. It receives
// the Scope of the graph being built and returns one of
//   - a data::Dataset (the usual way): the Estimator makes the iterator, initializes it
//     after the session is created (and after a checkpoint restore, so training resumes
//     mid-epoch) and checkpoints its position;
//   - the outputs of an iterator it made itself (GraphIterator::GetNext()), e.g. the TF1
//     workaround of a dataset over placeholders with an initializer hook
//     (docs/porting_from_tf1.md, examples/placeholder_iterator_hook.cc);
//   - features and labels as Outputs built directly.
// Labels: by default the component named "label", else "labels", is the labels and every
// other component is a feature; elements without either have no labels (prediction).
// InputFnResult(dataset, "y") names another component; InputFnResult(dataset, "") means
// no labels at all. In Predict the labels, if any, are ignored.
//
//   auto input_fn = [&](loom::Scope&) {
//     return loom::data::FromTensorSlices({{"x", images}, {"label", labels}})
//         .Shuffle(60000, {.seed = 42}).Repeat().Batch(256);
//   };
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "loom/data/dataset.h"
#include "loom/estimator/estimator_spec.h"

namespace loom {

class InputFnResult {
 public:
  InputFnResult(data::Dataset dataset, std::optional<std::string> label_key = std::nullopt);
  InputFnResult(std::map<std::string, Output> tensors,
                std::optional<std::string> label_key = std::nullopt);
  InputFnResult(Features features, Output labels);

  bool is_dataset() const { return dataset_.has_value(); }
  // REQUIRES: is_dataset().
  const data::Dataset& dataset() const { return *dataset_; }
  // REQUIRES: !is_dataset().
  const std::map<std::string, Output>& tensors() const { return tensors_; }
  // Features and labels from the iterator outputs of dataset() (or tensors()), split by
  // the label rule. Throws InvalidArgument when a named label component is absent.
  std::pair<Features, Output> Split(const std::map<std::string, Output>& components) const;
  // Split(tensors()), or the explicit features and labels.
  std::pair<Features, Output> FeaturesAndLabels() const;

 private:
  std::optional<data::Dataset> dataset_;
  std::map<std::string, Output> tensors_;
  Output labels_;
  std::optional<std::string> label_key_;
};

using InputFn = std::function<InputFnResult(Scope&)>;

struct ArrayInputOptions {
  // Features by name; each has the examples along dim 0 (the same count for all). The
  // tensors are viewed, never copied: the caller's buffers must outlive training (a
  // Borrowed tensor's release callback is how to tie them).
  std::map<std::string, Tensor> x;
  // Labels along dim 0, or undefined for prediction. Default: undefined.
  Tensor y;
  // Default: 128 (TF's numpy_input_fn).
  int64_t batch_size = 128;
  // Passes over the data; nullopt repeats forever. Default: 1.
  std::optional<int64_t> num_epochs = 1;
  // Shuffle the examples (each epoch anew). Required, as in TF: true for training,
  // false for evaluation and prediction.
  std::optional<bool> shuffle;
  // Shuffle seed. Default: unset, a random seed (saved in checkpoints with the position).
  std::optional<uint64_t> seed;
  // Shuffle buffer in examples. Default: 0, the whole array (shuffling moves indices, not
  // rows, so a full buffer costs 8 bytes per example).
  int64_t shuffle_buffer_size = 0;
  // The labels' component name. Default: "label".
  std::string label_key = "label";
};

// TF's numpy_input_fn: a Dataset of FromTensorSlices(x + {label_key: y}), shuffled,
// repeated num_epochs times and batched (the last batch may be smaller). Throws
// InvalidArgument naming the array when counts differ, a feature is named like the
// labels, shuffle is unset, or batch_size <= 0.
InputFn ArrayInputFn(ArrayInputOptions options);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_INPUT_FN_H_
