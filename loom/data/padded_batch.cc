// PaddedBatch: like Batch, but components may differ in shape; each is padded (at the end
// of every dim) to padded_shapes' size, or to the batch's longest where that is unknown.
#include <cstring>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

// Copies src (shape s) into the top-left corner of dst (shape d, same rank).
template <typename T>
void CopyPadded(const T* src, const std::vector<int64_t>& s, T* dst, const std::vector<int64_t>& d,
                int dim) {
  if (s.empty()) {
    *dst = *src;
    return;
  }
  int64_t src_stride = 1, dst_stride = 1;
  for (size_t i = dim + 1; i < s.size(); ++i) {
    src_stride *= s[i];
    dst_stride *= d[i];
  }
  for (int64_t i = 0; i < s[dim]; ++i) {
    if (dim + 1 == static_cast<int>(s.size()))
      dst[i] = src[i];
    else
      CopyPadded(src + i * src_stride, s, dst + i * dst_stride, d, dim + 1);
  }
}

class PaddedBatchIterator : public Iterator {
 public:
  PaddedBatchIterator(ElementSpec spec, std::unique_ptr<Iterator> input, int64_t batch_size,
                      PaddedBatchOptions options)
      : Iterator("PaddedBatch", std::move(spec)),
        input_(std::move(input)),
        batch_size_(batch_size),
        options_(std::move(options)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < batch_size_) {
      std::optional<Element> e = input_->GetNext();
      if (!e) break;
      elements.push_back(std::move(*e));
    }
    if (elements.empty()) return std::nullopt;
    if (options_.drop_remainder && static_cast<int64_t>(elements.size()) < batch_size_) {
      return std::nullopt;
    }
    const int64_t n = elements.size();
    Element out;
    // Named references, not structured bindings: clang 14 cannot capture bindings in lambdas.
    for (const auto& entry : input_->spec()) {
      const auto& name = entry.first;
      const auto& ts = entry.second;
      const int rank = elements[0].at(name).rank();
      std::vector<int64_t> target(rank, 0);
      for (int64_t k = 0; k < n; ++k) {
        const Tensor& t = elements[k].at(name);
        if (t.rank() != rank) {
          throw InvalidArgument("PaddedBatch: element ", k, " of the batch has component '", name,
                                "' of rank ", t.rank(), " (shape ", t.shape(),
                                ") but element 0 has ", elements[0].at(name).shape());
        }
        for (int i = 0; i < rank; ++i) target[i] = std::max(target[i], t.dim(i));
      }
      if (auto it = options_.padded_shapes.find(name); it != options_.padded_shapes.end()) {
        for (int i = 0; i < rank; ++i) {
          int64_t want = it->second.dim(i);
          if (want == kUnknownDim) continue;
          if (want < target[i]) {
            throw InvalidArgument("PaddedBatch: component '", name, "' has dim ", i, " of size ",
                                  target[i], ", larger than its padded shape ", it->second);
          }
          target[i] = want;
        }
      }
      Tensor batch(ts.dtype, Shape(target).WithLeadingDim(n));
      SwitchAll(ts.dtype, "PaddedBatch", [&](auto tag) {
        using T = decltype(tag);
        T pad{};
        if (auto p = options_.padding_values.find(name); p != options_.padding_values.end()) {
          pad = p->second.template scalar<T>();
        }
        T* dst = batch.data<T>();
        std::fill(dst, dst + batch.NumElements(), pad);
        const int64_t stride = Shape(target).num_elements();
        for (int64_t k = 0; k < n; ++k) {
          const Tensor& t = elements[k].at(name);
          if (t.NumElements() == 0) continue;
          CopyPadded(t.data<T>(), t.shape().dims(), dst + k * stride, target, 0);
        }
        return 0;
      });
      out[name] = std::move(batch);
    }
    return out;
  }
  void SaveInternal(StateWriter& w) override { input_->SaveState(w); }
  void RestoreInternal(StateReader& r) override { input_->RestoreState(r); }

 private:
  std::unique_ptr<Iterator> input_;
  int64_t batch_size_;
  PaddedBatchOptions options_;
};

ElementSpec PaddedSpec(const ElementSpec& in, int64_t batch_size, const PaddedBatchOptions& o) {
  ElementSpec out;
  for (const auto& [name, ts] : in) {
    CheckArg(ts.shape.rank_known(), "PaddedBatch", "component '", name, "' has unknown rank");
    std::vector<int64_t> dims(ts.shape.rank(), kUnknownDim);
    if (auto it = o.padded_shapes.find(name); it != o.padded_shapes.end()) {
      CheckArg(it->second.rank_known() && it->second.rank() == ts.shape.rank(), "PaddedBatch",
               "padded shape ", it->second, " of component '", name, "' does not match its rank ",
               ts.shape.rank());
      dims = it->second.dims();
    }
    if (auto p = o.padding_values.find(name); p != o.padding_values.end()) {
      CheckArg(p->second.dtype() == ts.dtype && p->second.NumElements() == 1, "PaddedBatch",
               "padding value of '", name, "' must be a ", DTypeName(ts.dtype), " scalar");
    }
    out[name] = {ts.dtype, Shape(dims).WithLeadingDim(o.drop_remainder ? batch_size : kUnknownDim)};
  }
  for (const auto& [name, s] : o.padded_shapes) {
    CheckArg(in.count(name), "PaddedBatch", "padded_shapes names unknown component '", name, "'");
  }
  return out;
}

class PaddedBatchDataset : public DatasetImpl {
 public:
  PaddedBatchDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t batch_size,
                     PaddedBatchOptions options)
      : DatasetImpl("PaddedBatch", PaddedSpec(input->spec(), batch_size, options), {input}),
        batch_size_(batch_size),
        options_(std::move(options)) {
    CheckArg(batch_size > 0, "PaddedBatch", "batch_size must be positive, got ", batch_size);
  }

  std::string Params() const override {
    std::string s = StrCat("batch_size=", batch_size_,
                           " drop_remainder=", options_.drop_remainder ? "true" : "false");
    for (const auto& [name, shape] : options_.padded_shapes)
      s += StrCat(" padded_shape[", name, "]=", shape);
    for (const auto& [name, value] : options_.padding_values) {
      s += StrCat(" padding_value[", name, "]=", value.DebugString());
    }
    return s;
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<PaddedBatchIterator>(spec(), inputs()[0]->MakeIterator(ctx),
                                                 batch_size_, options_);
  }

 private:
  int64_t batch_size_;
  PaddedBatchOptions options_;
};

}  // namespace

Dataset Dataset::PaddedBatch(int64_t batch_size, PaddedBatchOptions options) const {
  return Dataset(std::make_shared<PaddedBatchDataset>(impl(), batch_size, std::move(options)));
}

}  // namespace loom::data
