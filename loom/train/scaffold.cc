#include "loom/train/scaffold.h"

#include "loom/ops/state.h"
#include "loom/train/summary.h"

namespace loom::train {

void Scaffold::Finalize(Graph& graph) {
  if (!finalized_) {
    Scope root(graph);
    if (!init_op.valid()) init_op = GlobalVariablesInitializer(root);
    if (!local_init_op.valid()) local_init_op = LocalVariablesInitializer(root);
    if (!summary_op.valid()) summary_op = MergeAllSummaries(root);
    if (!saver) saver = std::make_shared<Saver>(graph, saver_options);
    finalized_ = true;
  }
  graph.Finalize();
}

}  // namespace loom::train
