// `loom train` when training cannot go on (the built binary, LOOM_CLI_PATH): batches and
// labels that are errors, model_dirs that cannot be written or are in use, and SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "loom/cli/cli_test_util.h"
#include "loom/testing/same_checkpoint.h"

namespace {

using namespace loom::cli::testing;  // NOLINT: the helpers of cli_test_util.h

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
// The same job, seeded, trained twice (each on this machine's cores, with dropout) writes
// the same bits: every variable, optimizer slot, dropout stream and the input position
// (docs/training.md). The Estimator's side, across thread counts and prefetching:
// ReproducibilityTest.*.
TEST(CliTest, SameJobTrainsTheSameBits) {
  std::string dir = TempDir("same_bits");
  WriteCsv(dir + "/d.csv");
  std::string job = Replace(kJob, "DATA", dir + "/d.csv");
  job = Replace(job, "n_classes = 2\n", "n_classes = 2\ndropout = 0.2\n");
  for (const char* run : {"one", "two"}) {
    Write(dir + "/" + run + ".toml", Replace(job, "MODEL_DIR", dir + "/" + run));
    Result r = Loom("train " + dir + "/" + run + ".toml");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  const loom::testing::CheckpointKinds kinds = loom::testing::ExpectSameCheckpointTensors(
      dir + "/one/model.ckpt-200", dir + "/two/model.ckpt-200");
  EXPECT_GE(kinds.random_streams, 1);  // the dropout's
  EXPECT_EQ(kinds.iterator_states, 1);
}

// A run that has nothing to do says so (and a --key the model lacks names the flag): the checkpoint
// is already at max_steps (it printed "trained to global step 200", the library's INFO line being
// hidden on a terminal), or the training data yielded no batch (TF: "Training with estimator made
// no steps").
TEST(CliTest, ARunThatTrainsNoStepSaysWhy) {
  std::string dir = TempDir("no_step");
  WriteCsv(dir + "/d.csv");
  Write(dir + "/job.toml", Replace(Replace(kJob, "MODEL_DIR", dir + "/m"), "DATA", dir + "/d.csv"));
  ASSERT_EQ(Loom("train " + dir + "/job.toml").code, 0);
  Result again = Loom("train " + dir + "/job.toml --max-steps 150");
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_CONTAINS(again.output,
                  "nothing to train: model_dir's checkpoint is at global step 200, at or past "
                  "max_steps 150; raise max_steps (--max-steps) to train further");
  EXPECT_EQ(again.output.find("trained to global step"), std::string::npos) << again.output;

  // A --key the model does not predict names the flag, not the library's predict_keys.
  Result key = Loom("predict " + dir + "/job.toml --out " + dir + "/p.csv --key probs");
  EXPECT_EQ(key.code, 1) << key.output;
  EXPECT_CONTAINS(key.output,
                  "InvalidArgument: --key 'probs', which is not a prediction of the model; it "
                  "has {class_ids, classes, logistic, logits, probabilities}; give one of those");

  Write(dir + "/empty.csv", "a,b,label\n");
  Write(dir + "/empty.toml",
        Replace(Replace(kJob, "MODEL_DIR", dir + "/e"), "DATA", dir + "/empty.csv"));
  Result empty = Loom("train " + dir + "/empty.toml");
  EXPECT_EQ(empty.code, 0) << empty.output;
  EXPECT_CONTAINS(empty.output,
                  "trained no step: [data.train] yielded no batch (is it empty?); global step 0");
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

}  // namespace
