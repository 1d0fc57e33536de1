// Job files' [train] precision key: parsed into RunConfig::precision, rejected when
// misspelt, and carried by the canned DNN estimator's model function into every product
// node of its training graph, gradients included (its graph.pbtxt shows the attribute).
#include "loom/cli/job.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loom/testing/error_of.h"
#include "loom/testing/temp_dir.h"

namespace loom::cli {
namespace {

std::string JobText(const std::string& model_dir, const std::string& data,
                    const std::string& train_extra) {
  return R"([model]
type = "dnn_classifier"
hidden_units = [8]
n_classes = 2

[run_config]
model_dir = ")" +
         model_dir + R"("
tf_random_seed = 1

[train]
max_steps = 3
batch_size = 4
)" + train_extra +
         R"(
[data.train]
format = "csv"
files = [")" +
         data + R"("]
header = true
columns = ["a", "b", "label"]
defaults = [0.0, 0.0, 0]

[[features]]
name = "a"

[[features]]
name = "b"
)";
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JobTest, TrainPrecisionKeySetsRunConfig) {
  EXPECT_EQ(ParseJob(JobText("m", "d.csv", ""), "job.toml").run_config.precision,
            Precision::kFloat32);
  EXPECT_EQ(
      ParseJob(JobText("m", "d.csv", "precision = \"bf16\"\n"), "job.toml").run_config.precision,
      Precision::kBf16);
  EXPECT_EQ(ParseJob(JobText("m", "d.csv", "precision = \"bf16-strict\"\n"), "job.toml")
                .run_config.precision,
            Precision::kBf16Strict);
  std::string message;
  EXPECT_EQ(
      testing::CodeOf([] { ParseJob(JobText("m", "d.csv", "precision = \"fp16\"\n"), "job.toml"); },
                      &message),
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("job.toml: [train] precision is \"fp16\""), std::string::npos) << message;
  EXPECT_NE(message.find("\"bf16-emulated\""), std::string::npos) << message;
}

// Counts TF rejects (steps <= 0, max_steps <= 0, a shuffle buffer <= 0) name the key and
// its line; they used to surface later as "Train: max_steps must be > 0, given -5" or
// "Shuffle: buffer_size must be positive, got 0", naming no job file.
TEST(JobTest, NonPositiveCountsNameTheirKeyAndLine) {
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::string base = JobText("m", "d.csv", "");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {JobText("m", "d.csv", "shuffle_buffer = 0\n"),
       "job.toml:13: [train] key 'shuffle_buffer': must be > 0 (1 keeps the input's order)"},
      {JobText("m", "d.csv", "shuffle_buffer = -1\n"), "[train] key 'shuffle_buffer': must be > 0"},
      {replaced(base, "max_steps = 3", "max_steps = -5"),
       "job.toml:11: [train] key 'max_steps': must be > 0"},
      {replaced(base, "max_steps = 3", "steps = 0"),
       "job.toml:11: [train] key 'steps': must be > 0 (leave it out for one pass)"},
      {base + "\n[eval]\nsteps = 0\n", "[eval] key 'steps': must be > 0"},
  };
  for (const auto& c : cases) {  // not a structured binding: the lambda captures the text
    const std::string& text = c.first;
    const std::string message =
        testing::ErrorOf([&] { ParseJob(text, "job.toml"); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find(c.second), std::string::npos) << message;
  }
}

