// GraphDef import (loom/graph/graph_def.h): the input is a binary GraphDef file, imported
// into an empty Graph with the ops of every layer up to train (shape rules run for each
// node; the estimator's own layer, metric and feature-column ops are left out so that the
// harness needs no estimator build). A second file beside it, the sidecar, holds one float
// tensor for nodes with external values.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/data/iterator_ops.h"
#include "loom/graph/graph.h"
#include "loom/graph/graph_def.h"
#include "loom/io/safetensors.h"
#include "loom/ops/ops_layer.h"
#include "loom/train/summary.h"
#include "loom/train/training_ops.h"

namespace {
const loom::OpRegistry* registry = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace loom;
  fuzz::SilenceLogs();
  auto* r = new OpRegistry();
  RegisterOpsLayerOps(*r);
  data::RegisterDataOps(*r);
  train::RegisterTrainOps(*r);
  train::RegisterSummaryOps(*r);
  registry = r;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/g/graph.pb", fuzz::AsView(data, size));
  WriteSafetensors(env.get(), GraphSidecarPath("/g/graph.pb"),
                   {{"c", Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2})}}, {},
                   {.atomic = false});
  try {
    Graph graph;
    ImportGraph(env.get(), "/g/graph.pb", *registry, graph);
    graph.Finalize();
  } catch (const Error&) {
  }
  return 0;
}
