// Runs the built `loom` binary (LOOM_CLI_PATH) and checks its output and exit codes.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "loom/base/env.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/record_writer.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr
};

Result Loom(const std::string& args) {
  std::string cmd = std::string(LOOM_CLI_PATH) + " " + args + " 2>&1 </dev/null";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

std::string TempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("loom_cli_test_" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (haystack)

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

constexpr const char* kJob = R"([model]
type = "dnn_classifier"
hidden_units = [16]
n_classes = 2

[optimizer]
name = "Adam"
learning_rate = 0.05

[run_config]
model_dir = "MODEL_DIR"
tf_random_seed = 1
save_checkpoints_steps = 100
save_summary_steps = 10
log_step_count_steps = 50

[train]
max_steps = 200
batch_size = 32
seed = 3

[data.train]
format = "csv"
files = ["DATA"]
header = true
columns = ["a", "b", "label"]
defaults = [0.0, 0.0, 0]

[data.eval]
format = "csv"
files = ["DATA"]
header = true
columns = ["a", "b", "label"]
defaults = [0.0, 0.0, 0]

[[features]]
name = "a"

[[features]]
name = "b"
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
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

// Two separable blobs.
void WriteCsv(const std::string& path) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 0.3f);
  std::string text = "a,b,label\n";
  for (int i = 0; i < 400; ++i) {
    int label = i % 2;
    float c = label ? 1.0f : -1.0f;
    text += std::to_string(c + noise(rng)) + "," + std::to_string(-c + noise(rng)) + "," +
            std::to_string(label) + "\n";
  }
  Write(path, text);
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

  std::string events;
  for (const auto& e : fs::directory_iterator(model_dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos) events = e.path();
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

// The issue asks for the report to be opened in a browser: Debian's chromium, headless.
TEST(CliTest, ReportRendersInHeadlessChromium) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "no /usr/bin/chromium for the render check";
  std::string dir = TempDir("chromium");
  WriteCsv(dir + "/d.csv");
  std::string job = dir + "/job.toml";
  Write(job, Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv"));
  ASSERT_EQ(Loom("train " + job + " --evaluate --max-steps 50").code, 0);
  std::string html_path = dir + "/report.html";
  ASSERT_EQ(Loom("report " + dir + "/model -o " + html_path).code, 0);
  Result dom;
  std::string cmd = "/usr/bin/chromium --headless --no-sandbox --disable-gpu --dump-dom file://" +
                    html_path + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) dom.output.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_CONTAINS(dom.output, "<svg");
  EXPECT_CONTAINS(dom.output, "class=\"series\"");
}

TEST(CliTest, InspectTFRecordCountsCorruptRecords) {
  std::string dir = TempDir("records");
  std::string path = dir + "/data.tfrecord";
  {
    auto writer = loom::RecordWriter::Open(loom::Env::Default(), path, {});
    for (int i = 0; i < 5; ++i) {
      loom::proto::Example example;
      auto& f = (*example.mutable_features()->mutable_feature())["label"];
      f.mutable_int64_list()->add_value(i);
      writer->WriteRecord(example.SerializeAsString());
    }
    writer->Close();
  }
  Result r = Loom("inspect " + path + " -n 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "records: 5");
  EXPECT_CONTAINS(r.output, "label");
  EXPECT_CONTAINS(r.output, "int64[1] [1]");
  EXPECT_CONTAINS(r.output, "corrupt records skipped: 0");
  // Flip one payload byte of the third record: its data CRC fails.
  std::string bytes = Read(path);
  size_t record_size = bytes.size() / 5;
  bytes[2 * record_size + 14] ^= 0x55;
  std::ofstream(path, std::ios::binary) << bytes;
  r = Loom("inspect " + path);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "records: 4");
  EXPECT_CONTAINS(r.output, "corrupt records skipped: 1");
  EXPECT_CONTAINS(r.output, "corrupt record after offset " + std::to_string(2 * record_size));
}

TEST(CliTest, InspectSharedTestdata) {
  std::string root = LOOM_SHARED_TESTDATA;
  if (!fs::exists(root + "/tfevents")) GTEST_SKIP() << "no shared testdata at " << root;
  Result r = Loom("inspect " + root + "/tfevents/lingvo_events.out.tfevents.test");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "bleu/dev");
  r = Loom("inspect " + root + "/tfevents/tfx_estimator_model_dir");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "model.ckpt-1000");
  r = Loom("inspect " + root + "/safetensors/f.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "F32");
  EXPECT_CONTAINS(r.output, "[6]");
  r = Loom("inspect " + root + "/tfrecord/tfx_penguin_eval_data_tfrecord-00000-of-00001.gz");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "culmen_depth_mm");
  EXPECT_CONTAINS(r.output, "(gzip)");
  r = Loom("inspect " + root + "/tfrecord/tfx_tfjs_next_page_data.tfrecord.gz");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "records: 100");
}

}  // namespace
