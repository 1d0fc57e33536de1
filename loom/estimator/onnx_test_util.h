#ifndef LOOM_ESTIMATOR_ONNX_TEST_UTIL_H_
#define LOOM_ESTIMATOR_ONNX_TEST_UTIL_H_

// For the ONNX export tests (onnx_export_test.cc, loom/cli/onnx_cli_test.cc): run an ONNX
// file with ONNX Runtime (npm's onnxruntime-node, under LOOM_ONNXRUNTIME_NODE_DIR, which
// scripts/install-onnxruntime-node.sh fills) and check it with Debian's python3-onnx
// checker. A missing runtime or checker fails the test, naming what to install.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

#ifndef LOOM_ONNXRUNTIME_NODE_DIR
#error "LOOM_ONNXRUNTIME_NODE_DIR names the directory holding node_modules/onnxruntime-node"
#endif

namespace loom::onnx_testing {

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Runs `command` (stdout and stderr into `log`); returns its exit status and the log.
inline std::pair<int, std::string> Shell(const std::string& command, const std::string& log) {
  const int status = std::system((command + " >" + Quote(log) + " 2>&1").c_str());
  std::string text = Env::Default()->FileExists(log) ? ReadFileToString(Env::Default(), log) : "";
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

inline nlohmann::json ToJson(const Tensor& t) {
  nlohmann::json data = nlohmann::json::array();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    switch (t.dtype()) {
      case kFloat32:
        data.push_back(t.data<float>()[i]);
        break;
      case kFloat64:
        data.push_back(t.data<double>()[i]);
        break;
      case kInt32:
        data.push_back(t.data<int32_t>()[i]);
        break;
      case kInt64:
        data.push_back(t.data<int64_t>()[i]);
        break;
      case kUInt8:
        data.push_back(t.data<uint8_t>()[i]);
        break;
      case kBool:
        data.push_back(t.data<bool>()[i] ? 1 : 0);
        break;
      case kString:
        data.push_back(t.data<std::string>()[i]);
        break;
      default:
        ADD_FAILURE() << "no JSON for " << DTypeName(t.dtype());
    }
  }
  std::string dtype = t.dtype() == kFloat32   ? "float32"
                      : t.dtype() == kFloat64 ? "float64"
                      : t.dtype() == kInt32   ? "int32"
                      : t.dtype() == kInt64   ? "int64"
                      : t.dtype() == kUInt8   ? "uint8"
                      : t.dtype() == kBool    ? "bool"
                                              : "string";
  return {{"dtype", dtype}, {"dims", t.shape().dims()}, {"data", data}};
}

inline Tensor FromJson(const nlohmann::json& j) {
  const std::string dtype = j.at("dtype");
  Shape shape(j.at("dims").get<std::vector<int64_t>>());
  const nlohmann::json& data = j.at("data");
  DType t = dtype == "float32"   ? kFloat32
            : dtype == "float64" ? kFloat64
            : dtype == "int32"   ? kInt32
            : dtype == "int64"   ? kInt64
            : dtype == "uint8"   ? kUInt8
            : dtype == "bool"    ? kBool
                                 : kString;
  Tensor out = Tensor::Zeros(t, shape);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    switch (t) {
      case kFloat32:
        out.data<float>()[i] = data[i].get<float>();
        break;
      case kFloat64:
        out.data<double>()[i] = data[i].get<double>();
        break;
      case kInt32:
        out.data<int32_t>()[i] = data[i].get<int32_t>();
        break;
      case kInt64:
        out.data<int64_t>()[i] = data[i].get<int64_t>();
        break;
      case kUInt8:
        out.data<uint8_t>()[i] = data[i].get<uint8_t>();
        break;
      case kBool:
        out.data<bool>()[i] = data[i].get<bool>();
        break;
      default:
        out.data<std::string>()[i] = data[i].get<std::string>();
        break;
    }
  }
  return out;
}

