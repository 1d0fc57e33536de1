#include "loom/data/dataset.h"

#include "loom/data/dataset_impl.h"

namespace loom::data {

DatasetImpl::DatasetImpl(std::string stage, ElementSpec spec,
                         std::vector<std::shared_ptr<const DatasetImpl>> inputs)
    : stage_(std::move(stage)), spec_(std::move(spec)), inputs_(std::move(inputs)) {
  for (const auto& [name, ts] : spec_) {
    CheckArg(ts.dtype != DType::kInvalid, stage_, "component '", name, "' has no dtype");
  }
}

std::string DatasetImpl::DebugString() const {
  std::string s = stage_;
  if (inputs_.empty()) return s;
  s += "(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i) s += ", ";
    s += inputs_[i]->DebugString();
  }
  return s + ")";
}

std::unique_ptr<Iterator> DatasetImpl::MakeIterator(const IteratorContext& ctx) const {
  if (ctx.shard != nullptr && !ctx.shard->at_batch && !passes_shard()) {
    // Below the first Batch: this stage's output is sharded. Over rows of an indexed
    // source the gather iterator shards the row indices (other shards' rows are never
    // gathered); otherwise its elements are skipped.
    auto plan = gather_plan();
    if (plan && plan->batch_size == 0) return MakeGatherIterator(*plan, ctx, stage_, spec_);
    return MakeShardIterator(MakeIterator(WithoutShard(ctx)), ctx);
  }
  if (auto plan = gather_plan()) {
    return MakeGatherIterator(*plan, ctx, stage_, LocalSpec(spec_, ctx));
  }
  return MakeIteratorInternal(ctx);
}

std::shared_ptr<const RowSource> DatasetImpl::MakeRows(const IteratorContext&) const {
  LOOM_CHECK(false) << stage_ << " is not indexed";
  return nullptr;
}

std::unique_ptr<IndexCursor> DatasetImpl::MakeIndexCursor(const IteratorContext&) const {
  LOOM_CHECK(false) << stage_ << " is not indexed";
  return nullptr;
}

std::optional<DatasetImpl::GatherPlan> DatasetImpl::gather_plan() const {
  if (indexed()) return GatherPlan{this, 0, false};
  return std::nullopt;
}

std::unique_ptr<Iterator> DatasetImpl::MakeIteratorInternal(const IteratorContext&) const {
  LOOM_CHECK(false) << stage_ << " must implement MakeIteratorInternal or be indexed";
  return nullptr;
}

IteratorContext TopLevelContext(std::shared_ptr<const Bindings> bindings,
                                std::optional<uint64_t> seed) {
  IteratorContext ctx;
  ctx.bindings = std::move(bindings);
  ctx.random_base = std::make_shared<RandomBase>(seed);
  return ctx;
}

namespace {
void AppendIdentity(const DatasetImpl& d, int depth, std::string& out) {
  out.append(2 * depth, ' ');
  out += d.stage();
  if (std::string params = d.Params(); !params.empty()) out += " " + params;
  out += "\n";
  for (const auto& in : d.inputs()) AppendIdentity(*in, depth + 1, out);
}
}  // namespace

std::string PipelineIdentity(const DatasetImpl& dataset) {
  std::string out;
  AppendIdentity(dataset, 0, out);
  return out + "spec " + SpecString(dataset.spec());
}

std::unique_ptr<Iterator> MakeTopLevelIterator(const DatasetImpl& dataset,
                                               std::shared_ptr<const Bindings> bindings,
                                               std::optional<uint64_t> seed) {
  IteratorContext ctx = TopLevelContext(std::move(bindings), seed);
  auto it = dataset.MakeIterator(ctx);
  it->set_pipeline(PipelineIdentity(dataset),
                   StrCat(dataset.DebugString(), " ", SpecString(dataset.spec())), ctx.random_base);
  return it;
}

Dataset::Dataset(std::shared_ptr<const DatasetImpl> impl) : impl_(std::move(impl)) {
  LOOM_CHECK(impl_ != nullptr);
}

const ElementSpec& Dataset::spec() const { return impl_->spec(); }

std::string Dataset::DebugString() const { return impl_->DebugString(); }

namespace {
void CollectSymbolic(const DatasetImpl& d, std::vector<Output>& out) {
  for (const Output& o : d.symbolic_inputs()) out.push_back(o);
  for (const auto& in : d.inputs()) CollectSymbolic(*in, out);
}
}  // namespace

std::unique_ptr<Iterator> Dataset::MakeIterator(std::optional<uint64_t> seed) const {
  std::vector<Output> symbolic;
  CollectSymbolic(*impl_, symbolic);
  if (!symbolic.empty()) {
    throw FailedPrecondition("dataset ", DebugString(), " reads placeholder '",
                             symbolic[0].node->name(),
                             "'; iterate it through MakeInitializableIterator(scope) and run "
                             "its initializer with the placeholder fed");
  }
  return MakeTopLevelIterator(*impl_, nullptr, seed);
}

}  // namespace loom::data
