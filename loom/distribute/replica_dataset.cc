#include "loom/distribute/replica_dataset.h"

#include "loom/base/logging.h"
#include "loom/data/dataset_impl.h"

namespace loom::distribute {
namespace {

class ReplicaIterator : public data::Iterator {
 public:
  ReplicaIterator(data::ElementSpec spec, std::unique_ptr<data::Iterator> input,
                  std::shared_ptr<Communicator> comm, bool shard_rows)
      : Iterator("ReplicaShard", std::move(spec)),
        input_(std::move(input)),
        comm_(std::move(comm)),
        shard_rows_(shard_rows) {}

 protected:
  std::optional<data::Element> GetNextInternal() override {
    if (ended_) return std::nullopt;  // every rank ended at the same call
    std::optional<data::Element> next = input_->GetNext();
    bool usable = next.has_value();
    int64_t rows = 0;
    if (usable && shard_rows_) {
      rows = Rows(*next);
      usable = rows % comm_->size() == 0;
      if (!usable && comm_->rank() == 0) {
        LOOM_LOG(WARNING) << "A batch of " << rows << " rows cannot be split evenly over "
                          << comm_->size() << " ranks; the input ends here (make the data "
                          << "a multiple of the global batch, or repeat it)";
      }
    }
    if (AnyRank(*comm_, !usable)) {
      ended_ = true;
      return std::nullopt;
    }
    if (!shard_rows_ || comm_->size() == 1) return next;
    const int64_t per = rows / comm_->size();
    const int64_t begin = comm_->rank() * per;
    data::Element out;
    for (const auto& [name, t] : *next)
      out.emplace_hint(out.end(), name, t.Slice(begin, begin + per));
    return out;
  }
  void SaveInternal(data::StateWriter& w) override {
    w.Write<uint8_t>(ended_);
    input_->SaveState(w);
  }
  void RestoreInternal(data::StateReader& r) override {
    ended_ = r.Read<uint8_t>() != 0;
    input_->RestoreState(r);
  }

 private:
  static int64_t Rows(const data::Element& e) {
    int64_t rows = -1;
    for (const auto& [name, t] : e) {
      if (t.shape().rank() == 0) {
        throw InvalidArgument("ReplicaShard: component '", name,
                              "' is a scalar, but sharding a global batch over ranks needs "
                              "batches (call Batch(global_batch_size) in the input_fn)");
      }
      if (rows >= 0 && t.dim(0) != rows) {
        throw InvalidArgument("ReplicaShard: components must share dim 0, but '", name, "' has ",
                              t.dim(0), " rows and another has ", rows);
      }
      rows = t.dim(0);
    }
    return rows;
  }

  std::unique_ptr<data::Iterator> input_;
  std::shared_ptr<Communicator> comm_;
  bool shard_rows_;
  bool ended_ = false;
};

data::ElementSpec ReplicaSpec(const data::ElementSpec& global, int size, bool shard_rows) {
  if (!shard_rows) return global;
  data::ElementSpec out = global;
  for (auto& [name, ts] : out) {
    if (!ts.shape.rank_known() || ts.shape.rank() == 0) continue;
    const int64_t b = ts.shape.dim(0);
    if (b != kUnknownDim && b % size != 0) {
      throw InvalidArgument("the global batch of component '", name, "' has ", b, " rows, which ",
                            size,
                            " ranks cannot share evenly: make the "
                            "batch size a multiple of the number of ranks");
    }
    if (b != kUnknownDim) ts.shape.set_dim(0, b / size);
  }
  return out;
}

class ReplicaDatasetImpl : public data::DatasetImpl {
 public:
  ReplicaDatasetImpl(std::shared_ptr<const data::DatasetImpl> input,
                     std::shared_ptr<Communicator> comm, bool shard_rows)
      : DatasetImpl("ReplicaShard", ReplicaSpec(input->spec(), comm->size(), shard_rows), {input}),
        comm_(std::move(comm)),
        shard_rows_(shard_rows) {}

 protected:
  std::unique_ptr<data::Iterator> MakeIteratorInternal(
      const data::IteratorContext& ctx) const override {
    return std::make_unique<ReplicaIterator>(spec(), inputs()[0]->MakeIterator(ctx), comm_,
                                             shard_rows_);
  }

 private:
  std::shared_ptr<Communicator> comm_;
  bool shard_rows_;
};

}  // namespace

data::Dataset ReplicaDataset(data::Dataset global, std::shared_ptr<Communicator> comm,
                             bool shard_rows) {
  return data::Dataset(
      std::make_shared<ReplicaDatasetImpl>(global.impl(), std::move(comm), shard_rows));
}

}  // namespace loom::distribute
