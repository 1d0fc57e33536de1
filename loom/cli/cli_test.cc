// Runs the built `loom` binary (LOOM_CLI_PATH) and checks its output and exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/cli/cli_test_util.h"
#include "loom/io/event_file_proto.h"
#include "loom/io/example_builder.h"
#include "loom/io/npy.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/record_writer.h"
#include "loom/io/safetensors.h"

namespace {

using namespace loom::cli::testing;  // NOLINT: the helpers of cli_test_util.h

TEST(CliTest, HelpOnEverySubcommand) {
  Result top = Loom("--help");
  EXPECT_EQ(top.code, 0) << top.output;
  for (const char* sub : {"inspect", "train", "evaluate", "predict", "export", "demo", "report"}) {
    EXPECT_CONTAINS(top.output, sub);
    Result r = Loom(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub << ": " << r.output;
    EXPECT_CONTAINS(r.output, "Usage");
  }
  EXPECT_NE(Loom("").code, 0);
  EXPECT_NE(Loom("frobnicate").code, 0);
}

TEST(CliTest, BadPathsFailClearly) {
  Result r = Loom("inspect /nonexistent/file.safetensors");
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "/nonexistent/file.safetensors");
  EXPECT_CONTAINS(r.output, "does not exist");
  r = Loom("report /nonexistent/dir");
  EXPECT_NE(r.code, 0);
  EXPECT_CONTAINS(r.output, "does not exist");
  r = Loom("train /nonexistent/job.toml");
  EXPECT_NE(r.code, 0);
}

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

// A batch that cannot fit in memory is ResourceExhausted naming the key, the batch size
// and the bytes, before anything is allocated (it was std::bad_alloc). 10^12 examples of
// 16 bytes exceed any machine this runs on.
TEST(CliTest, HugeBatchIsResourceExhausted) {
  std::string dir = TempDir("huge_batch");
  WriteCsv(dir + "/d.csv");
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  Write(dir + "/job.toml", Replace(job, "batch_size = 32", "batch_size = 1000000000000"));
  Result r = Loom("train " + dir + "/job.toml");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  "ResourceExhausted: " + dir +
                      "/job.toml: [train] batch_size = 1000000000000 does not fit in memory");
  EXPECT_CONTAINS(r.output,
                  "one batch of [data.train] is 16000000000000 bytes (16 bytes per example: a: 4, "
                  "b: 4, label: 8)");
  EXPECT_CONTAINS(r.output, "lower batch_size to at most ");
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
}

// A classifier's labels read as floats (the column's default is 0.0) train when they are
// whole numbers, and a label 0.7 is an error naming the label and the split: it was cast
// to class 0 silently.
TEST(CliTest, FractionalClassifierLabelsAreAnError) {
  std::string dir = TempDir("float_labels");
  WriteCsv(dir + "/d.csv");
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  Write(dir + "/job.toml", Replace(job, "defaults = [0.0, 0.0, 0]", "defaults = [0.0, 0.0, 0.0]"));
  Result r = Loom("train " + dir + "/job.toml --max-steps 3");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string csv = Read(dir + "/d.csv");
  const size_t last_label = csv.rfind(',') + 1;
  Write(dir + "/d.csv", csv.substr(0, last_label) + "0.7\n");
  r = Loom("train " + dir + "/job.toml --model-dir " + dir + "/model2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "InvalidArgument: label 'label' = 0.7 (example ");
  EXPECT_CONTAINS(r.output, " of a batch of [data.train]) is not a class id");
}

// A failed `loom export --format onnx` (here: no checkpoint yet) leaves no version
// directory behind: a server scanning the export directory would take an empty
// export/<timestamp>/ for the newest model.
TEST(CliTest, FailedOnnxExportLeavesNoVersionDirectory) {
  std::string dir = TempDir("failed_export");
  WriteCsv(dir + "/d.csv");
  Write(dir + "/job.toml",
        Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv"));
  Result r = Loom("export " + dir + "/job.toml --format onnx --export-dir " + dir + "/export");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "could not find a trained model");
  if (fs::exists(dir + "/export")) {
    EXPECT_TRUE(fs::is_empty(dir + "/export")) << fs::directory_iterator(dir + "/export")->path();
  }
  r = Loom("export " + dir + "/job.toml --export-dir " + dir + "/export");
  EXPECT_EQ(r.code, 1) << r.output;
  if (fs::exists(dir + "/export")) {
    EXPECT_TRUE(fs::is_empty(dir + "/export"));
  }
}

// label_key naming no component lists the components there are.
TEST(CliTest, LabelKeyNamingNoColumnListsTheColumns) {
  std::string dir = TempDir("label_key");
  WriteCsv(dir + "/d.csv");
  std::string job = Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv");
  Write(dir + "/job.toml",
        Replace(job, "[data.train]", "[data]\nlabel_key = \"y\"\n\n[data.train]"));
  Result r = Loom("train " + dir + "/job.toml");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  "[data] label_key = \"y\" names no component of [data.train], whose "
                  "components are a, b, label");
  EXPECT_EQ(r.output.find("name a component"), std::string::npos) << r.output;
  r = Loom("evaluate " + dir + "/job.toml");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "names no component of [data.eval]");
}

