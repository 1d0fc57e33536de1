// `loom inspect PATH...`: what a file is (sniff.h: from its bytes) and what it holds, for a
// checkpoint, model directory, SavedModel, event file, TFRecord file, npy / IDX array,
// ONNX model or graph file. Each kind is read with the io/ or train/ reader for it; damage
// is an error (a non-zero exit) after what could be read is shown. Several paths, or a
// directory of data files, are inspected one after another under a "==> PATH <==" line;
// a damaged one is reported and the others are still inspected.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/cli/commands.h"
#include "loom/cli/inspect_internal.h"
#include "loom/cli/sniff.h"
#include "loom/estimator/saved_model.h"
#include "loom/estimator/tf_checkpoints.h"
#include "loom/io/idx.h"
#include "loom/io/npy.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/safetensors.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/train/saver.h"

namespace loom::cli {
namespace {

void InspectCheckpoint(Env* env, const std::string& path) {
  SafetensorsIndex index = ReadSafetensorsIndex(env, path);
  std::vector<train::CheckpointEntry> vars = train::ListVariables(env, path);
  std::optional<int64_t> step;
  for (const auto& [k, v] : index.metadata) {
    if (k == "global_step") {
      char* end = nullptr;
      const long long parsed = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0')
        throw DataLoss("checkpoint '", path, "': metadata global_step '", v, "' is not an integer");
      step = parsed;
    }
  }
  const bool loom_checkpoint =
      step || std::any_of(vars.begin(), vars.end(), [](const train::CheckpointEntry& v) {
        return v.name == "global_step" || v.is_iterator_state;
      });
  std::printf("%s %s (%llu bytes, %zu tensors)\n",
              loom_checkpoint ? "Loom checkpoint" : "safetensors file", path.c_str(),
              static_cast<unsigned long long>(index.file_size), vars.size());
  int64_t params = 0;
  for (const auto& v : vars) {
    std::printf("  %-48s %-4s %s%s\n", v.name.c_str(), v.file_dtype.c_str(),
                v.shape.ToString().c_str(),
                v.is_iterator_state  ? "  (input position)"
                : v.is_random_stream ? "  (random stream)"
                                     : "");
    if (!v.is_iterator_state && !v.is_random_stream && v.shape.rank() >= 0) {
      params += v.shape.num_elements();
    }
    if (!step && v.name == "global_step") {
      Tensor t = train::LoadVariable(env, path, v.name);
      step = t.dtype() == kInt64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
    }
  }
  std::printf("parameters: %lld\n", static_cast<long long>(params));
  if (step) std::printf("global step: %lld\n", static_cast<long long>(*step));
  for (const auto& [k, v] : index.metadata) {
    if (k != "global_step") std::printf("metadata %s: %.200s\n", k.c_str(), v.c_str());
  }
}

void InspectModelDir(Env* env, const std::string& dir) {
  std::printf("model directory %s\n", dir.c_str());
  auto state = train::ReadCheckpointState(env, dir);
  if (!state) {
    std::printf("no 'checkpoint' state file\n");
  } else {
    std::printf("checkpoints (%zu, newest last):\n", state->all_model_checkpoint_paths.size());
    for (const auto& p : state->all_model_checkpoint_paths) {
      bool exists = env->FileExists(train::CheckpointFilePath(p)) || IsTfCheckpoint(env, p);
      std::printf("  %s%s\n", p.c_str(), exists ? "" : "  (missing)");
    }
    std::printf("latest: %s\n", state->model_checkpoint_path.c_str());
  }
  for (const std::string& name : env->GetChildren(dir)) {
    std::string path = JoinPath(dir, name);
    if (name.find("tfevents") != std::string::npos) std::printf("event file: %s\n", path.c_str());
    if (env->IsDirectory(path) && name.starts_with("eval"))
      std::printf("eval directory: %s\n", path.c_str());
  }
  if (auto latest = train::LatestValidCheckpoint(env, dir)) {
    std::printf("\n");
    InspectCheckpoint(env, train::CheckpointFilePath(*latest));
  } else if (auto tf = LatestTfCheckpoint(env, dir)) {
    std::printf("\n");
    InspectTFCheckpointIndex(env, *tf);
  }
}

void InspectGraph(Env* env, const std::string& path, const proto::GraphDef& def) {
  std::map<std::string, int> ops;
  std::set<std::string> consumed;
  for (const auto& node : def.node()) {
    ++ops[node.op()];
    for (std::string in : node.input()) {
      if (!in.empty() && in[0] == '^') in = in.substr(1);
      consumed.insert(in.substr(0, in.find(':')));
    }
  }
  std::printf("graph %s\nnodes: %d\nops:\n", path.c_str(), def.node_size());
  std::vector<std::pair<int, std::string>> sorted;
  sorted.reserve(ops.size());
  for (const auto& [op, n] : ops) sorted.push_back({-n, op});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [n, op] : sorted) std::printf("  %-32s %d\n", op.c_str(), -n);
  // TF1 control flow: conds (Switch / Merge) import; while-loop frames do not.
  std::vector<std::string> conds, loops;
  for (const char* op : {"Switch", "RefSwitch", "Merge", "RefMerge"}) {
    if (ops.count(op)) conds.push_back(StrCat(op, " x", ops.at(op)));
  }
  for (const char* op :
       {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "LoopCond"}) {
    if (ops.count(op)) loops.push_back(StrCat(op, " x", ops.at(op)));
  }
  if (!conds.empty()) {
    std::printf("TF1 conds: %s (dead-branch semantics; loom predict runs them)\n",
                StrJoin(conds, ", ").c_str());
  }
  if (!loops.empty()) {
    std::printf("TF1 while loop frames: %s (loom predict cannot import these)\n",
                StrJoin(loops, ", ").c_str());
  }
  std::printf("inputs:\n");
  for (const auto& node : def.node()) {
    if (node.op() == "Placeholder" || node.op() == "IteratorGetNext") {
      std::printf("  %s (%s)\n", node.name().c_str(), node.op().c_str());
    } else if (node.op() == "PlaceholderWithDefault") {
      std::printf("  %s (PlaceholderWithDefault: optional, has a default)\n", node.name().c_str());
    }
  }
  std::printf("outputs (consumed by no node):\n");
  int listed = 0;
  // A TF1 cond's pivots and predicate copy (cond/switch_t, switch_f, pred_id) often have
  // no consumer, but are bookkeeping, not results.
  auto cond_bookkeeping = [](const proto::NodeDef& node) {
    return node.op() == "Identity" &&
           (node.name().ends_with("/switch_t") || node.name().ends_with("/switch_f") ||
            node.name().ends_with("/pred_id"));
  };
  for (const auto& node : def.node()) {
    if (consumed.count(node.name()) || node.op() == "NoOp" || node.op() == "Const" ||
        cond_bookkeeping(node)) {
      continue;
    }
    if (++listed > 20) {
      std::printf("  ...\n");
      break;
    }
    std::printf("  %s (%s)\n", node.name().c_str(), node.op().c_str());
  }
}

// Reads `path` as a GraphDef when it parses as one with named nodes.
std::optional<proto::GraphDef> TryGraph(Env* env, const std::string& path) {
  if (env->GetFileSize(path) > (1u << 30)) return std::nullopt;
  proto::GraphDef def;
  std::string bytes = ReadFileToString(env, path);
  if (!def.ParseFromString(bytes) || def.node_size() == 0) return std::nullopt;
  for (const auto& n : def.node()) {
    if (n.name().empty() || n.op().empty()) return std::nullopt;
  }
  return def;
}

proto::GraphDef ReadGraph(Env* env, const std::string& path) {
  auto def = TryGraph(env, path);
  if (!def) {
    throw DataLoss("'", path, "' (", env->GetFileSize(path), " bytes) is not a GraphDef (a ",
                   "binary protobuf with named nodes): it is truncated, corrupt or of another ",
                   "format");
  }
  return *def;
}

// The node of a tensor or input name: "dense/MatMul:0" and "^init" -> the node's name.
std::string NodeOf(std::string name) {
  if (!name.empty() && name[0] == '^') name = name.substr(1);
  return name.substr(0, name.find(':'));
}

// A GraphDef cut at a node boundary still parses: every input and every signature tensor
// must name a node that is there.
void CheckSavedModelGraph(Env* env, const std::string& dir, const proto::GraphDef& def) {
  std::set<std::string> nodes;
  for (const auto& node : def.node()) nodes.insert(node.name());
  const std::string graph = JoinPath(dir, "graph.pb");
  for (const auto& node : def.node()) {
    for (const std::string& in : node.input()) {
      if (!nodes.count(NodeOf(in)))
        throw DataLoss("'", graph, "' is damaged: node '", node.name(), "' reads '", in,
                       "', which is not in the graph (truncated or corrupt)");
    }
  }
  const std::string json_path = JoinPath(dir, "saved_model.json");
  if (!env->FileExists(json_path)) throw DataLoss("SavedModel '", dir, "' has no saved_model.json");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(ReadFileToString(env, json_path));
  } catch (const nlohmann::json::exception& e) {
    throw DataLoss("'", json_path, "' is not valid JSON (", e.what(), ")");
  }
  if (!doc.contains("signatures") || !doc["signatures"].is_object())
    throw DataLoss("'", json_path, "' has no signatures");
  std::printf("signatures:\n");
  for (const auto& [name, sig] : doc["signatures"].items()) {
    std::printf("  %s\n", name.c_str());
    for (const char* side : {"inputs", "outputs"}) {
      if (!sig.contains(side) || !sig[side].is_object()) continue;
      for (const auto& [key, info] : sig[side].items()) {
        const std::string tensor = info.value("name", "");
        std::printf("    %-7s %-24s %s\n", side, key.c_str(), tensor.c_str());
        if (!nodes.count(NodeOf(tensor)))
          throw DataLoss("'", graph, "' is damaged: signature '", name, "' ", side, " '", key,
                         "' is tensor '", tensor, "', whose node is not in the graph ",
                         "(truncated or corrupt)");
      }
    }
  }
}

