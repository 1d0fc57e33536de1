#include "loom/estimator/prediction_range.h"

#include "loom/base/error.h"

namespace loom {

PredictionRange::PredictionRange(std::unique_ptr<PredictionSource> source,
                                 bool yield_single_examples)
    : source_(std::move(source)), single_(yield_single_examples) {}
PredictionRange::PredictionRange(PredictionRange&&) noexcept = default;
PredictionRange& PredictionRange::operator=(PredictionRange&&) noexcept = default;
PredictionRange::~PredictionRange() = default;

std::optional<Prediction> PredictionRange::Next() {
  if (!source_) return std::nullopt;
  if (!single_) {
    std::optional<Prediction> batch = source_->NextBatch();
    if (!batch) source_.reset();  // ends the run (hooks' End) as soon as input ends
    return batch;
  }
  while (!batch_ || row_ >= batch_size_) {
    batch_ = source_->NextBatch();
    if (!batch_) {
      source_.reset();
      return std::nullopt;
    }
    row_ = 0;
    batch_size_ = -1;
    std::string first;
    for (const auto& [key, t] : *batch_) {
      if (t.rank() == 0) {
        throw InvalidArgument("Predict: prediction '", key, "' is a scalar; with ",
                              "yield_single_examples every prediction needs the batch as ",
                              "dim 0 (or set yield_single_examples = false)");
      }
      if (batch_size_ < 0) {
        batch_size_ = t.dim(0);
        first = key;
      } else if (t.dim(0) != batch_size_) {
        throw InvalidArgument("Predict: batch length of predictions should be the same: '", key,
                              "' has ", t.dim(0), " rows but '", first, "' has ", batch_size_,
                              " (or set yield_single_examples = false)");
      }
    }
  }
  Prediction example;
  for (const auto& [key, t] : *batch_) example[key] = t.SubTensor(row_);
  ++row_;
  return example;
}

std::vector<Prediction> PredictionRange::ToVector() {
  std::vector<Prediction> out;
  while (auto p = Next()) out.push_back(std::move(*p));
  return out;
}

PredictionRange::Iterator::Iterator(PredictionRange* range) : range_(range) {
  current_ = range_->Next();
}

PredictionRange::Iterator& PredictionRange::Iterator::operator++() {
  current_ = range_->Next();
  return *this;
}

PredictionRange::Iterator PredictionRange::begin() { return Iterator(this); }

}  // namespace loom
