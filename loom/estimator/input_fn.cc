#include "loom/estimator/input_fn.h"

#include <algorithm>

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom {

InputFnResult::InputFnResult(data::Dataset dataset, std::optional<std::string> label_key)
    : dataset_(std::move(dataset)), label_key_(std::move(label_key)) {}

InputFnResult::InputFnResult(std::map<std::string, Output> tensors,
                             std::optional<std::string> label_key)
    : tensors_(std::move(tensors)), label_key_(std::move(label_key)) {}

InputFnResult::InputFnResult(Features features, Output labels)
    : tensors_(std::move(features)), labels_(labels), label_key_("") {}

std::pair<Features, Output> InputFnResult::Split(
    const std::map<std::string, Output>& components) const {
  std::string key;
  if (label_key_) {
    key = *label_key_;
    if (!key.empty() && !components.count(key)) {
      std::string names;
      for (const auto& [name, o] : components) names += (names.empty() ? "" : ", ") + name;
      throw InvalidArgument("input_fn: the label component '", key,
                            "' is not among the input's components {", names, "}");
    }
  } else if (components.count("label")) {
    key = "label";
  } else if (components.count("labels")) {
    key = "labels";
  }
  Features features;
  Output labels;
  for (const auto& [name, output] : components) {
    if (name == key)
      labels = output;
    else
      features[name] = output;
  }
  if (features.empty()) {
    throw InvalidArgument("input_fn: the input has no feature components besides the labels '", key,
                          "'");
  }
  return {std::move(features), labels};
}

std::pair<Features, Output> InputFnResult::FeaturesAndLabels() const {
  LOOM_CHECK(!dataset_) << "FeaturesAndLabels on a dataset result";
  if (labels_.valid()) return {tensors_, labels_};
  return Split(tensors_);
}

InputFn ArrayInputFn(ArrayInputOptions o) {
  if (!o.shuffle.has_value()) {
    throw InvalidArgument(
        "ArrayInputFn: shuffle must be set explicitly (as in TF's "
        "numpy_input_fn): true for training, false for evaluation and "
        "prediction");
  }
  if (o.batch_size <= 0) {
    throw InvalidArgument("ArrayInputFn: batch_size must be > 0, got ", o.batch_size);
  }
  if (o.num_epochs && *o.num_epochs <= 0) {
    throw InvalidArgument("ArrayInputFn: num_epochs must be > 0 or unset (forever), got ",
                          *o.num_epochs);
  }
  if (o.x.empty()) throw InvalidArgument("ArrayInputFn: x has no features");
  std::map<std::string, Tensor> components = o.x;
  if (o.y.defined()) {
    if (components.count(o.label_key)) {
      throw InvalidArgument("ArrayInputFn: a feature is named '", o.label_key,
                            "', like the labels; rename it or set label_key");
    }
    components[o.label_key] = o.y;
  }
  int64_t count = -1;
  std::string first;
  for (const auto& [name, t] : components) {
    if (!t.defined() || t.rank() == 0) {
      throw InvalidArgument("ArrayInputFn: array '", name,
                            "' must have rank >= 1 with the examples along dim 0");
    }
    if (count < 0) {
      count = t.dim(0);
      first = name;
    } else if (t.dim(0) != count) {
      throw InvalidArgument("ArrayInputFn: array '", name, "' has ", t.dim(0), " examples but '",
                            first, "' has ", count);
    }
  }
  // Built once: the Dataset is an immutable description over views of the arrays, so
  // every call (every Train / Evaluate) shares it.
  data::Dataset dataset = data::FromTensorSlices(std::move(components));
  if (*o.shuffle) {
    const int64_t buffer =
        o.shuffle_buffer_size > 0 ? o.shuffle_buffer_size : std::max<int64_t>(count, 1);
    dataset = dataset.Shuffle(buffer, {.seed = o.seed});
  }
  dataset = dataset.Repeat(o.num_epochs ? *o.num_epochs : -1).Batch(o.batch_size);
  std::string label_key = o.y.defined() ? o.label_key : "";
  return [dataset, label_key](Scope&) { return InputFnResult(dataset, label_key); };
}

}  // namespace loom
