// The progress line reports the loss the graph declares (GraphKeys::kLoss), not whatever a
// summary happens to be tagged "loss".
#include "loom/cli/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "loom/graph/collections.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/train/summary.h"

namespace loom::cli {
namespace {

// Drives a progress hook through one step of `graph` and returns what it printed.
std::string OneStep(Graph& graph) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  std::shared_ptr<train::SessionRunHook> hook = NewProgressHook({.every_steps = 1, .out = out});
  hook->Begin(graph);
  Session session(graph);
  hook->AfterCreateSession(session);
  train::SessionRunArgs original;
  train::SessionRunContext context(original, session);
  const train::SessionRunArgs args = hook->BeforeRun(context);
  train::SessionRunValues values;
  values.results = session.Run({}, args.fetches);
  hook->AfterRun(context, values);
  hook->End(session);
  std::fclose(out);
  std::string printed(buffer, size);
  std::free(buffer);
  return printed;
}

TEST(ProgressHookTest, ReportsTheDeclaredLossNotASummaryTaggedLoss) {
  for (DType dtype : {kFloat32, kFloat64}) {
    Graph graph;
    Scope s(graph);
    const Output loss =
        Identity(s.WithOpName("loss"),
                 dtype == kFloat32 ? Tensor::Scalar<float>(0.25f) : Tensor::Scalar<double>(0.25));
    const Output decoy = Identity(s.WithOpName("decoy"), Tensor::Scalar<float>(9.0f));
    train::ScalarSummary(s, "loss", decoy);
    graph.collections().Add(GraphKeys::kLoss, loss);

    const std::string printed = OneStep(graph);
    EXPECT_NE(printed.find("step 1  loss 0.2500"), std::string::npos) << printed;
  }
}

TEST(ProgressHookTest, AGraphWithoutADeclaredLossPrintsNoneFetched) {
  Graph graph;
  Scope s(graph);
  train::ScalarSummary(s, "loss", Identity(s, Tensor::Scalar<float>(9.0f)));
  const std::string printed = OneStep(graph);
  EXPECT_NE(printed.find("step 1  loss 0.0000"), std::string::npos) << printed;
}

}  // namespace
}  // namespace loom::cli