void InspectSavedModel(Env* env, const std::string& dir) {
  std::printf("SavedModel %s\n", dir.c_str());
  CheckSavedModelFiles(env, dir);
  std::string graph = JoinPath(dir, kSavedModelGraph);
  const proto::GraphDef def = ReadGraph(env, graph);
  InspectGraph(env, graph, def);
  CheckSavedModelGraph(env, dir, def);
  InspectCheckpoint(env, JoinPath(dir, kSavedModelVariables));
}

// Numpy's element size from the dtype string ("<f4" -> 4), 0 when it has none.
uint64_t NpyItemSize(const std::string& descr) {
  size_t digits = descr.find_first_of("0123456789");
  return digits == std::string::npos ? 0 : std::stoull(descr.substr(digits));
}

void InspectNpy(Env* env, const std::string& path) {
  NpyHeader header = ReadNpyHeader(env, path);
  std::printf("npy array %s (format %d.%d)\ndtype: %s%s\nshape: %s\n", path.c_str(),
              header.major_version, header.minor_version, header.descr.c_str(),
              header.fortran_order ? " (Fortran order)" : "", header.shape.ToString().c_str());
  const uint64_t size = env->GetFileSize(path);
  const uint64_t want = header.data_offset + NpyItemSize(header.descr) *
                                                 static_cast<uint64_t>(header.shape.num_elements());
  if (size != want) {
    throw DataLoss("'", path, "' is damaged: the header promises ", want - header.data_offset,
                   " data bytes after offset ", header.data_offset, " but the file has ",
                   size < header.data_offset ? 0 : size - header.data_offset,
                   size < want ? " (it is truncated)" : " (trailing bytes)");
  }
}

