// The job-file examples of docs/cli.md, as printed: the reference job (every key, with its
// comments) parses and builds its estimator, and the "Record features" table reads records
// and trains. (doc_examples_test does the same for the docs' C++ examples.)
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/cli/job.h"
#include "loom/io/example_builder.h"
#include "loom/io/record_writer.h"
#include "loom/testing/temp_dir.h"

namespace loom::cli {
namespace {

// The ```toml blocks of docs/cli.md, in order.
std::vector<std::string> CliDocTomlBlocks() {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/docs/cli.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  // (Not std::regex: libstdc++'s matcher recurses per character and overflows the stack
  // on an 80-line block under ASan.)
  std::vector<std::string> blocks;
  const std::string open = "```toml\n", close = "```";
  for (size_t at = doc.find(open); at != std::string::npos; at = doc.find(open, at)) {
    const size_t begin = at + open.size(), end = doc.find(close, begin);
    if (end == std::string::npos) break;
    blocks.push_back(doc.substr(begin, end - begin));
    at = end + close.size();
  }
  return blocks;
}

TEST(JobDocsTest, ReferenceJobParsesAndBuildsItsEstimator) {
  const std::vector<std::string> blocks = CliDocTomlBlocks();
  ASSERT_EQ(blocks.size(), 2u) << "docs/cli.md's toml blocks changed: update this test";
  const Job job = ParseJob(blocks[0], "docs/cli.md");
  EXPECT_EQ(job.model_type, "dnn_classifier");
  EXPECT_EQ(job.hidden_units, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(job.run_config.model_dir, "runs/demo");
  EXPECT_TRUE(job.schedule.has_value());
  EXPECT_NE(MakeEstimator(job), nullptr);
}

TEST(JobDocsTest, RecordFeaturesTableReadsRecordsAndTrains) {
  const std::vector<std::string> blocks = CliDocTomlBlocks();
  ASSERT_EQ(blocks.size(), 2u);
  loom::testing::TempDir dir("job_docs");
  const std::string records = dir.Join("train.tfrecord");
  {
    auto writer = RecordWriter::Open(Env::Default(), records, {});
    for (int i = 0; i < 40; ++i) {
      ExampleBuilder example;
      example.AddInt64s("label", {i % 2}).AddInt64s("tags", std::vector<int64_t>(i % 3, i % 5));
      example.AddBytes("words",
                       i % 2 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{});
      if (i % 4 != 0) example.AddFloats("x", {0.1f * i, 1, 2, 3});  // else the default, 0.0
      if (i % 5 != 0) example.AddInt64s("age", {20 + i});           // else -1
      writer->WriteRecord(example.Serialize());
    }
    writer->Close();
  }
  const std::string job_text = R"([model]
type = "dnn_classifier"
hidden_units = [4]

[run_config]
model_dir = ")" + dir.Join("model") +
                               R"("
tf_random_seed = 1

[train]
max_steps = 3
batch_size = 8

[data.train]
format = "tfrecord"
files = [")" + records + R"("]

)" + blocks[1] + R"(
[[features]]
name = "x"
shape = [4]

[[features]]
name = "age"

[[features]]
name = "tags"
type = "identity"
num_buckets = 5

[[features]]
name = "words"
type = "vocabulary"
vocabulary = ["a", "b"]
)";
  const Job job = ParseJob(job_text, "job.toml");
  auto estimator = MakeEstimator(job);
  estimator->Train(MakeInputFn(job, "train", /*training=*/true, /*needs_labels=*/true),
                   {.max_steps = 3});
  EXPECT_TRUE(estimator->LatestCheckpoint().has_value());
}

}  // namespace
}  // namespace loom::cli
