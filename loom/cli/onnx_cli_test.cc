// `loom export JOB --format onnx` (docs/onnx.md): the demo job's DNN on Fashion-MNIST,
// trained a few steps, exported and run by ONNX Runtime on test images, gives the
// probabilities `loom predict` writes within 1e-5; python3-onnx's checker accepts it.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/cli/cli_test_util.h"
#include "loom/estimator/onnx_test_util.h"
#include "loom/io/idx.h"
#include "loom/io/npy.h"

namespace loom::cli::testing {
namespace {

std::string ExportedPath(const std::string& output) {
  const size_t at = output.find("export: ");
  if (at == std::string::npos) return "";
  const size_t end = output.find(' ', at + 8);
  return output.substr(at + 8, end - at - 8);
}

TEST(OnnxCliTest, DemoDnnMatchesOnnxRuntime) {
  const std::string dir = TempDir("onnx_demo");
  std::string job = Read(std::string(LOOM_SOURCE_DIR) + "/examples/jobs/fashion_mnist_dnn.toml");
  job = Replace(job, "shuffle_buffer = 60000", "shuffle_buffer = 1000");
  Write(dir + "/demo.toml", job);
  const std::string flags = dir + "/demo.toml --model-dir " + dir + "/model";
  Result r = Loom("train " + flags + " --max-steps 40");
  ASSERT_EQ(r.code, 0) << r.output;
  r = Loom("predict " + flags + " --out " + dir + "/probabilities.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  r = Loom("export " + flags + " --format onnx --export-dir " + dir + "/export");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "signature predict");
  const std::string model = ExportedPath(r.output);
  ASSERT_TRUE(fs::exists(model)) << r.output;
  EXPECT_EQ(fs::path(model).filename(), "model.onnx");

  // The first 64 test images, uint8 [64, 28, 28] as the job's placeholder takes them.
  constexpr int64_t kRows = 64;
  Env* env = Env::Default();
  Tensor images = ReadIdx(env, "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
  Tensor x = Tensor::Zeros(kUInt8, Shape({kRows, 28, 28}));
  std::memcpy(x.raw_data(), images.raw_data(), x.TotalBytes());
  auto ort = onnx_testing::RunOnnxRuntime(model, {{"x", x}}, dir);
  ASSERT_TRUE(ort.count("probabilities"));
  Tensor loom = ReadNpy(env, dir + "/probabilities.npy");
  ASSERT_EQ(loom.shape(), Shape({10000, 10}));
  Tensor head = Tensor::Zeros(kFloat32, Shape({kRows, 10}));
  std::memcpy(head.raw_data(), loom.raw_data(), head.TotalBytes());
  onnx_testing::ExpectNear(head, ort.at("probabilities"), "probabilities");
  onnx_testing::ExpectOnnxCheckerPasses(model, dir);
}

TEST(OnnxCliTest, ErrorsNameTheSignatureAndTheUnsupportedColumn) {
  const std::string dir = TempDir("onnx_errors");
  std::string csv = "a,tag,label\n";
  for (int i = 0; i < 40; ++i)
    csv += std::to_string(i % 7) + "," + (i % 3 ? "x" : "y") + "," + std::to_string(i % 2) + "\n";
  Write(dir + "/data.csv", csv);
  Write(dir + "/job.toml", R"([model]
type = "linear_classifier"

[run_config]
model_dir = "model"

[train]
max_steps = 3
batch_size = 8

[data.train]
format = "csv"
files = ["data.csv"]
header = true
columns = ["a", "tag", "label"]
defaults = [0.0, "", 0]

[[features]]
name = "a"

[[features]]
name = "tag"
type = "hash"
num_buckets = 10
)");
  const std::string flags = dir + "/job.toml --model-dir " + dir + "/model";
  Result r = Loom("train " + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  r = Loom("export " + flags + " --format onnx --export-dir " + dir + "/export");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "Unimplemented");
  EXPECT_CONTAINS(r.output, "HashBucket x1");
  EXPECT_CONTAINS(r.output, "column 'tag'");
  r = Loom("export " + flags + " --format onnx --signature nope --export-dir " + dir + "/export");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "no signature 'nope'");
  EXPECT_CONTAINS(r.output, "predict");
  r = Loom("export " + flags + " --format tflite");
  EXPECT_NE(r.code, 0);
}

}  // namespace
}  // namespace loom::cli::testing