void InspectIdx(Env* env, const std::string& path, const SniffedFile& sniffed) {
  Tensor t = ReadIdx(env, path);  // DataLoss naming the file when it is damaged
  std::printf("%s %s\ndtype: %s\nshape: %s\n", sniffed.description.c_str(), path.c_str(),
              DTypeName(t.dtype()).data(), t.shape().ToString().c_str());
}

// The kinds --kind accepts, and "auto".
const std::vector<std::string> kKinds = {"auto",  "checkpoint", "events", "tfrecord",
                                         "graph", "npy",        "idx",    "onnx"};

Compression CompressionFlag(Env* env, const std::string& path, const std::string& flag) {
  if (flag == "auto") return SniffCompression(env, path);
  return ParseCompression(flag);
}

// Whether `dir` is (or is becoming) an Estimator model directory: a checkpoint state
// file, a checkpoint, an event file or an eval directory. A directory holding none of
// these is a directory of data files, each inspected on its own.
bool IsModelDir(Env* env, const std::string& dir) {
  if (env->FileExists(JoinPath(dir, "checkpoint"))) return true;
  for (const std::string& name : env->GetChildren(dir)) {
    const std::string path = JoinPath(dir, name);
    if (name.find("tfevents") != std::string::npos || name.starts_with("model.ckpt")) return true;
    if (name.starts_with("eval") && env->IsDirectory(path)) return true;
  }
  return false;
}

