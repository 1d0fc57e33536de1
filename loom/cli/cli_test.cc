// Runs the built `loom` binary (LOOM_CLI_PATH) and checks its output and exit codes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loom/base/env.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/record_writer.h"
#include "loom/io/safetensors.h"

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

std::string EventsFile(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos) return e.path();
  return "";
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

// Appended to a copy of the report (the report itself has no scripts): for every plotted
// series, the browser's own geometry and layout must show a line: a path that spans steps
// (bounding box wider than 0), has length, and is laid out inside its chart with a stroke.
// The result goes into the DOM that --dump-dom prints.
constexpr const char* kRenderCheck = R"(<script>
(() => {
  const paths = [...document.querySelectorAll('path.series')];
  const missing = [];
  for (const p of paths) {
    const box = p.getBBox(), onscreen = p.getBoundingClientRect();
    const chart = p.ownerSVGElement.getBoundingClientRect();
    const drawn = box.width > 0 && p.getTotalLength() > 0 && onscreen.width > 0 &&
        onscreen.left >= chart.left && onscreen.right <= chart.right &&
        onscreen.top >= chart.top && onscreen.bottom <= chart.bottom &&
        getComputedStyle(p).stroke !== 'none';
    if (!drawn) missing.push(p.dataset.run + ' of ' + p.ownerSVGElement.querySelector('text').textContent);
  }
  const out = document.createElement('pre');
  out.id = 'render-check';
  out.textContent = `series drawn: ${paths.length - missing.length} of ${paths.length}; ` +
                    `not drawn: [${missing.join(', ')}]`;
  document.body.appendChild(out);
})();
</script>
)";

// The issue asks for the report to be opened in a browser: Debian's chromium, headless,
// which lays the page out and runs kRenderCheck against the plotted series.
TEST(CliTest, ReportRendersInHeadlessChromium) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) {
    GTEST_SKIP() << chromium << " is absent (Debian package chromium, installed by "
                 << "scripts/install-deps.sh): the report render check did not run";
  }
  std::string dir = TempDir("chromium");
  WriteCsv(dir + "/d.csv");
  std::string job = dir + "/job.toml";
  Write(job, Replace(Replace(kJob, "MODEL_DIR", dir + "/model"), "DATA", dir + "/d.csv"));
  // Two evaluations, so every series (train and eval) has at least two points to join.
  Result r = Loom("train " + job + " --evaluate --max-steps 30");
  ASSERT_EQ(r.code, 0) << r.output;
  r = Loom("train " + job + " --evaluate --max-steps 60");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string html_path = dir + "/report.html";
  r = Loom("report " + dir + "/model -o " + html_path);
  ASSERT_EQ(r.code, 0) << r.output;
  std::string html = Read(html_path);
  ASSERT_EQ(html.find("<script"), std::string::npos);
  size_t series = 0;
  for (size_t at = html.find("<path class=\"series\""); at != std::string::npos;
       at = html.find("<path class=\"series\"", at + 1))
    ++series;
  ASSERT_GE(series, 4u) << html;  // loss and accuracy at least, train and eval

  size_t body_end = html.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  std::string checked_path = dir + "/report_checked.html";
  Write(checked_path, html.substr(0, body_end) + kRenderCheck + html.substr(body_end));
  // timeout(1) kills chromium's process group should it hang; output goes to files, so a
  // helper process that outlives it cannot block the test on a pipe.
  std::string dom_path = dir + "/dom.html", log_path = dir + "/chromium.log";
  std::string cmd = "timeout --kill-after=10 90 " + chromium +
                    " --headless --no-sandbox --disable-gpu --user-data-dir=" + dir +
                    "/chromium-profile --dump-dom file://" + checked_path + " >" + dom_path +
                    " 2>" + log_path + " </dev/null";
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  ASSERT_NE(code, 124) << "chromium did not finish within 90 s:\n" << Read(log_path);
  ASSERT_EQ(code, 0) << "chromium failed:\n" << Read(log_path);
  std::string dom = Read(dom_path);
  EXPECT_CONTAINS(dom, "<svg");
  EXPECT_CONTAINS(dom, "series drawn: " + std::to_string(series) + " of " + std::to_string(series) +
                           "; not drawn: []");
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
