#include "loom/estimator/all_ops.h"

#include "loom/data/iterator_ops.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/estimator/metrics.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/state.h"
#include "loom/train/summary.h"
#include "loom/train/training_ops.h"

namespace loom {

const OpRegistry& AllOps() {
  // A function-local constant, built once (thread-safe initialization), never mutated.
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterStateOps(*r);
    RegisterGradSupportOps(*r);
    RegisterMathOps(*r);
    RegisterArrayOps(*r);
    RegisterRandomOps(*r);
    RegisterNnOps(*r);
    data::RegisterDataOps(*r);
    train::RegisterTrainOps(*r);
    train::RegisterSummaryOps(*r);
    metrics::RegisterMetricOps(*r);
    feature_column::RegisterFeatureColumnOps(*r);
    return r;
  }();
  return *registry;
}

}  // namespace loom
