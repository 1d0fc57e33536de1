// The case that breaks TensorFlow: a graph whose constants total more than 2 GiB. TF1
// fails with "GraphDef cannot be larger than 2GB"; Loom writes the constants to the
// sidecar, keeps the graph file tiny, and loads it back (zero-copy, memory-mapped).
#include <gtest/gtest.h>
#include <unistd.h>

#include "loom/graph/graph_def.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

TEST(Graph2GiBTest, RoundTripsConstantsLargerThanTheProtobufLimit) {
  const int64_t kPart = int64_t{768} << 20;  // 3 x 768 MiB = 2.25 GiB
  std::string dir = "/tmp/loom_graph_2gib_" + std::to_string(getpid());
  Env* env = Env::Default();
  env->CreateDirs(dir);
  std::string path = JoinPath(dir, "graph.pb");
  {
    Graph graph;
    Scope s(graph);
    for (int i = 0; i < 3; ++i) {
      Tensor part = Tensor::Zeros(kUInt8, {kPart});
      part.flat<uint8_t>()[kPart - 1] = static_cast<uint8_t>(i + 1);
      Identity(s.WithOpName(StrCat("out", i)), Const(s.WithOpName(StrCat("c", i)), part));
    }
    ExportGraph(graph, env, path);
  }
  EXPECT_LT(env->GetFileSize(path), 4096u);
  EXPECT_GT(env->GetFileSize(GraphSidecarPath(path)), uint64_t{2} << 30);

  OpRegistry registry;
  RegisterStateOps(registry);
  Graph loaded;
  ImportGraph(env, path, registry, loaded);
  Session session(loaded);
  for (int i = 0; i < 3; ++i) {
    Tensor out = session.Eval(loaded.GetOutput("out" + std::to_string(i)));
    ASSERT_EQ(out.NumElements(), kPart);
    EXPECT_EQ(out.flat<uint8_t>()[kPart - 1], i + 1);
    EXPECT_EQ(out.flat<uint8_t>()[0], 0);
  }
  env->DeleteRecursively(dir);
}

}  // namespace
}  // namespace loom
