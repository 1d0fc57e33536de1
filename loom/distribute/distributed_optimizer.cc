#include "loom/distribute/distributed_optimizer.h"

#include <functional>
#include <map>

#include "loom/base/check.h"
#include "loom/distribute/collective_ops.h"
#include "loom/ops/math.h"

namespace loom::distribute {
namespace {

int64_t StaticBytes(const Output& g) {
  const Shape& s = g.shape();
  if (!s.fully_defined()) return 0;  // unknown: bucketed as if small
  return s.num_elements() * static_cast<int64_t>(DTypeSize(g.dtype()));
}

int CountOps(const Graph& graph, std::string_view op) {
  int n = 0;
  for (int id = 0; id < graph.num_nodes(); ++id) n += graph.node(id)->op() == op;
  return n;
}

// Sums grads_and_vars over ranks: dense ones by AllReduceSum in buckets, sparse ones by
// AllGatherRows.
// With `scale`, dense gradients of dtype d are multiplied by scale(d) inside the start of
// their all-reduce (no Mul node of its own, which would run after the whole backward pass).
std::vector<train::GradAndVar> SumGradients(const Scope& s,
                                            const std::vector<train::GradAndVar>& grads_and_vars,
                                            DistributedOptimizerOptions options,
                                            const std::function<Output(DType)>& scale = {}) {
  std::vector<train::GradAndVar> result = grads_and_vars;
  // Buckets per dtype, filled in reverse variable order.
  std::map<DType, std::vector<std::vector<size_t>>> buckets;
  std::map<DType, int64_t> open_bytes;
  for (size_t k = grads_and_vars.size(); k-- > 0;) {
    const GradOutput& g = grads_and_vars[k].first;
    if (!g.valid()) continue;
    if (g.is_sparse()) {
      auto [indices, values] = AllGatherRows(s, g.indices, g.values);
      result[k].first = GradOutput::Sparse(indices, values, g.dense_shape);
      continue;
    }
    const DType dtype = g.dense.dtype();
    const int64_t bytes = StaticBytes(g.dense);
    auto& list = buckets[dtype];
    int64_t& filled = open_bytes[dtype];
    if (list.empty() || options.fusion_threshold_bytes <= 0 ||
        (filled > 0 && filled + bytes > options.fusion_threshold_bytes)) {
      list.emplace_back();
      filled = 0;
    }
    list.back().push_back(k);
    filled += bytes;
  }
  // One bucket in all starts when the last gradient exists: nothing would run between its
  // start and its wait, so it is one AllReduceSum (no handoff to the communication thread).
  size_t total_buckets = 0;
  for (const auto& [dtype, list] : buckets) total_buckets += list.size();
  if (total_buckets == 1) options.overlap_communication = false;
  for (const auto& [dtype, list] : buckets) {
    for (const std::vector<size_t>& bucket : list) {
      std::vector<Output> inputs;
      inputs.reserve(bucket.size());
      for (size_t k : bucket) inputs.push_back(grads_and_vars[k].first.dense);
      std::vector<Output> summed;
      if (options.overlap_communication) {
        summed = StartAndWaitAllReduceSum(s, inputs, scale ? scale(dtype) : Output());
      } else {
        if (scale) {
          for (Output& in : inputs) in = Mul(s, in, scale(dtype));
        }
        summed = AllReduceSum(s, inputs);
      }
      for (size_t j = 0; j < bucket.size(); ++j) result[bucket[j]].first = GradOutput(summed[j]);
    }
  }
  return result;
}

}  // namespace

std::vector<train::GradAndVar> SumGradientsOverRanks(
    const Scope& scope, const std::vector<train::GradAndVar>& grads_and_vars,
    DistributedOptimizerOptions options) {
  return SumGradients(scope.NewSubScope("distribute"), grads_and_vars, options);
}

std::vector<train::GradAndVar> AverageGradients(
    const Scope& scope, const std::vector<train::GradAndVar>& grads_and_vars,
    DistributedOptimizerOptions options) {
  Scope s = scope.NewSubScope("distribute");
  std::vector<train::GradAndVar> scaled = grads_and_vars;
  std::map<DType, Output> scales;
  auto scale = [&](DType dtype) {
    Output& out = scales[dtype];
    if (!out.valid()) out = ReplicaScale(s, dtype);
    return out;
  };
  for (auto& [g, var] : scaled) {
    if (g.valid() && g.is_sparse()) {
      g = GradOutput::Sparse(g.indices, Mul(s, g.values, scale(g.values.dtype())), g.dense_shape);
    }
  }
  return SumGradients(s, scaled, options, scale);
}

DistributedOptimizer::DistributedOptimizer(std::unique_ptr<train::Optimizer> inner,
                                           DistributedOptimizerOptions options)
    : Optimizer(inner ? inner->name() : std::string()),
      inner_(std::move(inner)),
      options_(options) {
  LOOM_CHECK(inner_ != nullptr) << "DistributedOptimizer: the wrapped optimizer is null";
}

std::vector<train::GradAndVar> DistributedOptimizer::ComputeGradients(
    const Scope& scope, Output loss, const std::vector<Output>& var_list) {
  if (!loss.valid() || !IsFloating(loss.dtype()) ||
      (loss.shape().rank_known() && loss.shape().rank() != 0)) {
    return inner_->ComputeGradients(scope, loss, var_list);  // throws, naming the loss
  }
  // d(loss / N) = d(loss) / N: the ranks' summed gradients are the average, with no pass
  // over the gradients.
  Scope s = scope.NewSubScope("distribute");
  Output scaled = Mul(s.WithOpName("scaled_loss"), loss, ReplicaScale(s, loss.dtype()));
  return SumGradients(s, inner_->ComputeGradients(scope, scaled, var_list), options_);
}

Operation DistributedOptimizer::ApplyGradients(const Scope& scope,
                                               const std::vector<train::GradAndVar>& grads_and_vars,
                                               Output global_step) {
  return inner_->ApplyGradients(scope, grads_and_vars, global_step);
}

Output DistributedOptimizer::GetSlot(const Output& var, const std::string& slot_name) const {
  return inner_->GetSlot(var, slot_name);
}

std::vector<std::string> DistributedOptimizer::GetSlotNames() const {
  return inner_->GetSlotNames();
}

Operation DistributedOptimizer::ApplyDense(const Scope&, Output, Output) {
  LOOM_CHECK(false) << "DistributedOptimizer::ApplyDense: ApplyGradients forwards to the "
                       "wrapped optimizer";
  return {};
}

Operation DistributedOptimizer::ApplySparse(const Scope&, Output, Output, Output) {
  LOOM_CHECK(false) << "DistributedOptimizer::ApplySparse: ApplyGradients forwards to the "
                       "wrapped optimizer";
  return {};
}

int CountAllReduceBuckets(const Graph& graph) {
  return CountOps(graph, "LoomAllReduceSum") + CountOps(graph, "LoomAllReduceStart");
}
int CountAllGatherRows(const Graph& graph) { return CountOps(graph, "LoomAllGatherRows"); }

}  // namespace loom::distribute
