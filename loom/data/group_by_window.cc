// GroupByWindow: tf.data.experimental.group_by_window. Elements are kept per key; a group
// that reaches its window size is handed to reduce_fn as a dataset (GroupDataset below,
// over the group's elements as they came, so they may differ in shape: padded_batch in
// reduce_fn is the common use) and the dataset it returns is read to its end before the
// input is read again. At the end of input the groups left are flushed in ascending key
// order (TF keeps them in a std::map too). The state holds every buffered group, the keys'
// window sizes, and the group being read (its key, elements and iterator state): reduce_fn
// is called on it again when restoring.
#include <map>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

using Group = std::shared_ptr<const std::vector<Element>>;

class GroupIterator : public Iterator {
 public:
  GroupIterator(ElementSpec spec, Group group)
      : Iterator("Group", std::move(spec)), group_(std::move(group)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    if (next_ >= group_->size()) return std::nullopt;
    return (*group_)[next_++];
  }
  void SaveInternal(StateWriter& w) override { w.Write<uint64_t>(next_); }
  void RestoreInternal(StateReader& r) override {
    next_ = r.Read<uint64_t>();
    if (next_ > group_->size()) {
      throw DataLoss("Group state is corrupt: position ", next_, " in a group of ", group_->size());
    }
  }

 private:
  Group group_;
  size_t next_ = 0;
};

// One group's elements as a dataset (TF's window dataset).
class GroupDataset : public DatasetImpl {
 public:
  GroupDataset(ElementSpec spec, Group group)
      : DatasetImpl("Group", std::move(spec), {}), group_(std::move(group)) {}

  std::string Params() const override { return StrCat("elements=", group_->size()); }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<GroupIterator>(spec(), group_);
  }

 private:
  Group group_;
};

class GroupByWindowIterator : public Iterator {
 public:
  GroupByWindowIterator(ElementSpec spec, std::unique_ptr<Iterator> input, KeyFn key_fn,
                        GroupReduceFn reduce_fn, WindowSizeFn window_size_fn, IteratorContext ctx)
      : Iterator("GroupByWindow", std::move(spec)),
        input_(std::move(input)),
        key_fn_(std::move(key_fn)),
        reduce_fn_(std::move(reduce_fn)),
        window_size_fn_(std::move(window_size_fn)),
        ctx_(std::move(ctx)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    for (;;) {
      if (current_) {
        if (std::optional<Element> e = current_->GetNext()) return e;
        current_.reset();
      }
      if (!input_done_) {
        std::optional<Element> e = input_->GetNext();
        if (!e) {
          input_done_ = true;
        } else {
          const int64_t key = key_fn_(*e);
          std::vector<Element>& group = groups_[key];
          group.push_back(std::move(*e));
          if (static_cast<int64_t>(group.size()) >= WindowSize(key)) StartFlushing(key);
          continue;
        }
      }
      if (groups_.empty()) return std::nullopt;
      StartFlushing(groups_.begin()->first);
    }
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(input_done_);
    w.Write<uint64_t>(window_sizes_.size());
    for (const auto& [key, size] : window_sizes_) {
      w.Write<int64_t>(key);
      w.Write<int64_t>(size);
    }
    w.Write<uint64_t>(groups_.size());
    for (const auto& [key, group] : groups_) WriteGroup(w, key, group);
    w.Write<uint8_t>(current_ != nullptr);
    if (current_) {
      WriteGroup(w, current_key_, *current_group_);
      current_->SaveState(w);
    }
    input_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    input_done_ = r.Read<uint8_t>() != 0;
    window_sizes_.clear();
    const auto num_sizes = r.Read<uint64_t>();
    for (uint64_t i = 0; i < num_sizes; ++i) {
      const auto key = r.Read<int64_t>();
      const auto size = r.Read<int64_t>();
      if (size <= 0 || !window_sizes_.emplace(key, size).second) {
        throw DataLoss("GroupByWindow state is corrupt: window size ", size, " for key ", key);
      }
    }
    groups_.clear();
    const auto num_groups = r.Read<uint64_t>();
    for (uint64_t i = 0; i < num_groups; ++i) {
      auto [key, group] = ReadGroup(r);
      // A buffered group is never full (a full one is flushed at once) nor empty.
      const auto n = static_cast<int64_t>(group.size());
      if (n == 0 || n >= window_sizes_.at(key) || groups_.contains(key)) {
        throw DataLoss("GroupByWindow state is corrupt: a buffered group of key ", key, " holds ",
                       n, " elements");
      }
      groups_.emplace(key, std::move(group));
    }
    current_.reset();
    if (r.Read<uint8_t>()) {
      auto [key, group] = ReadGroup(r);
      current_key_ = key;
      current_group_ = std::make_shared<const std::vector<Element>>(std::move(group));
      current_ = Reduce(key, current_group_);
      current_->RestoreState(r);
    }
    input_->RestoreState(r);
  }

 private:
  int64_t WindowSize(int64_t key) {
    auto it = window_sizes_.find(key);
    if (it != window_sizes_.end()) return it->second;
    const int64_t size = window_size_fn_(key);
    if (size <= 0) {
      throw InvalidArgument("GroupByWindow: the window size of key ", key,
                            " must be positive, got ", size);
    }
    window_sizes_.emplace(key, size);
    return size;
  }

