#include "loom/distribute/replica_dataset.h"

#include "loom/data/dataset_impl.h"
#include "loom/data/global_batches.h"

namespace loom::distribute {
namespace {

// An input_fn's own shard: elements pass through; the end of input is agreed.
class ReplicaIterator : public data::Iterator {
 public:
  ReplicaIterator(data::ElementSpec spec, std::unique_ptr<data::Iterator> input,
                  std::shared_ptr<Communicator> comm)
      : Iterator("ReplicaShard", std::move(spec)),
        input_(std::move(input)),
        comm_(std::move(comm)) {}

 protected:
  std::optional<data::Element> GetNextInternal() override {
    if (ended_) return std::nullopt;  // every rank ended at the same call
    std::optional<data::Element> next = input_->GetNext();
    if (AnyRank(*comm_, !next.has_value())) {
      ended_ = true;
      return std::nullopt;
    }
    return next;
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
  std::unique_ptr<data::Iterator> input_;
  std::shared_ptr<Communicator> comm_;
  bool ended_ = false;
};

class ReplicaDatasetImpl : public data::DatasetImpl {
 public:
  ReplicaDatasetImpl(const std::shared_ptr<const data::DatasetImpl>& input,
                     std::shared_ptr<Communicator> comm)
      : DatasetImpl("ReplicaShard", input->spec(), {input}), comm_(std::move(comm)) {}

  // Each rank's position is its own shard's: it fits only as many ranks.
  std::string Params() const override { return StrCat("num_input_pipelines=", comm_->size()); }

 protected:
  std::unique_ptr<data::Iterator> MakeIteratorInternal(
      const data::IteratorContext& ctx) const override {
    return std::make_unique<ReplicaIterator>(spec(), inputs()[0]->MakeIterator(ctx), comm_);
  }

 private:
  std::shared_ptr<Communicator> comm_;
};

}  // namespace

data::Dataset ReplicaDataset(const data::Dataset& global, std::shared_ptr<Communicator> comm,
                             bool shard_rows) {
  if (!shard_rows) {
    return data::Dataset(std::make_shared<ReplicaDatasetImpl>(global.impl(), std::move(comm)));
  }
  const int size = comm->size();
  const int rank = comm->rank();
  return data::ShardGlobalBatches(
      global, size, rank, [comm](bool this_rank_has) { return !AnyRank(*comm, !this_rank_has); });
}

}  // namespace loom::distribute
