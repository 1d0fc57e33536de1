#ifndef LOOM_DATA_INDEX_PRESERVING_H_
#define LOOM_DATA_INDEX_PRESERVING_H_

// Base of the stages that only reorder or select elements (Shuffle, Repeat, Take, Skip,
// Shard). Each writes its logic once as a Cursor<Item> template; over an index-addressable
// input the stage stays index-addressable (it runs on row indices), otherwise it runs on
// elements. One input, same spec.
#include <functional>

#include "loom/data/dataset_impl.h"

namespace loom::data {

template <typename Item>
using CursorFactory = std::function<std::unique_ptr<Cursor<Item>>(const IteratorContext&)>;

class IndexPreservingDataset : public DatasetImpl {
 public:
  IndexPreservingDataset(std::string stage, const std::shared_ptr<const DatasetImpl>& input)
      : DatasetImpl(std::move(stage), input->spec(), {input}) {}

  const std::shared_ptr<const DatasetImpl>& input() const { return inputs()[0]; }

  bool indexed() const override { return input()->indexed(); }
  std::shared_ptr<const RowSource> MakeRows(const IteratorContext& ctx) const override {
    return input()->MakeRows(ctx);
  }
  std::unique_ptr<IndexCursor> MakeIndexCursor(const IteratorContext& ctx) const override {
    auto in = input();
    return WrapIndices([in](const IteratorContext& c) { return in->MakeIndexCursor(c); }, ctx);
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    auto in = input();
    return IteratorFromCursor(
        stage(), spec(),
        WrapElements(
            [in](const IteratorContext& c) { return CursorFromIterator(in->MakeIterator(c)); },
            ctx));
  }
  // Both usually forward to one template: return Wrap<int64_t>(std::move(input), ctx);
  virtual std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> input,
                                                       const IteratorContext& ctx) const = 0;
  virtual std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> input,
                                                        const IteratorContext& ctx) const = 0;
};

}  // namespace loom::data

#endif  // LOOM_DATA_INDEX_PRESERVING_H_
