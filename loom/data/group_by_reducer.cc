// GroupByReducer: tf.data.experimental.group_by_reducer. The input is read to its end on
// the first GetNext, folding each element into its key's state; then each key's state is
// finalized into one element, in ascending key order (TF keeps the states in a std::map).
// The state holds every key's state, how many have been output, and the input's state.
#include <map>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class GroupByReducerIterator : public Iterator {
 public:
  GroupByReducerIterator(ElementSpec spec, std::unique_ptr<Iterator> input, KeyFn key_fn,
                         Reducer reducer)
      : Iterator("GroupByReducer", std::move(spec)),
        input_(std::move(input)),
        key_fn_(std::move(key_fn)),
        reducer_(std::move(reducer)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (!input_done_) {
      std::optional<Element> e = input_->GetNext();
      if (!e) {
        input_done_ = true;
        break;
      }
      const int64_t key = key_fn_(*e);
      auto it = states_.find(key);
      if (it == states_.end()) it = states_.emplace(key, reducer_.init(key)).first;
      it->second = reducer_.reduce(std::move(it->second), std::move(*e));
    }
    if (output_ >= states_.size()) return std::nullopt;
    auto it = std::next(states_.begin(), static_cast<std::ptrdiff_t>(output_++));
    return reducer_.finalize(it->second);
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(input_done_);
    w.Write<uint64_t>(output_);
    w.Write<uint64_t>(states_.size());
    for (const auto& [key, state] : states_) {
      w.Write<int64_t>(key);
      w.WriteElement(state);
    }
    input_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    input_done_ = r.Read<uint8_t>() != 0;
    output_ = r.Read<uint64_t>();
    const auto n = r.Read<uint64_t>();
    states_.clear();
    for (uint64_t i = 0; i < n; ++i) {
      const auto key = r.Read<int64_t>();
      // The states' structure is the reducer's: the functions check what they read.
      if (!states_.emplace(key, r.ReadElement()).second) {
        throw DataLoss("GroupByReducer state is corrupt: key ", key, " appears twice");
      }
    }
    if (output_ > states_.size() || (!input_done_ && output_ != 0)) {
      throw DataLoss("GroupByReducer state is corrupt: ", output_, " of ", states_.size(),
                     " groups output");
    }
    input_->RestoreState(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  KeyFn key_fn_;
  Reducer reducer_;
  bool input_done_ = false;
  std::map<int64_t, Element> states_;
  size_t output_ = 0;  // keys finalized so far, in order
};

class GroupByReducerDataset : public DatasetImpl {
 public:
  GroupByReducerDataset(const std::shared_ptr<const DatasetImpl>& input, KeyFn key_fn,
                        Reducer reducer, ElementSpec spec)
      : DatasetImpl("GroupByReducer", std::move(spec), {input}),
        key_fn_(std::move(key_fn)),
        reducer_(std::move(reducer)) {
    CheckArg(static_cast<bool>(key_fn_), "GroupByReducer", "key_fn is empty");
    CheckArg(reducer_.init && reducer_.reduce && reducer_.finalize, "GroupByReducer",
             "the reducer needs init, reduce and finalize");
    CheckArg(!this->spec().empty(), "GroupByReducer", "output_spec has no components");
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<GroupByReducerIterator>(spec(), inputs()[0]->MakeIterator(ctx), key_fn_,
                                                    reducer_);
  }

 private:
  KeyFn key_fn_;
  Reducer reducer_;
};

}  // namespace

Dataset Dataset::GroupByReducer(KeyFn key_fn, Reducer reducer,
                                const ElementSpec& output_spec) const {
  return Dataset(std::make_shared<GroupByReducerDataset>(impl(), std::move(key_fn),
                                                         std::move(reducer), output_spec));
}

}  // namespace loom::data
