// Batch: batch_size consecutive elements stacked along a new leading dim. Over an
// index-addressable input, the fast path gathers the rows with memcpy straight into the
// batch tensors (gather.cc); otherwise elements are stacked here.
#include <cstring>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class BatchIterator : public Iterator {
 public:
  BatchIterator(ElementSpec spec, std::unique_ptr<Iterator> input, int64_t batch_size,
                bool drop_remainder)
      : Iterator("Batch", std::move(spec)),
        input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    std::vector<Element> elements;
    elements.reserve(batch_size_);
    while (static_cast<int64_t>(elements.size()) < batch_size_) {
      std::optional<Element> e = input_->GetNext();
      if (!e) break;
      elements.push_back(std::move(*e));
    }
    const int64_t first = consumed_;
    consumed_ += elements.size();
    if (elements.empty()) return std::nullopt;
    if (drop_remainder_ && static_cast<int64_t>(elements.size()) < batch_size_) return std::nullopt;
    return StackElements(std::move(elements), input_->spec(), "Batch", first);
  }
  void SaveInternal(StateWriter& w) override {
    w.Write<int64_t>(consumed_);
    input_->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    consumed_ = r.Read<int64_t>();
    // It counts elements (for messages) and grows: a huge one would overflow.
    if (consumed_ < 0 || consumed_ > kMaxRestoredCount) {
      throw DataLoss("Batch state is corrupt: ", consumed_, " elements consumed");
    }
    input_->RestoreState(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  int64_t batch_size_;
  bool drop_remainder_;
  int64_t consumed_ = 0;
};

class BatchDataset : public DatasetImpl {
 public:
  BatchDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t batch_size,
               BatchOptions options)
      : DatasetImpl(
            "Batch",
            WithLeadingDim(input->spec(), options.drop_remainder ? batch_size : kUnknownDim),
            {input}),
        batch_size_(batch_size),
        options_(options) {
    CheckArg(batch_size > 0, "Batch", "batch_size must be positive, got ", batch_size);
    for (const auto& [name, ts] : input->spec()) {
      CheckArg(ts.dtype != DType::kInvalid, "Batch", "component '", name, "' has no dtype");
    }
  }

  std::string Params() const override {
    return StrCat("batch_size=", batch_size_,
                  " drop_remainder=", options_.drop_remainder ? "true" : "false");
  }
  std::optional<GatherPlan> gather_plan() const override {
    auto in = inputs()[0]->gather_plan();
    if (!in || in->batch_size != 0) return std::nullopt;
    return GatherPlan{in->indexed, batch_size_, options_.drop_remainder};
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    if (ctx.shard != nullptr && ctx.shard->at_batch) {  // this shard's rows of each batch
      return std::make_unique<BatchIterator>(LocalSpec(spec(), ctx),
                                             inputs()[0]->MakeIterator(BelowBatch(ctx)),
                                             ctx.shard->block(), options_.drop_remainder);
    }
    return std::make_unique<BatchIterator>(spec(), inputs()[0]->MakeIterator(ctx), batch_size_,
                                           options_.drop_remainder);
  }
  std::optional<int64_t> shardable_batch_size() const override { return batch_size_; }

 private:
  int64_t batch_size_;
  BatchOptions options_;
};

}  // namespace

Element StackElements(std::vector<Element>&& elements, const ElementSpec& spec,
                      const std::string& stage, int64_t first_index) {
  Element out;
  const int64_t n = static_cast<int64_t>(elements.size());
  for (const auto& [name, ts] : spec) {
    const Tensor& first = elements[0].at(name);
    for (int64_t k = 1; k < n; ++k) {
      const Tensor& t = elements[k].at(name);
      if (t.shape() != first.shape()) {
        throw InvalidArgument(stage, ": cannot batch element ", first_index + k, " with element ",
                              first_index, ": component '", name, "' has shape ", t.shape(),
                              " there and ", first.shape(),
                              " here; use PaddedBatch, or Map the elements to one shape");
      }
    }
    Tensor batch(first.dtype(), first.shape().WithLeadingDim(n));
    if (first.dtype() == DType::kString) {
      std::string* dst = batch.data<std::string>();
      for (int64_t k = 0; k < n; ++k) {
        Tensor& t = elements[k].at(name);
        const int64_t count = t.NumElements();
        std::string* src = t.data<std::string>();
        if (t.BufferIsUnique()) {  // nobody else can see these strings: take them
          for (int64_t j = 0; j < count; ++j) *dst++ = std::move(src[j]);
        } else {
          dst = std::copy(src, src + count, dst);
        }
      }
    } else {
      const size_t bytes = first.TotalBytes();
      char* dst = static_cast<char*>(batch.raw_data());
      for (int64_t k = 0; k < n; ++k) {
        std::memcpy(dst + k * bytes, elements[k].at(name).raw_data(), bytes);
      }
    }
    out.emplace_hint(out.end(), name, std::move(batch));
  }
  return out;
}

Dataset Dataset::Batch(int64_t batch_size, BatchOptions options) const {
  return Dataset(std::make_shared<BatchDataset>(impl(), batch_size, options));
}

}  // namespace loom::data
