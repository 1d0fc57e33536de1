// `loom train` on job files (the built binary, LOOM_CLI_PATH): errors that name the file,
// line and key; learning-rate schedules; the example jobs; record jobs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/env.h"
#include "loom/cli/cli_test_util.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/record_writer.h"
#include "loom/io/safetensors.h"

namespace {

using namespace loom::cli::testing;  // NOLINT: the helpers of cli_test_util.h

// The line `loom inspect EVENTS` prints for `tag`: "  tag   N values, last at step S = V".
std::string TagLine(const std::string& inspect_output, const std::string& tag) {
  std::istringstream lines(inspect_output);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("  " + tag + " ")) return line;
  return "";
}
TEST(CliTest, JobErrorsNameFileLineAndKey) {
  std::string dir = TempDir("bad_job");
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  std::string path = dir + "/job.toml";
  // Line 4 gets an unknown key.
  Write(path, Replace(job, "n_classes = 2", "n_classes = 2\nhiden_units = [3]"));
  Result r = Loom("train " + path);
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, path + ":5");
  EXPECT_CONTAINS(r.output, "hiden_units");
  // A wrong type.
  Write(path, Replace(job, "max_steps = 200", "max_steps = \"many\""));
  r = Loom("train " + path);
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "max_steps");
  EXPECT_CONTAINS(r.output, path + ":");
  // A TOML syntax error.
  Write(path, "[model\n");
  r = Loom("train " + path);
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, path + ":1");
  // --max-steps 0 (as max_steps = 0) is refused naming the flag, not by Train later.
  Write(path, job);
  for (const std::string value : {"0", "-3"}) {
    r = Loom("train " + path + " --max-steps " + value);
    EXPECT_NE(r.code, 0);
    EXPECT_CONTAINS(r.output, "--max-steps: must be > 0, given " + value);
  }
}
// A misspelt key is reported as unknown (with the key it resembles) before anything
// complains that the key it was meant to be is missing.
TEST(CliTest, MisspeltKeysAreUnknownBeforeMissing) {
  std::string dir = TempDir("misspelt");
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  std::string path = dir + "/job.toml";
  Write(path, Replace(job, "hidden_units = [16]", "hiden_units = [16]"));
  Result r = Loom("train " + path);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  path + ":3: [model] unknown key 'hiden_units' (did you mean 'hidden_units'?)");
  EXPECT_EQ(r.output.find("a DNN needs"), std::string::npos) << r.output;
  // A swapped pair of letters in a table name.
  Write(path, Replace(job, "[model]", "[modle]"));
  r = Loom("train " + path);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, path + ":1: unknown key 'modle' (did you mean 'model'?)");
  Write(path, Replace(job, "[run_config]", "[run_confg]"));
  r = Loom("train " + path);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "unknown key 'run_confg' (did you mean 'run_config'?)");
  // An unknown key that resembles nothing gets no suggestion.
  Write(path, Replace(job, "batch_size = 32", "batch_size = 32\ncolour = 3"));
  r = Loom("train " + path);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "[train] unknown key 'colour'\n");
}
// kJob with `schedule` as the [optimizer] table's lines after `name`.
std::string ScheduleJob(const std::string& dir, const std::string& schedule) {
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  return Replace(job, "learning_rate = 0.05\n", schedule);
}
// Each schedule trains, and its rate reaches the value its formula gives after the decay
// (the summaries come every 10 steps; the last is at step 40 or 50). piecewise_constant
// drops to 0, after which Adam must leave the weights as they are: the schedule really
// is the optimizer's learning rate, not only a summary. A wide & deep model takes one
// schedule per part.
TEST(CliTest, LearningRateSchedulesTrain) {
  struct Case {
    std::string name, schedule;
    std::vector<std::pair<std::string, std::string>> last_rates;  // tag -> value
    std::string model = "dnn_classifier";
  };
  const std::string exponential =
      "[optimizer.schedule]\ntype = \"exponential_decay\"\ndecay_steps = 20\ndecay_rate = 0.5\n"
      "staircase = true\n";
  const std::vector<Case> cases = {
      {"exponential", "learning_rate = 0.1\n" + exponential, {{"learning_rate", "0.025"}}},
      {"piecewise",
       "[optimizer.schedule]\ntype = \"piecewise_constant\"\nboundaries = [20]\n"
       "values = [0.05, 0.0]\n",
       {{"learning_rate", "0"}}},
      {"polynomial",
       "learning_rate = 0.1\n[optimizer.schedule]\ntype = \"polynomial_decay\"\n"
       "decay_steps = 30\nend_learning_rate = 0.01\npower = 2.0\n",
       {{"learning_rate", "0.01"}}},
      {"cosine",
       "learning_rate = 0.1\n[optimizer.schedule]\ntype = \"cosine_decay\"\n"
       "decay_steps = 30\nalpha = 0.1\n",
       {{"learning_rate", "0.01"}}},
      {"wide_and_deep",
       "learning_rate = 0.1\nlinear_name = \"Ftrl\"\n" + exponential +
           "[optimizer.linear_schedule]\ntype = \"piecewise_constant\"\n"
           "boundaries = [20]\nvalues = [0.2, 0.02]\n",
       {{"learning_rate", "0.025"}, {"linear_learning_rate", "0.02"}},
       "dnn_linear_classifier"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string dir = TempDir("schedule_" + c.name);
    WriteCsv(dir + "/d.csv");
    std::string job =
        Replace(ScheduleJob(dir, c.schedule), "\"dnn_classifier\"", "\"" + c.model + "\"");
    job = Replace(job, "save_checkpoints_steps = 100",
                  "save_checkpoints_steps = 10\nkeep_checkpoint_max = 10");
    Write(dir + "/job.toml", job);
    Result r = Loom("train " + dir + "/job.toml --max-steps 50");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_CONTAINS(r.output, "trained to global step 50");
    std::string events = EventsFile(dir + "/model");
    ASSERT_FALSE(events.empty());
    r = Loom("inspect " + events);
    ASSERT_EQ(r.code, 0) << r.output;
    for (const auto& [tag, rate] : c.last_rates) {
      std::string line = TagLine(r.output, tag);
      ASSERT_FALSE(line.empty()) << tag << " in " << r.output;
      EXPECT_TRUE(line.ends_with("= " + rate)) << line;
    }
    if (c.name == "piecewise") {
      auto kernel = [&](int step) {
        return loom::ReadSafetensors(
                   loom::Env::Default(),
                   dir + "/model/model.ckpt-" + std::to_string(step) + ".safetensors")
            .at("dnn/hiddenlayer_0/kernel");
      };
      auto same = [](const loom::Tensor& a, const loom::Tensor& b) {
        return a.NumElements() == b.NumElements() &&
               std::memcmp(a.data<float>(), b.data<float>(), a.NumElements() * sizeof(float)) == 0;
      };
      EXPECT_FALSE(same(kernel(10), kernel(20)));  // rate 0.05
      EXPECT_TRUE(same(kernel(30), kernel(50)));   // rate 0 after step 20
    }
  }
}
// Every documented job in examples/jobs/ trains a few steps as written (dnn_regressor.toml
// shows a schedule). fashion_mnist_dnn.toml, the built-in default job, reads the Debian
// Fashion-MNIST package and is what `make demo` runs.
TEST(CliTest, ExampleJobsTrain) {
  std::string dir = TempDir("example_jobs");
  int jobs = 0;
  for (const auto& e : fs::directory_iterator(std::string(LOOM_SOURCE_DIR) + "/examples/jobs")) {
    if (e.path().extension() != ".toml" || e.path().stem() == "fashion_mnist_dnn") continue;
    SCOPED_TRACE(e.path().string());
    ++jobs;
    std::string model_dir = dir + "/" + e.path().stem().string();
    Result r = Loom("train " + e.path().string() + " --max-steps 20 --model-dir " + model_dir);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_CONTAINS(r.output, "trained to global step 20");
    if (e.path().stem() == "dnn_regressor") {
      r = Loom("inspect " + EventsFile(model_dir));
      EXPECT_FALSE(TagLine(r.output, "learning_rate").empty()) << r.output;
    }
  }
  EXPECT_GE(jobs, 6);
}
TEST(CliTest, ScheduleErrorsNameFileLineAndKey) {
  std::string dir = TempDir("bad_schedule");
  std::string path = dir + "/job.toml";
  struct Case {
    std::string schedule, where, message;
  };
  // Each schedule text replaces line 8 of kJob (learning_rate), under [optimizer] (line 6).
  const std::vector<Case> cases = {
      {"learning_rate = 0.1\n[optimizer.schedule]\ntype = \"linear_decay\"\n", ":10",
       "[optimizer.schedule] key 'type': expected \"exponential_decay\""},
      {"learning_rate = 0.1\n[optimizer.schedule]\ntype = \"cosine_decay\"\ndecay_steps = 10\n"
       "decay_rate = 0.5\n",
       ":12", "key 'decay_rate': not a key of cosine_decay (it takes decay_steps, alpha)"},
      {"learning_rate = 0.1\n[optimizer.schedule]\ntype = \"exponential_decay\"\ndecay_steps = 0\n"
       "decay_rate = 0.5\n",
       ":11", "key 'decay_steps': expected an integer > 0"},
      {"[optimizer.schedule]\ntype = \"piecewise_constant\"\nboundaries = [10, 20]\n"
       "values = [0.1, 0.01]\n",
       ":11", "key 'values': expected 3 rates"},
      {"[optimizer.schedule]\ntype = \"piecewise_constant\"\nboundaries = [20, 10]\n"
       "values = [0.1, 0.01, 0.001]\n",
       ":10", "key 'boundaries': must increase"},
      {"[optimizer.schedule]\ntype = \"polynomial_decay\"\ndecay_steps = 10\n", ":8",
       "the schedule decays 'learning_rate'"},
      {"learning_rate = 0.1\n[optimizer.schedule]\ntype = \"exponential_decay\"\n"
       "decay_steps = \"ten\"\n",
       ":11", "key 'decay_steps': expected an integer"},
      {"learning_rate = 0.1\n[optimizer.linear_schedule]\ntype = \"cosine_decay\"\n"
       "decay_steps = 10\n",
       ":9", "key 'linear_schedule': only dnn_linear_* models"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schedule);
    Write(path, ScheduleJob(dir, c.schedule));
    Result r = Loom("train " + path);
    EXPECT_EQ(r.code, 1);
    EXPECT_CONTAINS(r.output, path + c.where + ":");
    EXPECT_CONTAINS(r.output, c.message);
  }
  // An unknown optimizer name is caught in the job file too.
  Write(path, Replace(ScheduleJob(dir, "learning_rate = 0.1\n"), "\"Adam\"", "\"Adamax\""));
  Result r = Loom("train " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.output, path + ":7: [optimizer] key 'name'");
}
void WriteRecordJobData(const std::string& path) {
  auto writer = loom::RecordWriter::Open(loom::Env::Default(), path, {});
  for (int i = 0; i < 64; ++i) {
    loom::proto::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    if (i % 4 != 3) features["x"].mutable_float_list()->add_value(0.1f * (i % 7));
    auto* tags = features["tags"].mutable_int64_list();
    auto* words = features["words"].mutable_bytes_list();
    for (int k = 0; k < i % 3; ++k) {
      tags->add_value((i + k) % 5);
      words->add_value(k == 0 ? "red" : "blue");
    }
    features["label"].mutable_int64_list()->add_value(i % 3 > 0 && i % 2 == 0);
    writer->WriteRecord(example.SerializeAsString());
  }
  writer->Close();
}

constexpr const char* kRecordJob = R"([model]
type = "linear_classifier"

[run_config]
model_dir = "MODEL_DIR"
tf_random_seed = 1

[train]
max_steps = 20
batch_size = 8

[data.train]
format = "tfrecord"
files = ["DATA"]

[data.train.features]
x = { dtype = "float32", default = -1.0 }
label = { dtype = "int64" }
tags = { dtype = "int64", var_len = true }
words = { dtype = "string", var_len = true }

[[features]]
name = "x"

[[features]]
name = "tags"
type = "identity"
num_buckets = 5

[[features]]
name = "words"
type = "vocabulary"
vocabulary = ["red", "blue"]
)";
// Record jobs: defaults for records without a feature (TF's FixedLenFeature
// default_value), var-len features padded for categorical columns, and errors that name
// the file and the record's index in it.
TEST(CliTest, RecordJobsTakeDefaultsAndVarLenFeatures) {
  std::string dir = TempDir("record_job");
  std::string data = dir + "/train.tfrecord";
  WriteRecordJobData(data);
  std::string job = Replace(Replace(kRecordJob, "MODEL_DIR", dir + "/model"), "DATA", data);
  Write(dir + "/job.toml", job);
  Result r = Loom("train " + dir + "/job.toml");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "trained to global step 20");
  r = Loom("evaluate " + dir + "/job.toml");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "accuracy = ");
  r = Loom("predict " + dir + "/job.toml --out " + dir + "/p.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string csv = Read(dir + "/p.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 65);
  r = Loom("export " + dir + "/job.toml");
  ASSERT_EQ(r.code, 0) << r.output;

  // Without the default, the first record lacking "x" is named by file and index.
  Write(dir + "/strict.toml",
        Replace(Replace(job, ", default = -1.0", ""), dir + "/model", dir + "/strict_model"));
  r = Loom("train " + dir + "/strict.toml");
  EXPECT_EQ(r.code, 1) << r.output;
  // Training shuffles: the record is any of those without "x" (index 3 mod 4).
  const std::string missing = "feature 'x' is missing from record ";
  size_t at = r.output.find(missing);
  ASSERT_NE(at, std::string::npos) << r.output;
  const int index = std::atoi(r.output.c_str() + at + missing.size());
  EXPECT_EQ(index % 4, 3) << r.output;
  EXPECT_CONTAINS(r.output, missing + std::to_string(index) + " of '" + data + "'");
  EXPECT_EQ(r.output.find("of the batch"), std::string::npos) << r.output;

  // Key errors name the line.
  struct Case {
    std::string from, to, message;
  };
  for (const Case& c : std::vector<Case>{
           {"default = -1.0", "default = \"none\"", "key 'default': expected a number"},
           {"default = -1.0", "default = [1.0, 2.0]", "key 'default': expected one value or 1"},
           {"dtype = \"int64\", var_len = true", "dtype = \"int64\", var_len = true, default = 0",
            "key 'default': a var_len feature has no default"},
           {"name = \"x\"", "name = \"tags\"\n[[features]]\nname = \"y\"",
            "[[features]] 'tags' is a numeric column, but [data.train] reads it with var_len = "
            "true"},
       }) {
    SCOPED_TRACE(c.to);
    Write(dir + "/bad.toml", Replace(job, c.from, c.to));
    r = Loom("train " + dir + "/bad.toml");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, c.message);
  }
}

}  // namespace