// The model's outputs on `inputs` by ONNX Runtime; files go to `work_dir`. Empty (with a
// test failure naming the cause) when the runtime is missing or fails.
inline std::map<std::string, Tensor> RunOnnxRuntime(const std::string& model,
                                                    const std::map<std::string, Tensor>& inputs,
                                                    const std::string& work_dir) {
  const std::string modules = JoinPath(LOOM_ONNXRUNTIME_NODE_DIR, "node_modules");
  if (!Env::Default()->FileExists(JoinPath(modules, "onnxruntime-node/package.json"))) {
    ADD_FAILURE() << "ONNX Runtime for node is not installed in " << modules
                  << "; run scripts/install-onnxruntime-node.sh " << LOOM_ONNXRUNTIME_NODE_DIR
                  << " (scripts/install-deps.sh does; it needs the npm registry)";
    return {};
  }
  nlohmann::json in = nlohmann::json::object();
  for (const auto& [name, t] : inputs) in[name] = ToJson(t);
  const std::string in_path = JoinPath(work_dir, "ort_inputs.json");
  const std::string out_path = JoinPath(work_dir, "ort_outputs.json");
  WriteFileAtomically(Env::Default(), in_path, in.dump());
  const std::string script = std::string(LOOM_SOURCE_DIR) + "/loom/estimator/onnx_runtime_run.js";
  auto [status, log] = Shell("NODE_PATH=" + Quote(modules) + " node " + Quote(script) + " " +
                                 Quote(model) + " " + Quote(in_path) + " " + Quote(out_path),
                             JoinPath(work_dir, "ort.log"));
  if (status != 0) {
    ADD_FAILURE() << "ONNX Runtime failed on " << model << " (status " << status << "):\n" << log;
    return {};
  }
  std::map<std::string, Tensor> out;
  const std::string text = ReadFileToString(Env::Default(), out_path);
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    for (const auto& [name, t] : parsed.items()) out[name] = FromJson(t);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "cannot read ONNX Runtime's outputs " << out_path << ": " << e.what() << "\n"
                  << text.substr(0, 2000);
    return {};
  }
  return out;
}

// onnx.checker.check_model(path, full_check=True) of Debian's python3-onnx (with shape
// inference in strict mode; external data is read from beside the model).
inline void ExpectOnnxCheckerPasses(const std::string& model, const std::string& work_dir) {
  auto [status, log] = Shell(
      "/usr/bin/python3 -c 'import sys, onnx; onnx.checker.check_model(sys.argv[1], "
      "full_check=True)' " +
          Quote(model),
      JoinPath(work_dir, "checker.log"));
  EXPECT_EQ(status, 0) << "onnx.checker rejects " << model
                       << " (python3-onnx missing? scripts/install-deps.sh installs it):\n"
                       << log;
}

// Float tensors equal within `tolerance` (absolute), other dtypes exactly.
inline void ExpectNear(const Tensor& loom, const Tensor& ort, const std::string& what,
                       double tolerance = 1e-5) {
  ASSERT_EQ(loom.dtype(), ort.dtype()) << what;
  ASSERT_EQ(loom.NumElements(), ort.NumElements())
      << what << ": " << loom.shape() << " vs " << ort.shape();
  double worst = 0;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < loom.NumElements(); ++i) {
    switch (loom.dtype()) {
      case kFloat32:
        worst = std::max<double>(worst, std::abs(loom.data<float>()[i] - ort.data<float>()[i]));
        break;
      case kFloat64:
        worst = std::max(worst, std::abs(loom.data<double>()[i] - ort.data<double>()[i]));
        break;
      case kInt32:
        mismatches += loom.data<int32_t>()[i] != ort.data<int32_t>()[i];
        break;
      case kInt64:
        mismatches += loom.data<int64_t>()[i] != ort.data<int64_t>()[i];
        break;
      case kString:
        mismatches += loom.data<std::string>()[i] != ort.data<std::string>()[i];
        break;
      default:
        break;
    }
  }
  EXPECT_LE(worst, tolerance) << what << ": largest difference between Loom and ONNX Runtime";
  EXPECT_EQ(mismatches, 0) << what << ": elements that differ";
}

}  // namespace loom::onnx_testing

#endif  // LOOM_ESTIMATOR_ONNX_TEST_UTIL_H_
