#include "loom/estimator/all_ops.h"

#include "loom/data/iterator_ops.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/estimator/metrics.h"
#include "loom/estimator/tf_ops.h"
#include "loom/ops/ops_layer.h"
#include "loom/runtime/while_loop.h"
#include "loom/train/summary.h"
#include "loom/train/training_ops.h"

namespace loom {

const OpRegistry& AllOps() {
  // A function-local constant, built once (thread-safe initialization), never mutated.
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    // One call per layer or family; each Register call validates its records.
    RegisterOpsLayerOps(*r);
    RegisterWhileOps(*r);
    data::RegisterDataOps(*r);
    train::RegisterTrainOps(*r);
    train::RegisterSummaryOps(*r);
    metrics::RegisterMetricOps(*r);
    feature_column::RegisterFeatureColumnOps(*r);
    tf_import::RegisterTfImportOps(*r);
    return r;
  }();
  return *registry;
}

}  // namespace loom
