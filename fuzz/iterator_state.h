#ifndef LOOM_FUZZ_ITERATOR_STATE_H_
#define LOOM_FUZZ_ITERATOR_STATE_H_

// The pipelines whose saved iterator state fuzz_iterator_state restores from fuzzed bytes
// (shared with the seed writer, which saves real states of the same pipelines). They
// cover the stages whose state holds more than a counter: Shuffle over row indices and over
// elements, Batch, PaddedBatch, Unbatch, Interleave, Repeat, Take, Skip, Shard, Prefetch
// (both paths), Cache and Concatenate.
#include <vector>

#include "loom/data/dataset.h"

namespace loom::fuzz {

inline std::vector<data::Dataset> IteratorStatePipelines() {
  using data::Dataset;
  using data::Element;
  auto identity = [](Element e) { return e; };
  std::vector<float> xs(30);
  for (int i = 0; i < 30; ++i) xs[i] = static_cast<float>(i);
  const Tensor x = Tensor::FromVector<float>(xs, Shape{10, 3});
  const Tensor y = Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Dataset rows = data::FromTensorSlices({{"x", x}, {"y", y}});
  std::vector<Dataset> out;
  // 0: the fast path: shuffled row indices gathered into batches.
  out.push_back(rows.Shuffle(4, {.seed = 7}).Batch(3).Repeat(2));
  // 1: the element path: Shuffle's buffer and Batch hold elements.
  out.push_back(rows.Map(identity).Shuffle(4, {.seed = 7}).Batch(3, {.drop_remainder = true}));
  // 2: Unbatch of batches.
  out.push_back(rows.Batch(4).Unbatch());
  // 3: Interleave of ranges made from each input element.
  out.push_back(data::Range(0, 4).Interleave(
      [](const Element& e) {
        const int64_t v = e.at("x").scalar<int64_t>();
        return data::Range(0, v % 5 + 1);
      },
      {{"x", {kInt64, Shape{}}}}, {.cycle_length = 2, .block_length = 2}));
  // 4: counters over row indices, with the index-gathering Prefetch.
  out.push_back(data::Range(0, 20).Repeat(3).Skip(2).Take(30).Shard(2, 1).Prefetch(2));
  // 5: the same stages over elements, and the element Prefetch.
  out.push_back(data::Range(0, 20).Map(identity).Repeat(-1).Take(50).Shard(3, 2).Prefetch(2));
  // 6: an in-memory Cache and Concatenate.
  out.push_back(
      data::Range(0, 5).Concatenate(data::Range(5, 10)).Cache().Shuffle(3, {.seed = 1}).Repeat(2));
  // 7: PaddedBatch of variable-length vectors.
  out.push_back(data::Range(1, 7)
                    .Map(
                        [](Element e) {
                          const int64_t n = e.at("x").scalar<int64_t>();
                          return Element{{"v", Tensor(kFloat32, Shape{n})}};
                        },
                        {.output_spec = data::ElementSpec{{"v", {kFloat32, Shape{-1}}}}})
                    .PaddedBatch(2));
  return out;
}

}  // namespace loom::fuzz

#endif  // LOOM_FUZZ_ITERATOR_STATE_H_
