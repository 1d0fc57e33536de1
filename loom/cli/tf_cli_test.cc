// `loom predict` and `loom train` on TensorFlow models: SavedModels and frozen graphs from
// the repository's TF test files, CSV and TFRecord input, a TF model_dir never clobbered.
// Runs the built `loom` binary (LOOM_CLI_PATH), as cli_test does.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/cli/cli_test_util.h"
#include "loom/io/example_builder.h"
#include "loom/io/npy.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/record_writer.h"

using namespace loom::cli::testing;  // NOLINT: the helpers of cli_test_util.h

namespace loom {
namespace {

// `loom predict --saved-model` / `--graph`: TensorFlow models from the shared test files.
TEST(CliTest, PredictRunsTensorFlowModels) {
  const std::string tf = std::string(LOOM_SHARED_TESTDATA) + "/tf";
  ASSERT_TRUE(fs::exists(tf + "/expected_tf.json")) << "missing TF test files under " << tf;
  std::string dir = TempDir("tf_predict");
  WriteNpy(Env::Default(), dir + "/x.npy", Tensor::FromVector<float>({1, 2, 5}, Shape{3, 1}));
  Result r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --input x=" + dir +
                  "/x.npy --out " + dir + "/y.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/y.csv"), "y\n2.5\n3\n4.5\n");
  // No rows: the header alone (it used to be an empty file).
  WriteNpy(Env::Default(), dir + "/none.npy", Tensor::Zeros(kFloat32, {0, 1}));
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --input x=" + dir +
           "/none.npy --out " + dir + "/none.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/none.csv"), "y\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --signature regress_x2_to_y3" +
           " --input inputs=" + dir + "/x.npy --out " + dir + "/y3.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(ReadNpy(Env::Default(), dir + "/y3.npy")
                  .Equals(Tensor::FromVector<float>({3.5f, 4, 5.5f}, Shape{3, 1})));

  WriteNpy(Env::Default(), dir + "/zeros.npy", Tensor::Zeros(kFloat32, {1, 784}));
  r = Loom("predict --graph " + tf + "/tf2onnx_fc_layers/frozen.pb --input X=" + dir +
           "/zeros.npy --output output:0 --out " + dir + "/logits.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  Tensor logits = ReadNpy(Env::Default(), dir + "/logits.npy");
  ASSERT_EQ(logits.shape(), Shape({1, 10}));
  EXPECT_NEAR(logits.data<float>()[5], 0.9712535693939655, 1e-4);  // expected_tf.json

  // A float64 input for a float32 signature input; no model and no job.
  WriteNpy(Env::Default(), dir + "/x64.npy", Tensor::FromVector<double>({1, 2}, Shape{2, 1}));
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --input x=" + dir +
           "/x64.npy --out " + dir + "/c.csv");
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "must be float32");
  r = Loom("predict --out " + dir + "/c.csv");
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "--saved-model");

  // CSV input, columns by header name: a tensor signature, then the tf.Example ones (one
  // Example per row, built from the features the graph's ParseExample reads).
  Write(dir + "/x.csv", "x\n1\n2\n5\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --csv " + dir +
           "/x.csv --out " + dir + "/y_csv.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/y_csv.csv"), "y\n2.5\n3\n4.5\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --signature classify_x_to_y" +
           " --csv " + dir + "/x.csv --out " + dir + "/scores.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/scores.csv"), "scores\n2.5\n3\n4.5\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --signature regress_x_to_y2" +
           " --csv " + dir + "/x.csv --out " + dir + "/y2.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/y2.csv"), "outputs\n3.5\n4\n5.5\n");
  // The same Examples from a TFRecord file.
  {
    auto w = RecordWriter::Open(Env::Default(), dir + "/x.tfrecord", {});
    for (float x : {1.f, 2.f, 5.f})
      w->WriteRecord(ExampleBuilder().AddFloats("x", {x}).Serialize());
    w->Close();
  }
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --signature regress_x_to_y" +
           " --input inputs=" + dir + "/x.tfrecord --out " + dir + "/y_rec.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(ReadNpy(Env::Default(), dir + "/y_rec.npy")
                  .Equals(Tensor::FromVector<float>({2.5f, 3, 4.5f}, Shape{3, 1})));
  // A bad cell names line, row and column; a stray column names itself.
  Write(dir + "/bad.csv", "x\n1\ntwo\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --csv " + dir +
           "/bad.csv --out " + dir + "/b.csv");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "line 3 (row 2), column 'x': cannot parse 'two' as float32");
  Write(dir + "/extra.csv", "x,id\n1,7\n");
  r = Loom("predict --saved-model " + tf + "/half_plus_two/00000123 --signature classify_x_to_y" +
           " --csv " + dir + "/extra.csv --out " + dir + "/b.csv");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "column 'id' matches nothing in signature 'classify_x_to_y'");
  // A frozen graph from CSV: the placeholder X[?,784] takes columns X_0 ... X_783.
  std::string header, zeros;
  for (int i = 0; i < 784; ++i) {
    header += (i ? ",X_" : "X_") + std::to_string(i);
    zeros += i ? ",0" : "0";
  }
  Write(dir + "/zeros.csv", header + "\n" + zeros + "\n");
  r = Loom("predict --graph " + tf + "/tf2onnx_fc_layers/frozen.pb --csv " + dir +
           "/zeros.csv --output output:0 --out " + dir + "/logits_csv.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  logits = ReadNpy(Env::Default(), dir + "/logits_csv.npy");
  ASSERT_EQ(logits.shape(), Shape({1, 10}));
  EXPECT_NEAR(logits.data<float>()[5], 0.9712535693939655, 1e-4);  // expected_tf.json
}

