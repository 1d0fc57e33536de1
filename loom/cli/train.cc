// train, evaluate, predict, export and demo: a job file (job.h) handed to the Estimator;
// predict also runs TensorFlow models (tf_predict.h).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/base/logging.h"
#include "loom/cli/commands.h"
#include "loom/cli/default_job.h"
#include "loom/cli/job.h"
#include "loom/cli/progress.h"
#include "loom/cli/tf_predict.h"
#include "loom/distribute/data_parallel.h"
#include "loom/estimator/onnx_export.h"
#include "loom/graph/precision.h"
#include "loom/io/npy.h"
#include "loom/ops/bf16_support.h"
#include "loom/train/stop_signals.h"

namespace loom::cli {
namespace {

// --max-steps N: N > 0, as [train] max_steps (a value that is no integer is CLI11's error).
std::string CheckPositiveSteps(const std::string& value) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec == std::errc() && end == value.data() + value.size() && n <= 0) {
    return StrCat("must be > 0, given ", value);
  }
  return "";
}

// Flags shared by the job subcommands.
struct JobFlags {
  std::string job_path;
  std::string model_dir;               // overrides [run_config] model_dir
  std::optional<int64_t> max_steps;    // overrides [train]
  bool start_over_if_corrupt = false;  // RunConfig::start_over_if_checkpoints_corrupt
};

void AddJobFlags(CLI::App* cmd, JobFlags& flags, bool job_required = true) {
  CLI::Option* job = cmd->add_option("JOB", flags.job_path, "job file (TOML, see docs/cli.md)")
                         ->check(CLI::ExistingFile);
  if (job_required) job->required();
  cmd->add_option("--model-dir", flags.model_dir, "override [run_config] model_dir");
}

Job Load(const JobFlags& flags) {
  Job job = LoadJob(flags.job_path);
  if (!flags.model_dir.empty()) job.run_config.model_dir = flags.model_dir;
  if (flags.start_over_if_corrupt) job.run_config.start_over_if_checkpoints_corrupt = true;
  if (flags.max_steps) {
    job.max_steps = flags.max_steps;
    job.steps.reset();
  }
  return job;
}

// Writes the job into model_dir when training begins, i.e. once Train holds the lock on
// model_dir, so a second `loom train` refused by the lock does not replace the job file.
class JobFileHook : public SessionRunHook {
 public:
  explicit JobFileHook(const Job& job) : job_(job) {}
  void Begin(Graph&) override {
    // The job travels with its checkpoints: `loom report` and people read it from there.
    WriteFileAtomically(Env::Default(), JoinPath(job_.run_config.model_dir, "job.toml"), job_.text);
  }

 private:
  const Job& job_;
};

// Creates model_dir and checks that a file can be created in it (an existing directory
// may be read-only). A directory that cannot be created or written is FailedPrecondition
// naming it and the way out. (The job file is written into it by JobFileHook, under the
// lock.)
void PrepareModelDir(Env* env, const Job& job) {
  const std::string& dir = job.run_config.model_dir;
  try {
    env->CreateDirs(dir);
    const std::string probe = JoinPath(dir, StrCat(".loom_write_probe.", env->ProcessId()));
    env->NewWritableFile(probe)->Close();
    env->DeleteFile(probe);
  } catch (const Error& e) {
    throw FailedPrecondition("model_dir '", dir, "' (", job.path, " [run_config]) is not a ",
                             "writable directory (", e.message(), "); make it writable or ",
                             "choose another model_dir (--model-dir)");
  }
}

TrainResult RunTrain(const Job& job, Estimator& estimator, bool restart_input = false) {
  Env* env = Env::Default();
  PrepareModelDir(env, job);
  bool tty = isatty(fileno(stderr));
  if (tty) SetMinLogLevel(LogLevel::kWarning);
  int64_t every =
      job.run_config.log_step_count_steps > 0 ? job.run_config.log_step_count_steps : 100;
  TrainOptions options{
      .steps = job.steps, .max_steps = job.max_steps, .restart_input = restart_input};
  options.hooks.push_back(std::make_shared<JobFileHook>(job));
  options.hooks.push_back(
      NewProgressHook({.tty = tty, .every_steps = every, .max_steps = job.max_steps}));
  TrainResult result = estimator.Train(
      MakeInputFn(job, "train", /*training=*/true, /*needs_labels=*/true), std::move(options));
  SetMinLogLevel(LogLevel::kInfo);
  const auto step = static_cast<long long>(result.global_step);
  if (result.steps_run == 0 && job.max_steps && result.global_step >= *job.max_steps) {
    // The library says so at INFO, which a terminal hides: "trained to" read as if it had.
    std::printf(
        "nothing to train: model_dir's checkpoint is at global step %lld, at or past "
        "max_steps %lld; raise max_steps (--max-steps) to train further\n",
        step, static_cast<long long>(*job.max_steps));
  } else if (result.steps_run == 0 && result.stop_signal == 0) {
    std::printf(
        "trained no step: [data.train] yielded no batch (is it empty?); global step "
        "%lld\n",
        step);
  } else {
    std::printf("trained to global step %lld", step);
    if (result.final_loss) std::printf(", final loss %.4f", *result.final_loss);
    std::printf("\n");
  }
  if (auto ckpt = estimator.LatestCheckpoint())
    std::printf("checkpoint:  %s.safetensors\n", ckpt->c_str());
  std::printf("event files: %s (tensorboard --logdir %s)\n", job.run_config.model_dir.c_str(),
              job.run_config.model_dir.c_str());
  return result;
}