// A model_dir that cannot be written is FailedPrecondition naming it and what to do (it
// was Internal). As root a mode-0555 directory is writable, so root gets a sysfs path,
// where mkdir fails with EPERM; a model_dir that is a file is the other case. An existing
// read-only model_dir (sysfs itself for root) is the same error (it was "in use by another
// trainer", from the lock file it could not create).
TEST(CliTest, UnwritableModelDirIsFailedPrecondition) {
  std::string dir = TempDir("read_only");
  WriteCsv(dir + "/d.csv");
  std::vector<std::string> model_dirs = {dir + "/a_file"};
  Write(dir + "/a_file", "not a directory");
  if (geteuid() != 0) {
    fs::create_directories(dir + "/ro");
    fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    model_dirs.push_back(dir + "/ro/model");
    model_dirs.push_back(dir + "/ro");
  } else if (fs::exists("/sys/kernel")) {
    model_dirs.push_back("/sys/kernel/loom_cli_test_model");
    model_dirs.push_back("/sys/kernel");
  }
  for (const std::string& model_dir : model_dirs) {
    SCOPED_TRACE(model_dir);
    Write(dir + "/job.toml",
          Replace(Replace(kJob, "MODEL_DIR", model_dir), "DATA", dir + "/d.csv"));
    Result r = Loom("train " + dir + "/job.toml");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "FailedPrecondition: model_dir '" + model_dir + "' (" + dir +
                                  "/job.toml [run_config]) is not a writable directory");
    EXPECT_CONTAINS(r.output, "choose another model_dir (--model-dir)");
    EXPECT_EQ(r.output.find("another trainer"), std::string::npos) << r.output;
  }
  EXPECT_GE(model_dirs.size(), 3u);
}

// `loom train` in a child process whose output goes to out_path; returns its pid.
pid_t StartLoom(const std::vector<std::string>& args, const std::string& out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::freopen(out_path.c_str(), "w", stdout);
    if (out == nullptr || dup2(fileno(stdout), 2) < 0) _exit(126);
    std::vector<char*> argv{const_cast<char*>(LOOM_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(LOOM_CLI_PATH, argv.data());
    _exit(127);
  }
  return pid;
}

// A long `loom train`: a second one on its model_dir is refused naming it (and leaves its
// job.toml alone); SIGTERM stops it with a final checkpoint, a message and status 143.
TEST(CliTest, SecondTrainerIsRefusedAndSigtermExitsWith143) {
  std::string dir = TempDir("sigterm");
  std::string model_dir = dir + "/model";
  WriteCsv(dir + "/d.csv");
  std::string job = dir + "/job.toml";
  std::string text = Replace(Replace(Replace(kJob, "MODEL_DIR", model_dir), "DATA", dir + "/d.csv"),
                             "max_steps = 200", "max_steps = 100000000");
  Write(job, text);
  const pid_t pid = StartLoom({"train", job}, dir + "/out.txt");
  for (int i = 0; i < 2000 && !fs::exists(model_dir + "/checkpoint"); ++i) usleep(10000);
  ASSERT_TRUE(fs::exists(model_dir + "/checkpoint")) << Read(dir + "/out.txt");

  std::string other = dir + "/other.toml";
  Write(other, "# another job\n" + text);
  Result r = Loom("train " + other);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "is in use by another trainer");
  EXPECT_CONTAINS(r.output, "pid " + std::to_string(pid) + " on host ");
  EXPECT_EQ(Read(model_dir + "/job.toml"), text);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string out = Read(dir + "/out.txt");
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 143) << out;
  EXPECT_CONTAINS(out, "interrupted by SIGTERM at global step ");
  const std::string step = out.substr(out.find("interrupted by SIGTERM at global step ") + 38);
  EXPECT_CONTAINS(Read(model_dir + "/checkpoint"),
                  "model_checkpoint_path: \"model.ckpt-" + step.substr(0, step.find(';')) + "\"");
}