void InspectOne(const std::string& path, const std::string& kind, const std::string& compression,
                int show);

// Inspects each path under a "==> PATH <==" line; an error is printed and the next path
// inspected. Throws (a non-zero exit) when any of them failed, naming how many.
void InspectEach(const std::vector<std::string>& paths, const std::string& kind,
                 const std::string& compression, int show) {
  std::vector<std::string> failed;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::printf("%s==> %s <==\n", i == 0 ? "" : "\n", paths[i].c_str());
    try {
      InspectOne(paths[i], kind, compression, show);
    } catch (const Error& e) {
      std::fflush(stdout);  // the error follows what was shown of this path
      std::fprintf(stderr, "loom: error: %s\n", e.what());
      std::fflush(stderr);
      failed.push_back(paths[i]);
    }
  }
  std::fflush(stdout);
  if (failed.empty()) return;
  std::string names;
  for (const std::string& p : failed) names += (names.empty() ? "'" : ", '") + p + "'";
  throw DataLoss(failed.size(), " of ", paths.size(),
                 " paths could not be inspected (errors above): ", names);
}

// The regular files of a directory of data files, sorted; subdirectories are named, not
// entered (name one to inspect it).
void InspectDataDir(Env* env, const std::string& dir, const std::string& kind,
                    const std::string& compression, int show) {
  std::vector<std::string> children = env->GetChildren(dir);
  std::sort(children.begin(), children.end());
  std::vector<std::string> files;
  for (const std::string& name : children) {
    const std::string path = JoinPath(dir, name);
    if (env->IsDirectory(path)) {
      std::printf("directory %s: not entered (name it to inspect it)\n", path.c_str());
    } else {
      files.push_back(path);
    }
  }
  if (files.empty()) {
    throw NotFound("'", dir, "' holds no files, no checkpoint and no event file: nothing to ",
                   "inspect");
  }
  std::printf("directory %s: %zu file(s)\n\n", dir.c_str(), files.size());
  InspectEach(files, kind, compression, show);
}