std::map<std::string, double> RunEvaluate(const Job& job, Estimator& estimator);
void RunExport(const Job& job, Estimator& estimator, const std::string& dir);

// `mpirun -np N loom train job.toml` (docs/distribute.md): this process is one rank of a
// data-parallel job over the same job file. [train] batch_size is the global batch. Rank 0
// is the chief: it alone writes model_dir, prints progress and the summary, and evaluates
// or exports afterwards. `--restart-input` is passed to every rank (the chief's fresh
// input position is what the others take at the broadcast). An error on any rank aborts the whole
// job (MPI_Abort), so that no rank waits forever for a failed one.
void TrainOnMpiRanks(Job job, bool evaluate, bool export_model, bool restart_input) {
  std::shared_ptr<distribute::Communicator> comm = distribute::MpiCommunicator();
  try {
    if (job.batch_size % comm->size() != 0) {
      throw InvalidArgument(job.path, ": [train] batch_size ", job.batch_size,
                            " is the global batch, which the ", comm->size(),
                            " ranks of this mpirun cannot share evenly; make it a multiple of ",
                            comm->size(), " or change -np");
    }
    job.run_config = distribute::DataParallelRunConfig(job.run_config, comm);
    const bool chief = comm->rank() == 0;
    if (chief) {
      std::printf(
          "training on %d ranks (mpirun): global batch %lld = %d x %lld rows, %d threads "
          "per rank\n",
          comm->size(), static_cast<long long>(job.batch_size), comm->size(),
          static_cast<long long>(job.batch_size / comm->size()),
          job.run_config.session_config.intra_op_threads);
      std::fflush(stdout);
    } else {
      SetMinLogLevel(LogLevel::kWarning);  // logs and progress come from rank 0
    }
    auto estimator = MakeEstimator(job);
    if (chief) {
      RunTrain(job, *estimator, restart_input);
      if (evaluate) RunEvaluate(job, *estimator);
      if (export_model) RunExport(job, *estimator, "");
    } else {
      estimator->Train(
          MakeInputFn(job, "train", /*training=*/true),
          {.steps = job.steps, .max_steps = job.max_steps, .restart_input = restart_input});
    }
  } catch (const std::exception& e) {
    comm->Abort(1, e.what());
  }
}

// Only `train` runs as ranks of an mpirun job; N copies of another subcommand would all
// write the same files.
void RejectMpiLaunch(const char* command) {
  if (distribute::LaunchedByMpi()) {
    throw InvalidArgument("`loom ", command, "` runs in one process; run it without mpirun ",
                          "(only `loom train` trains over MPI ranks: docs/distribute.md)");
  }
}

// A stop signal ended training early (its checkpoint is written): say so and exit with
// 128 + the signal, as a shell reports a process killed by it (docs/cli.md).
void ExitIfInterrupted(const TrainResult& result) {
  if (result.stop_signal == 0) return;
  std::printf("interrupted by %s at global step %lld; run the same command again to resume\n",
              train::StopSignalName(result.stop_signal),
              static_cast<long long>(result.global_step));
  std::fflush(stdout);
  std::exit(128 + result.stop_signal);
}

std::map<std::string, double> RunEvaluate(const Job& job, Estimator& estimator) {
  std::string split = job.data.count("eval") ? "eval" : "train";
  auto metrics =
      estimator.Evaluate(MakeInputFn(job, split, /*training=*/false, /*needs_labels=*/true),
                         {.steps = job.eval_steps});
  for (const auto& [name, value] : metrics) std::printf("%s = %.6g\n", name.c_str(), value);
  std::printf("eval event files: %s\n", JoinPath(job.run_config.model_dir, "eval").c_str());
  return metrics;
}

