// Runs the built `loom` binary (LOOM_CLI_PATH) and checks its output and exit codes: help,
// bad paths, and one job through train, evaluate, predict, export, inspect and report.
// The job file's errors and features are job_cli_test.cc's, training's failures and
// signals train_cli_test.cc's (one cli_test binary).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "loom/cli/cli_test_util.h"
#include "loom/io/proto/graph.pb.h"

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

}  // namespace
