// A checkpoint larger than 2 GiB is written streaming: peak memory grows by far less than
// the variable's size while saving (no second copy), and the file verifies and lists.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <fstream>

#include "loom/ops/state.h"
#include "loom/train/runtime_test_util.h"
#include "loom/train/saver.h"

namespace loom::train {
namespace {

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

int64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

TEST(Checkpoint2GiB, StreamsWithoutASecondCopy) {
  constexpr int64_t kElements = (int64_t{2} << 30) / 4 + (64 << 20);  // 2.25 GiB of float32
  // The variable, plus the file's pages while VerifyCheckpoint maps it.
  if (AvailableMemoryBytes() < 10 * kElements) {
    GTEST_SKIP() << "needs about " << (10 * kElements >> 30) << " GiB of available memory";
  }
  testing::TempDir dir;
  Graph graph;
  Scope s(graph);
  Output init = Placeholder(s.WithOpName("init"), kFloat32, Shape{kElements});
  Variable big(s.WithOpName("big"), init);
  Session session(graph);
  {
    Tensor value(kFloat32, Shape{kElements});
    float* p = value.data<float>();
    for (int64_t i = 0; i < kElements; ++i) p[i] = static_cast<float>(i % 1000);
    session.Run({{init, value}}, {}, {big.initializer});
  }
  const int64_t before = PeakRssBytes();
  const std::string path = Saver(graph).Save(session, dir.Join("model.ckpt"), 1);
  const int64_t growth = PeakRssBytes() - before;
  EXPECT_LT(growth, int64_t{256} << 20) << "saving grew peak RSS by " << (growth >> 20) << " MiB";
  const std::string file = CheckpointFilePath(path);
  EXPECT_GT(Env::Default()->GetFileSize(file), int64_t{2} << 30);
  auto entries = ListVariables(Env::Default(), file);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].shape, (Shape{kElements}));
  VerifyCheckpoint(Env::Default(), file);  // maps the file: the CRC covers > 2 GiB
}

}  // namespace
}  // namespace loom::train