// A frozen Keras model with a Dropout learning-phase cond (TF 1.15 layout, Switch / Merge
// and ^switch_t control edges): `loom inspect` names the cond ops, the optional learning
// phase and the one real output; `loom predict` runs it with the default learning phase
// (inference: the Dense output) and with keras_learning_phase fed true (dropout: each value
// 0 or doubled).
TEST(CliTest, InspectAndPredictAKerasDropoutCond) {
  const std::string dir = TempDir("tf_cond");
  proto::GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      Read(std::string(LOOM_SHARED_TESTDATA) + "/tf/keras_dropout_cond.pbtxt"), &def));
  const std::string graph = dir + "/frozen.pb";
  Write(graph, def.SerializeAsString());
  Result r = Loom("inspect " + graph);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "TF1 conds: Switch x3, Merge x1");
  EXPECT_CONTAINS(r.output, "  dense_input (Placeholder)\n");
  EXPECT_CONTAINS(r.output, "  keras_learning_phase (PlaceholderWithDefault: optional");
  EXPECT_CONTAINS(r.output, "outputs (consumed by no node):\n  dropout/cond/Merge (Merge)\n");
  EXPECT_EQ(r.output.find("switch_f"), std::string::npos) << r.output;

  // Relu(x W + b) in float64, W and b as the file's header gives them.
  const std::vector<float> x = {1, 2, -1, 0.5f};
  const double w[2][3] = {{0.5, -1, 2}, {1, 0.25, -0.5}}, b[3] = {0.1, 0.2, -0.3};
  std::vector<double> dense;
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < 3; ++j)
      dense.push_back(std::max(0.0, x[2 * r] * w[0][j] + x[2 * r + 1] * w[1][j] + b[j]));
  }
  WriteNpy(Env::Default(), dir + "/x.npy", Tensor::FromVector<float>(x, Shape{2, 2}));
  const std::string predict = "predict --graph " + graph + " --input dense_input=" + dir +
                              "/x.npy --output dropout/cond/Merge:0 --out " + dir + "/y.npy";
  r = Loom(predict);
  ASSERT_EQ(r.code, 0) << r.output;
  Tensor y = ReadNpy(Env::Default(), dir + "/y.npy");
  ASSERT_EQ(y.shape(), Shape({2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(y.data<float>()[i], dense[i], 1e-6) << i;
  WriteNpy(Env::Default(), dir + "/train.npy", Tensor::Scalar<bool>(true));
  r = Loom(predict + " --input keras_learning_phase=" + dir + "/train.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  y = ReadNpy(Env::Default(), dir + "/y.npy");
  for (int i = 0; i < 6; ++i) {
    const float v = y.data<float>()[i];
    EXPECT_TRUE(v == 0 || std::abs(v - 2 * dense[i]) < 1e-5) << i << ": " << v;
  }
}

// `loom train` in a model_dir that TensorFlow trained stops before writing anything: TF's
// `checkpoint` state file keeps its entries.
TEST(CliTest, TrainNeverClobbersATensorFlowModelDir) {
  const std::string tf = std::string(LOOM_SHARED_TESTDATA);
  std::string dir = TempDir("tf_model_dir");
  std::string model_dir = dir + "/model";
  fs::create_directories(model_dir);
  for (const std::string f : {"model.ckpt-999.index", "model.ckpt-999.data-00000-of-00001"}) {
    fs::copy_file(tf + "/tf/tfx_estimator_ckpt/" + f, model_dir + "/" + f);
  }
  fs::copy_file(tf + "/tfevents/tfx_estimator_model_dir/checkpoint", model_dir + "/checkpoint");
  const std::string state = Read(model_dir + "/checkpoint");
  WriteCsv(dir + "/d.csv");
  std::string job = dir + "/job.toml";
  Write(job, Replace(Replace(kJob, "MODEL_DIR", model_dir), "DATA", dir + "/d.csv"));
  Result r = Loom("train " + job);
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "holds TensorFlow checkpoints");
  EXPECT_EQ(Read(model_dir + "/checkpoint"), state);
}

// Damaged copies of half_plus_two, as users send them (a SavedModel copied without its
// variables/, a truncated download, an empty file): `loom predict` and `loom inspect` exit 1
// with one error naming the file that is wrong and what to copy, never a crash; inspect
// lists the signatures it could read before the error.
TEST(CliTest, DamagedTensorFlowSavedModelsAreClearErrors) {
  const std::string half = std::string(LOOM_SHARED_TESTDATA) + "/tf/half_plus_two/00000123";
  const std::string dir = TempDir("tf_damaged");
  WriteNpy(Env::Default(), dir + "/x.npy", Tensor::FromVector<float>({1, 2}, Shape{2, 1}));
  auto copy = [&](const std::string& name) {
    const std::string to = dir + "/" + name;
    fs::copy(half, to, fs::copy_options::recursive);
    return to;
  };
  const std::string data = "/variables/variables.data-00000-of-00001";
  struct Case {
    std::string name;
    std::function<void(const std::string&)> damage;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"no_variables", [](const std::string& d) { fs::remove_all(d + "/variables"); },
       "reads TF variable 'b' and 1 more, but a SavedModel keeps their values in "
       "variables/variables.index and variables.data-*, and '" +
           dir + "/no_variables/variables/' does not exist; copy the whole SavedModel directory"},
      {"no_index", [](const std::string& d) { fs::remove(d + "/variables/variables.index"); },
       "variables.index' does not exist (variables/ holds variables.data-00000-of-00001)"},
      {"no_data", [&](const std::string& d) { fs::remove(d + data); },
       "data file '" + dir + "/no_data" + data + "' does not exist"},
      {"cut_data", [&](const std::string& d) { fs::resize_file(d + data, 5); },
       "lies past the end of the file's 5 bytes (the file is truncated"},
      {"empty_pb", [](const std::string& d) { fs::resize_file(d + "/saved_model.pb", 0); },
       "saved_model.pb' holds no MetaGraphDef at all (0 bytes): it is empty or not a SavedModel"},
      {"cut_pb", [](const std::string& d) { fs::resize_file(d + "/saved_model.pb", 200); },
       "saved_model.pb' does not parse as a SavedModel protobuf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string model = copy(c.name);
    c.damage(model);
    Result r = Loom("predict --saved-model " + model + " --input x=" + dir + "/x.npy --out " + dir +
                    "/y.csv");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, c.expected);
    EXPECT_EQ(r.output.find("signature 'classify_x_to_y': TF"), std::string::npos) << r.output;
    r = Loom("inspect " + model);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, c.expected);
    if (!c.name.ends_with("_pb")) {  // the signatures were readable: listed before the error
      EXPECT_LT(r.output.find("serving_default (tensorflow/serving/predict)"),
                r.output.find("loom: error:"))
          << r.output;
    }
  }
}

}  // namespace
}  // namespace loom
