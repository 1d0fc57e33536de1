#ifndef LOOM_CLI_JOB_H_
#define LOOM_CLI_JOB_H_

// A job file (TOML, docs/cli.md): data sources, feature columns, a canned model, its
// optimizer and learning-rate schedule, and the RunConfig, parsed into a Job. Every error
// is an InvalidArgument whose message names the file, the line and the key ("job.toml:12:
// [model] unknown key 'hidden'"); unknown keys are errors. The Job then builds the library
// objects: the canned Estimator and the input functions. Nothing here trains; see train.cc.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/estimator.h"
#include "loom/estimator/input_fn.h"
#include "loom/estimator/saved_model.h"

namespace loom::cli {

// A tf.train.Example feature of a tfrecord source: TF's FixedLenFeature (with an optional
// default for records that lack it) or VarLenFeature (padded to the batch's longest, with
// -1 or "", which categorical columns read as absent).
struct RecordFeature {
  DType dtype = kFloat32;
  Shape shape = Shape();                // fixed-length only
  std::optional<Tensor> default_value;  // fixed-length only
  bool var_len = false;
};

// [data.<split>]: one source of examples.
struct DataSource {
  std::string format;                         // "idx", "npy", "csv", "tfrecord"
  std::string images, labels;                 // idx
  std::map<std::string, std::string> arrays;  // npy: component -> file
  std::vector<std::string> files;             // csv, tfrecord
  // csv: column names and defaults (their TOML type gives the dtype).
  std::vector<std::string> columns;
  std::vector<Tensor> defaults;
  bool header = false;
  // tfrecord: feature -> its spec.
  std::map<std::string, RecordFeature> example_features;
  std::string compression;
};

// [[features]]: one feature column.
struct FeatureSpec {
  std::string name;
  std::string type = "numeric";  // numeric, bucketized, identity, vocabulary, hash
  std::vector<int64_t> shape = {1};
  double scale = 1.0, shift = 0.0;  // numeric: (x + shift) * scale
  std::vector<double> boundaries;
  int64_t num_buckets = 0;
  std::vector<std::string> vocabulary;
  int64_t embedding_dimension = 0;  // categorical in a DNN: embedding, else indicator
};

// [optimizer.schedule] (and [optimizer.linear_schedule]): a learning-rate schedule of the
// global step, one of learning_rate.h's; the optimizer's learning_rate is its starting rate.
// schedule.h parses and builds it.
struct ScheduleSpec {
  std::string type;         // exponential_decay, piecewise_constant, polynomial_decay, cosine_decay
  int64_t decay_steps = 0;  // all but piecewise_constant, > 0
  double decay_rate = 0;    // exponential_decay, > 0
  bool staircase = false;   // exponential_decay
  std::vector<int64_t> boundaries;  // piecewise_constant, increasing
  std::vector<double> values;       // piecewise_constant, one more than boundaries
  double end_learning_rate = 1e-4;  // polynomial_decay
  double power = 1.0;               // polynomial_decay
  bool cycle = false;               // polynomial_decay
  double alpha = 0.0;               // cosine_decay, in [0, 1]
};

struct Job {
  std::string path;  // the job file
  std::string text;  // its contents (saved into model_dir)
  // [model]
  std::string model_type;  // linear_classifier, ..., dnn_linear_regressor
  std::vector<int64_t> hidden_units;
  int64_t n_classes = 2;
  int64_t label_dimension = 1;
  std::optional<double> dropout;
  bool batch_norm = false;
  std::vector<std::string> linear_features, dnn_features;  // dnn_linear_*: which go where
  // [optimizer]
  std::string optimizer = "";
  std::optional<double> learning_rate;
  std::string linear_optimizer = "";
  std::optional<double> linear_learning_rate;
  // The schedules' learning rates are written as the scalar summaries "learning_rate" and
  // "linear_learning_rate".
  std::optional<ScheduleSpec> schedule, linear_schedule;
  // [run_config]
  RunConfig run_config;
  // [train]
  std::optional<int64_t> steps, max_steps;
  int64_t batch_size = 128;
  int64_t shuffle_buffer = 10000;
  std::optional<uint64_t> seed;
  // [eval]
  std::optional<int64_t> eval_steps;
  // [export]
  std::string export_dir;  // default: model_dir/export
  // [data]
  std::string label_key = "label";
  std::map<std::string, DataSource> data;  // "train", "eval", "predict"
  std::vector<FeatureSpec> features;

  bool is_classifier() const;
};

// Reads and validates the job file. Throws NotFound / InvalidArgument naming the file,
// line and key.
Job LoadJob(const std::string& path);
// Same, from text (`path` is only used in messages).
Job ParseJob(const std::string& text, const std::string& path);

// The canned Estimator the job describes.
std::unique_ptr<Estimator> MakeEstimator(const Job& job);
// Input functions over data.<split>: shuffled and repeated for "train", one pass
// otherwise. Throws InvalidArgument when the job has no such source or, with
// `needs_labels` (training and evaluation), when label_key names none of its components
// (the message lists them); ResourceExhausted when batch_size examples cannot fit in
// this machine's memory (naming the batch size, the bytes and what to set).
InputFn MakeInputFn(const Job& job, const std::string& split, bool training,
                    bool needs_labels = false);
// Raw serving input: one placeholder per feature of the split's source.
ServingInputReceiverFn MakeServingInputFn(const Job& job);

}  // namespace loom::cli

#endif  // LOOM_CLI_JOB_H_