  void StartFlushing(int64_t key) {
    auto node = groups_.extract(key);
    current_key_ = key;
    current_group_ = std::make_shared<const std::vector<Element>>(std::move(node.mapped()));
    current_ = Reduce(key, current_group_);
  }

  std::unique_ptr<Iterator> Reduce(int64_t key, const Group& group) {
    const ElementSpec& input_spec = input_->spec();
    Dataset reduced = reduce_fn_(key, Dataset(std::make_shared<GroupDataset>(input_spec, group)));
    if (reduced.spec().size() != spec().size() ||
        !std::equal(spec().begin(), spec().end(), reduced.spec().begin(), [](auto& a, auto& b) {
          return a.first == b.first && a.second.dtype == b.second.dtype &&
                 a.second.shape.IsCompatibleWith(b.second.shape);
        })) {
      throw InvalidArgument("GroupByWindow: reduce_fn returned a dataset with spec ",
                            SpecString(reduced.spec()), " for key ", key,
                            ", but the declared output_spec is ", SpecString(spec()));
    }
    return reduced.impl()->MakeIterator(WithoutShard(ctx_));
  }

  void WriteGroup(StateWriter& w, int64_t key, const std::vector<Element>& group) {
    w.Write<int64_t>(key);
    w.Write<uint64_t>(group.size());
    for (const Element& e : group) w.WriteElement(e);
  }

  std::pair<int64_t, std::vector<Element>> ReadGroup(StateReader& r) {
    const auto key = r.Read<int64_t>();
    const auto n = r.Read<uint64_t>();
    auto size = window_sizes_.find(key);
    if (size == window_sizes_.end() || n > static_cast<uint64_t>(size->second)) {
      throw DataLoss("GroupByWindow state is corrupt: a group of key ", key, " holds ", n,
                     " elements");
    }
    std::vector<Element> group;
    for (uint64_t i = 0; i < n; ++i) {
      group.push_back(r.ReadElement());
      CheckRestoredElement("GroupByWindow", input_->spec(), group.back());
    }
    return {key, std::move(group)};
  }

  std::unique_ptr<Iterator> input_;
  KeyFn key_fn_;
  GroupReduceFn reduce_fn_;
  WindowSizeFn window_size_fn_;
  IteratorContext ctx_;
  bool input_done_ = false;
  std::map<int64_t, std::vector<Element>> groups_;  // not yet full
  std::map<int64_t, int64_t> window_sizes_;         // window_size_fn(key), asked once per key
  int64_t current_key_ = 0;
  Group current_group_;
  std::unique_ptr<Iterator> current_;  // over reduce_fn(current_key_, current_group_)
};

class GroupByWindowDataset : public DatasetImpl {
 public:
  GroupByWindowDataset(const std::shared_ptr<const DatasetImpl>& input, KeyFn key_fn,
                       GroupReduceFn reduce_fn, WindowSizeFn window_size_fn, std::string params,
                       ElementSpec spec)
      : DatasetImpl("GroupByWindow", std::move(spec), {input}),
        key_fn_(std::move(key_fn)),
        reduce_fn_(std::move(reduce_fn)),
        window_size_fn_(std::move(window_size_fn)),
        params_(std::move(params)) {
    CheckArg(static_cast<bool>(key_fn_), "GroupByWindow", "key_fn is empty");
    CheckArg(static_cast<bool>(reduce_fn_), "GroupByWindow", "reduce_fn is empty");
    CheckArg(static_cast<bool>(window_size_fn_), "GroupByWindow", "window_size_fn is empty");
    CheckArg(!this->spec().empty(), "GroupByWindow", "output_spec has no components");
  }

  std::string Params() const override { return params_; }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<GroupByWindowIterator>(spec(), inputs()[0]->MakeIterator(ctx), key_fn_,
                                                   reduce_fn_, window_size_fn_, ctx);
  }

 private:
  KeyFn key_fn_;
  GroupReduceFn reduce_fn_;
  WindowSizeFn window_size_fn_;
  std::string params_;
};

}  // namespace

Dataset Dataset::GroupByWindow(KeyFn key_fn, GroupReduceFn reduce_fn, int64_t window_size,
                               const ElementSpec& output_spec) const {
  CheckArg(window_size > 0, "GroupByWindow", "window_size must be positive, got ", window_size);
  return Dataset(std::make_shared<GroupByWindowDataset>(
      impl(), std::move(key_fn), std::move(reduce_fn),
      [window_size](int64_t) { return window_size; }, StrCat("window_size=", window_size),
      output_spec));
}

Dataset Dataset::GroupByWindow(KeyFn key_fn, GroupReduceFn reduce_fn, WindowSizeFn window_size_fn,
                               const ElementSpec& output_spec) const {
  return Dataset(std::make_shared<GroupByWindowDataset>(
      impl(), std::move(key_fn), std::move(reduce_fn), std::move(window_size_fn), "", output_spec));
}

}  // namespace loom::data
