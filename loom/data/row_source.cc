#include "loom/data/row_source.h"

#include <cstring>

namespace loom::data {
namespace {

class TensorRows : public RowSource {
 public:
  explicit TensorRows(Element tensors) : tensors_(std::move(tensors)) {
    LOOM_CHECK(!tensors_.empty());
    num_rows_ = tensors_.begin()->second.dim(0);
  }
  int64_t num_rows() const override { return num_rows_; }

  Element Row(int64_t index) const override {
    LOOM_CHECK(index >= 0 && index < num_rows_) << "row " << index << " of " << num_rows_;
    Element e;
    for (const auto& [name, t] : tensors_) e.emplace_hint(e.end(), name, t.SubTensor(index));
    return e;
  }

  Element Gather(std::span<const int64_t> indices) const override {
    Element e;
    const int64_t n = static_cast<int64_t>(indices.size());
    // Restore validates saved indices (CheckRestoredItem); one that still got here would
    // make the memcpy below read outside the source.
    for (int64_t i : indices) {
      LOOM_CHECK(i >= 0 && i < num_rows_) << "row " << i << " of " << num_rows_;
    }
    for (const auto& [name, t] : tensors_) {
      Tensor out(t.dtype(), t.shape().WithoutLeadingDim().WithLeadingDim(n));
      const int64_t row_elems = num_rows_ ? t.NumElements() / num_rows_ : 0;
      if (t.dtype() == DType::kString) {
        const std::string* src = t.data<std::string>();
        std::string* dst = out.data<std::string>();
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t k = 0; k < row_elems; ++k)
            dst[r * row_elems + k] = src[indices[r] * row_elems + k];
        }
      } else {
        const size_t row_bytes = row_elems * DTypeSize(t.dtype());
        const char* src = static_cast<const char*>(t.raw_data());
        char* dst = static_cast<char*>(out.raw_data());
        for (int64_t r = 0; r < n; ++r) {
          std::memcpy(dst + r * row_bytes, src + indices[r] * row_bytes, row_bytes);
        }
      }
      e.emplace_hint(e.end(), name, std::move(out));
    }
    return e;
  }

 private:
  Element tensors_;
  int64_t num_rows_ = 0;
};

class SequentialIndexCursor : public IndexCursor {
 public:
  explicit SequentialIndexCursor(int64_t n) : n_(n) {}
  std::optional<int64_t> Next() override {
    if (pos_ >= n_) return std::nullopt;
    return pos_++;
  }
  void Save(StateWriter& w) override { w.Write<int64_t>(pos_); }
  void Restore(StateReader& r) override {
    pos_ = r.Read<int64_t>();
    if (pos_ < 0 || pos_ > n_) {
      throw InvalidArgument("iterator state is at row ", pos_, " of a source with ", n_,
                            " rows: it was saved over different data");
    }
  }

 private:
  int64_t n_;
  int64_t pos_ = 0;
};

}  // namespace

std::shared_ptr<const RowSource> MakeTensorRows(Element tensors) {
  return std::make_shared<TensorRows>(std::move(tensors));
}

std::unique_ptr<IndexCursor> MakeSequentialIndexCursor(int64_t num_rows) {
  return std::make_unique<SequentialIndexCursor>(num_rows);
}

}  // namespace loom::data