std::string ExportBase(const Job& job, const std::string& dir) {
  return !dir.empty()              ? dir
         : !job.export_dir.empty() ? job.export_dir
                                   : JoinPath(job.run_config.model_dir, "export");
}

void RunExport(const Job& job, Estimator& estimator, const std::string& dir) {
  std::string path = estimator.ExportSavedModel(ExportBase(job, dir), MakeServingInputFn(job));
  std::printf("export: %s\n", path.c_str());
}

// `loom export --format onnx`: DIR/<unix seconds>/model.onnx (docs/onnx.md).
void RunOnnxExport(const Job& job, Estimator& estimator, const std::string& dir,
                   const std::string& signature) {
  Env* env = Env::Default();
  const std::string base = ExportBase(job, dir);
  const std::string export_dir = NewExportDir(env, base);
  env->CreateDirs(export_dir);
  OnnxExportResult r;
  try {
    r = ExportOnnx(estimator, MakeServingInputFn(job), JoinPath(export_dir, "model.onnx"),
                   {.signature = signature});
  } catch (...) {
    // A version directory without a model would be taken for the newest export by a
    // server that scans DIR (TF Serving, Triton): leave none behind.
    env->DeleteRecursively(export_dir);
    throw;
  }
  std::printf("export: %s (signature %s, %lld ONNX nodes)\n", r.path.c_str(), r.signature.c_str(),
              static_cast<long long>(r.num_nodes));
  if (!r.external_data_path.empty()) {
    std::printf("external data: %s (%lld tensors)\n", r.external_data_path.c_str(),
                static_cast<long long>(r.num_external_tensors));
  }
}

// Concatenates batches along dim 0.
Tensor Concat(const std::vector<Tensor>& parts) {
  LOOM_CHECK(!parts.empty());
  std::vector<int64_t> dims = parts[0].shape().dims();
  if (dims.empty()) dims.push_back(1);
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.shape().rank() == 0 ? 1 : p.shape().dim(0);
  dims[0] = rows;
  Tensor out = Tensor::Zeros(parts[0].dtype(), Shape(dims));
  if (out.dtype() == kString) {  // std::string elements are objects, not bytes
    std::string* dst = out.data<std::string>();
    for (const Tensor& p : parts)
      dst = std::copy(p.data<std::string>(), p.data<std::string>() + p.NumElements(), dst);
    return out;
  }
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor& p : parts) {
    std::memcpy(dst, p.raw_data(), p.TotalBytes());
    dst += p.TotalBytes();
  }
  return out;
}

std::string Cell(const Tensor& t, int64_t i) {
  char buf[64];
  switch (t.dtype()) {
    case kFloat32:
      std::snprintf(buf, sizeof buf, "%.6g", t.data<float>()[i]);
      return buf;
    case kFloat64:
      std::snprintf(buf, sizeof buf, "%.9g", t.data<double>()[i]);
      return buf;
    case kInt32:
      return std::to_string(t.data<int32_t>()[i]);
    case kInt64:
      return std::to_string(t.data<int64_t>()[i]);
    case kUInt8:
      return std::to_string(t.data<uint8_t>()[i]);
    case kBool:
      return t.data<bool>()[i] ? "1" : "0";
    case kString:
      return t.data<std::string>()[i];
    default:
      return "?";
  }
}

void RunPredict(const Job& job, Estimator& estimator, const std::string& out_path,
                std::vector<std::string> keys) {
  std::string split = job.data.count("predict") ? "predict"
                      : job.data.count("eval")  ? "eval"
                                                : "train";
  CheckPredictionFile(out_path, keys);
  const std::string npy_key = job.is_classifier() ? "probabilities" : "predictions";
  if (out_path.ends_with(".npy") && keys.empty()) keys = {npy_key};
  std::map<std::string, std::vector<Tensor>> batches;
  try {
    for (const Prediction& batch :
         estimator.Predict(MakeInputFn(job, split, false),
                           {.predict_keys = keys, .yield_single_examples = false})) {
      for (const auto& [k, v] : batch) batches[k].push_back(v);
    }
  } catch (const Error& e) {
    // The library names its option; the user gave --key.
    constexpr std::string_view kUnknownKey = "Predict: predict_keys names ";
    if (e.code() != ErrorCode::kInvalidArgument || !e.message().starts_with(kUnknownKey)) throw;
    throw InvalidArgument("--key ", e.message().substr(kUnknownKey.size()),
                          "; give one of those (or no --key for a CSV of every key)");
  }
  if (batches.empty()) throw InvalidArgument("no predictions: [data.", split, "] is empty");
  std::map<std::string, Tensor> all;
  for (const auto& [k, v] : batches) all[k] = Concat(v);
  WritePredictionFile(all, out_path, keys, npy_key);
}

}  // namespace

