// Range: int64 scalars start, start + step, ... before stop, in component "x".
// Index-addressable (row i is start + i * step), so it shares the fast path.
#include "loom/data/row_source.h"

namespace loom::data {
namespace {

class RangeRows : public RowSource {
 public:
  RangeRows(int64_t start, int64_t step, int64_t n) : start_(start), step_(step), n_(n) {}
  int64_t num_rows() const override { return n_; }
  Element Row(int64_t i) const override {
    return {{"x", Tensor::Scalar<int64_t>(start_ + i * step_)}};
  }
  Element Gather(std::span<const int64_t> indices) const override {
    Tensor t(DType::kInt64, Shape{static_cast<int64_t>(indices.size())});
    int64_t* out = t.data<int64_t>();
    for (size_t k = 0; k < indices.size(); ++k) out[k] = start_ + indices[k] * step_;
    return {{"x", t}};
  }

 private:
  int64_t start_, step_, n_;
};

class RangeDataset : public DatasetImpl {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : DatasetImpl("Range", {{"x", {DType::kInt64, Shape{}}}}, {}), start_(start), step_(step) {
    CheckArg(step != 0, "Range", "step must not be 0");
    if (step > 0)
      n_ = stop > start ? (stop - start + step - 1) / step : 0;
    else
      n_ = start > stop ? (start - stop - step - 1) / -step : 0;
  }
  std::string Params() const override {
    return StrCat("start=", start_, " step=", step_, " size=", n_);
  }
  bool indexed() const override { return true; }
  std::shared_ptr<const RowSource> MakeRows(const IteratorContext&) const override {
    return std::make_shared<RangeRows>(start_, step_, n_);
  }
  std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext&) const override {
    return MakeSequentialIndexCursor(n_);
  }

 private:
  int64_t start_, step_, n_ = 0;
};

}  // namespace

Dataset Range(int64_t start, int64_t stop, int64_t step) {
  return Dataset(std::make_shared<RangeDataset>(start, stop, step));
}
Dataset Range(int64_t stop) { return Range(0, stop, 1); }

}  // namespace loom::data