// A [model] or [optimizer] key that the job's model type does not read is an error naming
// the key, its line and the types that take it; each was silently unused (a linear model
// with hidden_units trained as a linear model), where TF's canned estimators reject it.
TEST(JobTest, KeysOfAnotherModelTypeAreErrors) {
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::string base = JobText("m", "d.csv", "");
  const std::string linear = replaced(replaced(base, "hidden_units = [8]\n", ""),
                                      "\"dnn_classifier\"", "\"linear_classifier\"");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replaced(base, "\"dnn_classifier\"", "\"linear_classifier\""),
       "job.toml:3: [model] key 'hidden_units': only the DNN models (dnn_*) take it, and this "
       "job's [model] type is 'linear_classifier', which would ignore it; remove it or change "
       "the type"},
      {replaced(linear, "n_classes = 2", "dropout = 0.5"), "[model] key 'dropout': only the DNN"},
      {replaced(linear, "n_classes = 2", "batch_norm = true"), "[model] key 'batch_norm'"},
      {replaced(linear, "n_classes = 2", "dnn_features = [\"a\"]"), "[model] key 'dnn_features'"},
      {replaced(base, "n_classes = 2", "linear_features = [\"a\"]"),
       "[model] key 'linear_features': only the linear models (linear_*, dnn_linear_*)"},
      {replaced(base, "n_classes = 2", "label_dimension = 1"),
       "job.toml:4: [model] key 'label_dimension': only regressors (*_regressor) take it"},
      {replaced(replaced(base, "dnn_classifier", "dnn_regressor"), "n_classes = 2",
                "n_classes = 3"),
       "[model] key 'n_classes': only classifiers (*_classifier) take it, and this job's [model] "
       "type is 'dnn_regressor'"},
      {base + "\n[optimizer]\nname = \"Adam\"\nlinear_name = \"Ftrl\"\n",
       "[optimizer] key 'linear_name': only dnn_linear_* models take it"},
      {base + "\n[optimizer]\nlinear_learning_rate = 0.1\n",
       "[optimizer] key 'linear_learning_rate': only dnn_linear_* models take it"},
  };
  for (const auto& c : cases) {  // not a structured binding: the lambda captures the text
    const std::string& text = c.first;
    const std::string message =
        testing::ErrorOf([&] { ParseJob(text, "job.toml"); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find(c.second), std::string::npos) << message;
  }
  // What each type does read still parses: the wide part's features of a linear model
  // (which columns it uses), label_dimension of a regressor, a wide & deep optimizer pair.
  EXPECT_NO_THROW(ParseJob(replaced(linear, "n_classes = 2", "linear_features = [\"a\"]"), "j"));
  EXPECT_NO_THROW(ParseJob(replaced(replaced(base, "dnn_classifier", "dnn_regressor"),
                                    "n_classes = 2", "label_dimension = 1"),
                           "j"));
  EXPECT_NO_THROW(
      ParseJob(replaced(base, "dnn_classifier", "dnn_linear_classifier") +
                   "\n[optimizer]\nlinear_name = \"Ftrl\"\nlinear_learning_rate = 0.1\n",
               "j"));
}

TEST(JobTest, PrecisionReachesEveryProductOfTheTrainingGraph) {
  testing::TempDir dir("job_precision");
  {
    std::ofstream csv(dir.Join("d.csv"));
    csv << "a,b,label\n";
    for (int i = 0; i < 16; ++i) csv << i * 0.1 << "," << 1 - i * 0.05 << "," << i % 2 << "\n";
  }
  for (const std::string precision : {"float32", "bf16-emulated"}) {
    SCOPED_TRACE(precision);
    const std::string model_dir = dir.Join("model_" + precision);
    Job job = ParseJob(JobText(model_dir, dir.Join("d.csv"), "precision = \"" + precision + "\"\n"),
                       "job.toml");
    auto estimator = MakeEstimator(job);
    estimator->Train(MakeInputFn(job, "train", /*training=*/true, /*needs_labels=*/true),
                     {.max_steps = 3});
    const std::string graph = Read(model_dir + "/graph.pbtxt");
    ASSERT_FALSE(graph.empty());
    // Two dense layers (hidden, logits): their MatMuls and two gradient MatMuls each,
    // less the input gradient of the first layer, which nothing needs.
    const int matmuls = Count(graph, "op: \"MatMul\"");
    EXPECT_GE(matmuls, 4);
    if (precision == "float32") {
      EXPECT_EQ(Count(graph, "\"precision\""), 0);
    } else {
      EXPECT_EQ(Count(graph, "s: \"bf16-emulated\""), matmuls) << graph;
    }
  }
}

}  // namespace
}  // namespace loom::cli