TEST(CliTest, TrainEvaluatePredictExportInspectReport) {
  std::string dir = TempDir("run");
  std::string model_dir = dir + "/model";
  WriteCsv(dir + "/d.csv");
  std::string job = dir + "/job.toml";
  Write(job, Replace(Replace(kJob, "MODEL_DIR", model_dir), "DATA", dir + "/d.csv"));

  Result r = Loom("train " + job + " --evaluate");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "trained to global step 200");
  EXPECT_CONTAINS(r.output, "checkpoint:");
  EXPECT_CONTAINS(r.output, "accuracy = ");
  EXPECT_TRUE(fs::exists(model_dir + "/checkpoint"));
  EXPECT_TRUE(fs::exists(model_dir + "/job.toml"));
  // Not a terminal: plain progress lines, no carriage returns.
  EXPECT_CONTAINS(r.output, "step 200/200");
  EXPECT_EQ(r.output.find('\r'), std::string::npos);

  r = Loom("evaluate " + job);
  ASSERT_EQ(r.code, 0) << r.output;
  size_t at = r.output.find("accuracy = ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_GT(std::stod(r.output.substr(at + 11)), 0.9) << r.output;

  r = Loom("inspect " + model_dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "model.ckpt-200");
  EXPECT_CONTAINS(r.output, "global step: 200");
  EXPECT_CONTAINS(r.output, "dnn/hiddenlayer_0/kernel");
  EXPECT_CONTAINS(r.output, "[2,16]");

  r = Loom("inspect " + model_dir + "/model.ckpt-200.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "global step: 200");

  std::string events = EventsFile(model_dir);
  ASSERT_FALSE(events.empty());
  r = Loom("inspect " + events);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "loss");
  EXPECT_CONTAINS(r.output, "global_step/sec");
  EXPECT_CONTAINS(r.output, "values, last at step 1");  // 199 or 200

  r = Loom("predict " + job + " --out " + dir + "/p.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string csv = Read(dir + "/p.csv");
  EXPECT_CONTAINS(csv, "probabilities_1");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 401);
  r = Loom("predict " + job + " --out " + dir + "/p.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(Read(dir + "/p.npy").substr(1, 5), "NUMPY");
  EXPECT_NE(Loom("predict " + job + " --out " + dir + "/p.txt").code, 0);

  r = Loom("export " + job);
  ASSERT_EQ(r.code, 0) << r.output;
  at = r.output.find("export: ");
  ASSERT_NE(at, std::string::npos);
  std::string export_dir = r.output.substr(at + 8, r.output.find('\n', at) - at - 8);
  r = Loom("inspect " + export_dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "nodes:");
  EXPECT_CONTAINS(r.output, "Placeholder");
  r = Loom("inspect --kind graph " + export_dir + "/graph.pb");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "MatMul");
  r = Loom("inspect " + export_dir);
  EXPECT_CONTAINS(r.output, "signatures:\n");
  EXPECT_CONTAINS(r.output, "\n  serving_default\n");
  // A SavedModel whose graph.pb is cut short is an error, whether the cut falls inside a
  // node (the protobuf does not parse) or between nodes (inputs and signatures dangle).
  std::string graph_bytes = Read(export_dir + "/graph.pb");
  for (size_t keep : {graph_bytes.size() / 2, graph_bytes.size() - 1}) {
    std::string damaged = dir + "/damaged_export_" + std::to_string(keep);
    fs::copy(export_dir, damaged, fs::copy_options::recursive);
    std::ofstream(damaged + "/graph.pb", std::ios::binary | std::ios::trunc)
        << graph_bytes.substr(0, keep);
    r = Loom("inspect " + damaged);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "loom: error: DataLoss: '" + damaged + "/graph.pb");
  }
  // A node lost between others: the graph parses, but others read the lost node.
  {
    loom::proto::GraphDef def;
    ASSERT_TRUE(def.ParseFromString(graph_bytes));
    auto* nodes = def.mutable_node();
    auto matmul = std::find_if(nodes->begin(), nodes->end(),
                               [](const auto& n) { return n.op() == "MatMul"; });
    ASSERT_NE(matmul, nodes->end());
    nodes->erase(matmul);
    std::string damaged = dir + "/damaged_export_node";
    fs::copy(export_dir, damaged, fs::copy_options::recursive);
    std::ofstream(damaged + "/graph.pb", std::ios::binary | std::ios::trunc)
        << def.SerializeAsString();
    r = Loom("inspect " + damaged);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "is not in the graph (truncated or corrupt)");
  }

  std::string html_path = dir + "/report.html";
  r = Loom("report " + model_dir + " -o " + html_path);
  ASSERT_EQ(r.code, 0) << r.output;
  std::string html = Read(html_path);
  EXPECT_CONTAINS(html, "<svg");
  EXPECT_CONTAINS(html, "<path class=\"series\" data-run=\"train\" d=\"M");
  EXPECT_CONTAINS(html, "data-run=\"eval\"");
  EXPECT_CONTAINS(html, "hidden_units = [16]");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
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
