// Window: tf.data's window(size, shift, stride, drop_remainder), each window stacked into
// one element. The iterator keeps a buffer of the (size - 1) * stride + 1 input elements a
// window spans; a window takes every stride-th of them, then the buffer drops its first
// `shift` (reading and discarding inputs when shift is longer than the buffer), as TF's
// WindowDataset does. The state holds the buffer's elements and the input's state.
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class WindowIterator : public Iterator {
 public:
  WindowIterator(ElementSpec spec, std::unique_ptr<Iterator> input, int64_t size, int64_t shift,
                 int64_t stride, bool drop_remainder)
      : Iterator("Window", std::move(spec)),
        input_(std::move(input)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_remainder_(drop_remainder),
        span_((size - 1) * stride + 1) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < span_) {
      std::optional<Element> e = input_->GetNext();
      if (!e) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    const auto buffered = static_cast<int64_t>(buffer_.size());
    if (buffered == 0 || (drop_remainder_ && buffered < span_)) {
      buffer_.clear();
      return std::nullopt;
    }
    std::vector<Element> window;
    window.reserve(size_);
    for (int64_t i = 0; i < buffered; i += stride_) window.push_back(buffer_[i]);
    const int64_t first = consumed_;
    if (shift_ >= buffered) {
      for (int64_t i = buffered; !input_done_ && i < shift_; ++i) {
        if (!input_->Skip()) input_done_ = true;
      }
      buffer_.clear();
      consumed_ += shift_;
    } else {
      buffer_.erase(buffer_.begin(), buffer_.begin() + shift_);
      consumed_ += shift_;
    }
    return StackElements(std::move(window), input_->spec(), "Window", first);
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(input_done_);
    w.Write<int64_t>(consumed_);
    w.Write<uint64_t>(buffer_.size());
    for (const Element& e : buffer_) w.WriteElement(e);
    input_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    input_done_ = r.Read<uint8_t>() != 0;
    consumed_ = r.Read<int64_t>();
    if (consumed_ < 0 || consumed_ > kMaxRestoredCount) {
      throw DataLoss("Window state is corrupt: ", consumed_, " elements consumed");
    }
    const auto n = r.Read<uint64_t>();
    // Between windows the buffer holds at most span - 1 elements (a full one gave a window
    // and lost `shift` of them).
    if (n >= static_cast<uint64_t>(span_)) {
      throw DataLoss("Window state is corrupt: it buffers ", n,
                     " elements, but a window spans only ", span_);
    }
    buffer_.clear();
    for (uint64_t i = 0; i < n; ++i) {
      buffer_.push_back(r.ReadElement());
      CheckRestoredElement("Window", input_->spec(), buffer_.back());
    }
    input_->RestoreState(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  const int64_t size_;
  const int64_t shift_;
  const int64_t stride_;
  const bool drop_remainder_;
  const int64_t span_;  // input elements one window spans
  std::vector<Element> buffer_;
  bool input_done_ = false;
  int64_t consumed_ = 0;  // input elements before buffer_[0], for messages
};

class WindowDataset : public DatasetImpl {
 public:
  WindowDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t size,
                WindowOptions options)
      : DatasetImpl("Window",
                    WithLeadingDim(input->spec(), options.drop_remainder ? size : kUnknownDim),
                    {input}),
        size_(size),
        shift_(options.shift == 0 ? size : options.shift),
        stride_(options.stride),
        drop_remainder_(options.drop_remainder) {
    CheckArg(size > 0, "Window", "size must be positive, got ", size);
    CheckArg(options.shift >= 0, "Window", "shift must be positive, got ", options.shift);
    CheckArg(stride_ > 0, "Window", "stride must be positive, got ", stride_);
    // The buffer spans (size - 1) * stride + 1 elements.
    CheckArg(stride_ <= kMaxRestoredCount / size, "Window", "size ", size, " times stride ",
             stride_, " is too large");
    for (const auto& [name, ts] : input->spec()) {
      CheckArg(ts.dtype != DType::kInvalid, "Window", "component '", name, "' has no dtype");
    }
  }

  std::string Params() const override {
    return StrCat("size=", size_, " shift=", shift_, " stride=", stride_,
                  " drop_remainder=", drop_remainder_ ? "true" : "false");
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<WindowIterator>(spec(), inputs()[0]->MakeIterator(ctx), size_, shift_,
                                            stride_, drop_remainder_);
  }

 private:
  int64_t size_;
  int64_t shift_;
  int64_t stride_;
  bool drop_remainder_;
};

}  // namespace

Dataset Dataset::Window(int64_t size, WindowOptions options) const {
  return Dataset(std::make_shared<WindowDataset>(impl(), size, options));
}

}  // namespace loom::data