void InspectOne(const std::string& path, const std::string& kind, const std::string& compression,
                int show) {
  Env* env = Env::Default();
  if (!env->FileExists(path)) {
    // A TF checkpoint prefix ("model.ckpt-1000") names no file of its own.
    if (IsTfCheckpoint(env, path)) return InspectTFCheckpointIndex(env, path);
    throw NotFound("'", path, "' does not exist");
  }
  if (env->IsDirectory(path)) {
    if (env->FileExists(JoinPath(path, "saved_model.json"))) return InspectSavedModel(env, path);
    if (env->FileExists(JoinPath(path, "saved_model.pb"))) return InspectTFSavedModel(env, path);
    if (env->FileExists(JoinPath(path, "saved_model.pbtxt")))
      throw Unimplemented("'", path,
                          "' is a TensorFlow SavedModel in text form (saved_model.pbtxt), ",
                          "not readable by loom inspect; loom reads saved_model.pb");
    if (!IsModelDir(env, path)) return InspectDataDir(env, path, kind, compression, show);
    return InspectModelDir(env, path);
  }
  if (kind != "auto") {
    const Compression c = CompressionFlag(env, path, compression);
    if (kind == "checkpoint") return InspectCheckpoint(env, path);
    if (kind == "events") return InspectEvents(env, path, c);
    if (kind == "tfrecord") return InspectRecords(env, path, c, show);
    if (kind == "npy") return InspectNpy(env, path);
    if (kind == "idx") return InspectIdx(env, path, {FileKind::kIdx, c, "IDX array"});
    if (kind == "onnx") return InspectOnnx(env, path);
    return InspectGraph(env, path, ReadGraph(env, path));
  }
  const SniffedFile sniffed = SniffFile(env, path);
  const Compression c = compression == "auto" ? sniffed.compression : ParseCompression(compression);
  switch (sniffed.kind) {
    case FileKind::kSafetensors:
      return InspectCheckpoint(env, path);
    case FileKind::kEvents:
      return InspectEvents(env, path, c);
    case FileKind::kTFRecord:
      return InspectRecords(env, path, c, show);
    case FileKind::kNpy:
      return InspectNpy(env, path);
    case FileKind::kIdx:
      return InspectIdx(env, path, sniffed);
    case FileKind::kGraphDef:
      return InspectGraph(env, path, ReadGraph(env, path));
    case FileKind::kTFCheckpointIndex:
      return InspectTFCheckpointIndex(env, path);
    case FileKind::kTFCheckpointData:
      throw Unimplemented("'", path, "' is a ", sniffed.description, ": raw tensor bytes that ",
                          "only its .index locates; inspect the .index file beside it");
    case FileKind::kTFSavedModel:
      return InspectTFSavedModel(env, Dirname(path).empty() ? "." : Dirname(path));
    case FileKind::kOnnx:
      return InspectOnnx(env, path);
    case FileKind::kUnknown:
      break;
  }
  // A name that says TFRecord (or an explicit compression) gets the record reader, which
  // says where the framing breaks; anything else is unknown.
  const std::string base = Basename(path);
  if (base.find("tfrecord") != std::string::npos || compression != "auto")
    return InspectRecords(env, path, c, show);
  throw InvalidArgument(
      "cannot tell what '", path, "' is: its bytes are ", sniffed.description,
      " (loom inspect reads safetensors checkpoints, TFRecord files (none, ",
      "gzip or zlib), event files, npy, IDX, ONNX and GraphDef files); force one ", "with --kind");
}

void Inspect(const std::vector<std::string>& paths, const std::string& kind,
             const std::string& compression, int show) {
  if (paths.size() == 1) return InspectOne(paths[0], kind, compression, show);
  InspectEach(paths, kind, compression, show);
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    std::string kind = "auto";
    std::string compression = "auto";
    int show = 3;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "say what a file is and show what it holds: a checkpoint (.safetensors), model "
      "directory, SavedModel, event file, TFRecord file, npy / IDX array, ONNX model or "
      "graph file; exits non-zero when the file is damaged");
  cmd->add_option("PATH", flags->paths,
                  "files or directories, inspected one after another (a directory "
                  "without checkpoints or event files: each file in it)")
      ->required();
  cmd->add_option("--kind", flags->kind,
                  "auto (from the file's bytes), checkpoint, events, "
                  "tfrecord, graph, npy, idx or onnx")
      ->check(CLI::IsMember(kKinds))
      ->capture_default_str();
  cmd->add_option("--compression", flags->compression,
                  "TFRecord / event files: none, gzip, zlib or auto (from the magic bytes)")
      ->check(CLI::IsMember({"auto", "none", "gzip", "zlib"}, CLI::ignore_case))
      ->capture_default_str();
  cmd->add_option("--examples,-n", flags->show, "TFRecord: examples to print")
      ->capture_default_str();
  cmd->callback([flags] { Inspect(flags->paths, flags->kind, flags->compression, flags->show); });
}

}  // namespace loom::cli