void CheckPredictionFile(const std::string& out_path, const std::vector<std::string>& keys) {
  const bool npy = out_path.ends_with(".npy");
  if (!npy && !out_path.ends_with(".csv"))
    throw InvalidArgument("--out '", out_path, "': expected a .csv or .npy file name");
  if (npy && keys.size() > 1)
    throw InvalidArgument("--out '", out_path,
                          "': a .npy file holds one prediction key; give one --key");
}

void WritePredictionFile(const std::map<std::string, Tensor>& all, const std::string& out_path,
                         const std::vector<std::string>& keys, const std::string& npy_default_key) {
  CheckPredictionFile(out_path, keys);
  Env* env = Env::Default();
  if (out_path.ends_with(".npy")) {
    const std::string key = keys.empty() ? npy_default_key : keys[0];
    auto it = all.find(key);
    if (it == all.end()) {
      throw InvalidArgument("--out '", out_path, "': no prediction '", key, "'; give one --key");
    }
    WriteNpy(env, out_path, it->second);
  } else {
    std::string text;
    int64_t rows = all.begin()->second.rank() == 0 ? 1 : all.begin()->second.shape().dim(0);
    // Values per row: the product of the dims after the first (so zero rows keep the header).
    auto row_width = [](const Tensor& t) {
      int64_t width = 1;
      for (int i = 1; i < t.rank(); ++i) width *= t.dim(i);
      return width;
    };
    // Header: key, or key_j for each of a row's values.
    std::vector<std::string> header;
    for (const auto& [k, t] : all) {
      if (!keys.empty() && std::find(keys.begin(), keys.end(), k) == keys.end()) continue;
      const int64_t width = row_width(t);
      for (int64_t j = 0; j < width; ++j)
        header.push_back(width == 1 ? k : k + "_" + std::to_string(j));
    }
    for (size_t j = 0; j < header.size(); ++j) text += (j ? "," : "") + header[j];
    text += "\n";
    for (int64_t r = 0; r < rows; ++r) {
      bool first = true;
      for (const auto& [k, t] : all) {
        if (!keys.empty() && std::find(keys.begin(), keys.end(), k) == keys.end()) continue;
        const int64_t width = row_width(t);
        for (int64_t j = 0; j < width; ++j) {
          if (!first) text += ',';
          text += Cell(t, r * width + j);
          first = false;
        }
      }
      text += "\n";
    }
    WriteFileAtomically(env, out_path, text);
  }
  std::printf("predictions: %s\n", out_path.c_str());
}

