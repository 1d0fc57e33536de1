// The progress line reports the loss the graph declares (GraphKeys::kLoss), not whatever a
// summary happens to be tagged "loss".
#include "loom/cli/progress.h"

#include <gtest/gtest.h>

#include <cmath>
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

TEST(FormatDurationTest, RoundsToTheNearestSecondAndClampsNegativeToZero) {
  EXPECT_EQ(FormatDuration(0.4), "0m00s");
  EXPECT_EQ(FormatDuration(59.5), "1m00s");
  EXPECT_EQ(FormatDuration(247.2), "4m07s");
  EXPECT_EQ(FormatDuration(3599.4), "59m59s");
  EXPECT_EQ(FormatDuration(7500.0), "2h05m");
  // An ETA past max_steps: truncating (x + 0.5) toward zero printed "0m-3s" here.
  EXPECT_EQ(FormatDuration(-3.7), "0m00s");
  EXPECT_EQ(FormatDuration(-7500.0), "0m00s");
  EXPECT_EQ(FormatDuration(std::nan("")), "0m00s");
}

}  // namespace
}  // namespace loom::cli