void AddJobCommands(CLI::App& app) {
  auto run = [](auto&& body) { return [body] { body(); }; };
  {
    auto flags = std::make_shared<JobFlags>();
    CLI::App* cmd = app.add_subcommand("train", "train the model a job file describes");
    AddJobFlags(cmd, *flags);
    cmd->add_option("--max-steps", flags->max_steps, "override [train] steps / max_steps")
        ->check(CheckPositiveSteps);
    auto evaluate = std::make_shared<bool>(false);
    auto export_model = std::make_shared<bool>(false);
    cmd->add_flag("--evaluate", *evaluate, "evaluate on [data.eval] after training");
    cmd->add_flag("--export", *export_model, "export a SavedModel after training (see export)");
    auto restart_input = std::make_shared<bool>(false);
    cmd->add_flag("--restart-input", *restart_input,
                  "start the training input from its beginning instead of the checkpoint's "
                  "input position (needed after changing batch_size, shuffle or files)");
    cmd->add_flag("--start-over-if-corrupt", flags->start_over_if_corrupt,
                  "when every checkpoint in the model_dir fails to load, train from step 0 "
                  "(keeping the files) instead of stopping with an error");
    cmd->callback(run([flags, evaluate, export_model, restart_input] {
      Job job = Load(*flags);
      if (distribute::LaunchedByMpi()) {
        return TrainOnMpiRanks(std::move(job), *evaluate, *export_model, *restart_input);
      }
      auto estimator = MakeEstimator(job);
      ExitIfInterrupted(RunTrain(job, *estimator, *restart_input));
      if (*evaluate) RunEvaluate(job, *estimator);
      if (*export_model) RunExport(job, *estimator, "");
    }));
  }
  {
    auto flags = std::make_shared<JobFlags>();
    CLI::App* cmd = app.add_subcommand("evaluate", "evaluate the newest checkpoint on [data.eval]");
    AddJobFlags(cmd, *flags);
    cmd->callback(run([flags] {
      RejectMpiLaunch("evaluate");
      Job job = Load(*flags);
      RunEvaluate(job, *MakeEstimator(job));
    }));
  }
  {
    auto flags = std::make_shared<JobFlags>();
    auto out = std::make_shared<std::string>();
    auto keys = std::make_shared<std::vector<std::string>>();
    auto tf = std::make_shared<TfPredictFlags>();
    CLI::App* cmd = app.add_subcommand(
        "predict",
        "predict [data.predict] (else [data.eval]) and write the predictions; or run a "
        "TensorFlow SavedModel / frozen GraphDef on .npy, .tfrecord or CSV inputs (--saved-model, "
        "--graph)");
    AddJobFlags(cmd, *flags, /*job_required=*/false);
    cmd->add_option("--out,-o", *out, "output file: .csv (all keys) or .npy (one key)")->required();
    cmd->add_option("--key", *keys,
                    "prediction keys to write (default: all for CSV, "
                    "probabilities / predictions for .npy)");
    AddTfPredictFlags(cmd, *tf);
    cmd->callback(run([flags, out, keys, tf] {
      RejectMpiLaunch("predict");
      if (tf->active()) {
        if (!flags->job_path.empty()) {
          throw InvalidArgument("predict: give a JOB file or --saved-model / --graph, not both");
        }
        RunTfPredict(*tf, *out, *keys);
        return;
      }
      if (flags->job_path.empty()) {
        throw InvalidArgument("predict: give a JOB file, or --saved-model DIR / --graph FILE.pb");
      }
      Job job = Load(*flags);
      RunPredict(job, *MakeEstimator(job), *out, *keys);
    }));
  }
  {
    auto flags = std::make_shared<JobFlags>();
    auto dir = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("savedmodel");
    auto signature = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand(
        "export", "export the newest checkpoint as a SavedModel, or as ONNX (--format onnx)");
    AddJobFlags(cmd, *flags);
    cmd->add_option("--export-dir", *dir,
                    "base directory (default: [export] dir, else MODEL_DIR/export)");
    cmd->add_option("--format", *format,
                    "savedmodel: a Loom SavedModel directory; onnx: "
                    "DIR/<timestamp>/model.onnx (docs/onnx.md)")
        ->check(CLI::IsMember({"savedmodel", "onnx"}))
        ->capture_default_str();
    cmd->add_option("--signature", *signature,
                    "onnx: the signature exported (default: predict, else serving_default)");
    cmd->callback(run([flags, dir, format, signature] {
      RejectMpiLaunch("export");
      Job job = Load(*flags);
      if (*format == "onnx") return RunOnnxExport(job, *MakeEstimator(job), *dir, *signature);
      if (!signature->empty()) {
        throw InvalidArgument(
            "export: --signature applies to --format onnx; a SavedModel holds every signature");
      }
      RunExport(job, *MakeEstimator(job), *dir);
    }));
  }
  {
    auto model_dir = std::make_shared<std::string>("/tmp/loom_demo");
    auto max_steps = std::make_shared<std::optional<int64_t>>();
    auto precision = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand(
        "demo", "train and evaluate the built-in job: a DNNClassifier on Fashion-MNIST");
    cmd->add_option("--model-dir", *model_dir, "where to train")->capture_default_str();
    cmd->add_option("--max-steps", *max_steps, "override the job's max_steps")
        ->check(CheckPositiveSteps);
    cmd->add_option("--precision", *precision,
                    "float32 (default), bf16, bf16-strict or bf16-emulated ([train] precision)");
    cmd->callback(run([model_dir, max_steps, precision] {
      RejectMpiLaunch("demo");
      Job job = ParseJob(kDefaultJobText, "fashion_mnist_dnn.toml (built in)");
      job.run_config.model_dir = *model_dir;
      if (*max_steps) job.max_steps = **max_steps;
      if (!precision->empty()) {
        job.run_config.precision = ParsePrecision(*precision, "--precision");
        std::printf("precision: %s on %s\n", PrecisionName(job.run_config.precision),
                    DescribeBf16Support().c_str());
      }
      auto estimator = MakeEstimator(job);
      ExitIfInterrupted(RunTrain(job, *estimator));
      auto metrics = RunEvaluate(job, *estimator);
      if (metrics.count("accuracy")) std::printf("test accuracy: %.4f\n", metrics["accuracy"]);
      std::printf("report: loom report %s\n", model_dir->c_str());
    }));
  }
}

}  // namespace loom::cli
