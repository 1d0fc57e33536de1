// `loom inspect PATH`: what a checkpoint, model directory, event file, TFRecord file or
// graph file holds. Each kind is read with the io/ or train/ reader for it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/cli/commands.h"
#include "loom/io/event_file.h"
#include "loom/io/example.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/record_reader.h"
#include "loom/io/safetensors.h"
#include "loom/train/saver.h"

namespace loom::cli {
namespace {

std::string ShapeString(const Shape& shape) {
  std::string s = "[";
  for (int i = 0; i < shape.rank(); ++i) s += (i ? "," : "") + std::to_string(shape.dim(i));
  return s + "]";
}

void InspectCheckpoint(Env* env, const std::string& path) {
  SafetensorsIndex index = ReadSafetensorsIndex(env, path);
  std::vector<train::CheckpointEntry> vars = train::ListVariables(env, path);
  std::printf("checkpoint %s (%llu bytes, %zu tensors)\n", path.c_str(),
              static_cast<unsigned long long>(index.file_size), vars.size());
  std::optional<int64_t> step;
  for (const auto& [k, v] : index.metadata) {
    if (k == "global_step") step = std::stoll(v);
  }
  int64_t params = 0;
  for (const auto& v : vars) {
    std::printf("  %-48s %-4s %s%s\n", v.name.c_str(), v.file_dtype.c_str(),
                ShapeString(v.shape).c_str(),
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
      bool exists = env->FileExists(train::CheckpointFilePath(p));
      std::printf("  %s%s\n", p.c_str(), exists ? "" : "  (missing)");
    }
    std::printf("latest: %s\n", state->model_checkpoint_path.c_str());
  }
  for (const std::string& name : env->GetChildren(dir)) {
    std::string path = JoinPath(dir, name);
    if (name.find("tfevents") != std::string::npos) std::printf("event file: %s\n", path.c_str());
    if (env->IsDirectory(path) && name.starts_with("eval")) std::printf("eval directory: %s\n", path.c_str());
  }
  if (auto latest = train::LatestValidCheckpoint(env, dir)) {
    std::printf("\n");
    InspectCheckpoint(env, train::CheckpointFilePath(*latest));
  }
}

void InspectEvents(Env* env, const std::string& path) {
  auto reader = EventFileReader::Open(env, path, {.truncated_record_is_eof = true});
  struct TagInfo {
    int64_t count = 0;
    int64_t last_step = 0;
    std::optional<double> last_value;
  };
  std::map<std::string, TagInfo> tags;
  std::set<int64_t> steps;
  int64_t events = 0, graphs = 0;
  while (auto event = reader->Next()) {
    ++events;
    if (event->has_summary()) {
      steps.insert(event->step());
      for (const auto& value : event->summary().value()) {
        TagInfo& info = tags[value.tag()];
        ++info.count;
        info.last_step = event->step();
        if (auto v = ScalarValue(value)) info.last_value = *v;
      }
    }
    if (!event->graph_def().empty()) ++graphs;
  }
  std::printf("event file %s\n", path.c_str());
  std::printf("events: %lld, steps with summaries: %zu", static_cast<long long>(events), steps.size());
  if (!steps.empty())
    std::printf(" (%lld..%lld)", static_cast<long long>(*steps.begin()),
                static_cast<long long>(*steps.rbegin()));
  std::printf(", graphs: %lld\n", static_cast<long long>(graphs));
  std::printf("tags (%zu):\n", tags.size());
  for (const auto& [tag, info] : tags) {
    std::printf("  %-40s %6lld values, last at step %lld", tag.c_str(),
                static_cast<long long>(info.count), static_cast<long long>(info.last_step));
    if (info.last_value) std::printf(" = %.6g", *info.last_value);
    std::printf("\n");
  }
}

std::string FeatureString(const proto::Feature& f) {
  auto list = [](const auto& values, auto fmt) {
    std::string s = "[";
    int n = 0;
    for (const auto& v : values) {
      if (n == 8) { s += ", ..."; break; }
      s += (n++ ? ", " : "") + fmt(v);
    }
    return s + "]";
  };
  if (f.has_float_list())
    return "float[" + std::to_string(f.float_list().value_size()) + "] " +
           list(f.float_list().value(), [](float v) { char b[32]; std::snprintf(b, 32, "%g", v); return std::string(b); });
  if (f.has_int64_list())
    return "int64[" + std::to_string(f.int64_list().value_size()) + "] " +
           list(f.int64_list().value(), [](int64_t v) { return std::to_string(v); });
  if (f.has_bytes_list())
    return "bytes[" + std::to_string(f.bytes_list().value_size()) + "] " +
           list(f.bytes_list().value(), [](const std::string& v) {
             std::string s = v.substr(0, 40);
             for (char& c : s) if (c < 32 || c > 126) c = '.';
             return "\"" + s + (v.size() > 40 ? "...\"" : "\"");
           });
  return "empty";
}

void InspectRecords(Env* env, const std::string& path, int show) {
  RecordReaderOptions options{.skip_corrupt_records = true, .truncated_record_is_eof = true};
  if (path.ends_with(".gz")) options.compression = Compression::kGzip;
  auto reader = RecordReader::Open(env, path, options);
  std::string record;
  std::vector<uint64_t> corrupt_at;
  int64_t examples = 0, shown = 0;
  uint64_t bytes = 0;
  for (;;) {
    uint64_t at = reader->offset();
    uint64_t corrupt_before = reader->corrupt_records();
    if (!reader->ReadRecord(&record)) break;
    if (reader->corrupt_records() > corrupt_before) corrupt_at.push_back(at);
    bytes += record.size();
    proto::Example example;
    if (!example.ParseFromString(record) || example.features().feature().empty()) continue;
    ++examples;
    if (shown < show) {
      std::printf("record %lld (offset %llu): tf.train.Example\n",
                  static_cast<long long>(reader->records_read() - 1), static_cast<unsigned long long>(at));
      for (const auto& [name, f] : std::map(example.features().feature().begin(),
                                            example.features().feature().end())) {
        std::printf("  %-30s %s\n", name.c_str(), FeatureString(f).c_str());
      }
      ++shown;
    }
  }
  std::printf("TFRecord file %s%s\n", path.c_str(), options.compression == Compression::kGzip ? " (gzip)" : "");
  std::printf("records: %llu (%llu payload bytes), tf.train.Example: %lld\n",
              static_cast<unsigned long long>(reader->records_read()),
              static_cast<unsigned long long>(bytes), static_cast<long long>(examples));
  std::printf("corrupt records skipped: %llu\n", static_cast<unsigned long long>(reader->corrupt_records()));
  for (uint64_t at : corrupt_at) std::printf("  corrupt record after offset %llu\n", static_cast<unsigned long long>(at));
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
  for (const auto& [op, n] : ops) sorted.push_back({-n, op});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [n, op] : sorted) std::printf("  %-32s %d\n", op.c_str(), -n);
  std::printf("inputs:\n");
  for (const auto& node : def.node()) {
    if (node.op() == "Placeholder" || node.op() == "IteratorGetNext")
      std::printf("  %s (%s)\n", node.name().c_str(), node.op().c_str());
  }
  std::printf("outputs (consumed by no node):\n");
  int listed = 0;
  for (const auto& node : def.node()) {
    if (consumed.count(node.name()) || node.op() == "NoOp" || node.op() == "Const") continue;
    if (++listed > 20) { std::printf("  ...\n"); break; }
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

bool LooksLikeSafetensors(Env* env, const std::string& path) {
  try {
    ReadSafetensorsIndex(env, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void Inspect(const std::string& path, const std::string& kind, int show) {
  Env* env = Env::Default();
  if (!env->FileExists(path)) throw NotFound("'", path, "' does not exist");
  if (env->IsDirectory(path)) {
    std::string saved_graph = JoinPath(path, "graph.pb");
    if (env->FileExists(JoinPath(path, "saved_model.json")) && env->FileExists(saved_graph)) {
      std::printf("SavedModel %s\n", path.c_str());
      if (auto def = TryGraph(env, saved_graph)) InspectGraph(env, saved_graph, *def);
      std::string vars = JoinPath(path, "variables/variables.safetensors");
      if (env->FileExists(vars)) InspectCheckpoint(env, vars);
      return;
    }
    return InspectModelDir(env, path);
  }
  std::string base = Basename(path);
  std::string k = kind;
  if (k == "auto") {
    if (base.ends_with(".safetensors") || LooksLikeSafetensors(env, path)) k = "checkpoint";
    else if (base.find("tfevents") != std::string::npos) k = "events";
    else if (base.ends_with(".pb") || base.ends_with(".graph")) k = "graph";
    else if (base.find("tfrecord") != std::string::npos || base.ends_with(".gz")) k = "tfrecord";
    else if (TryGraph(env, path)) k = "graph";
    else k = "tfrecord";
  }
  if (k == "checkpoint") return InspectCheckpoint(env, path);
  if (k == "events") return InspectEvents(env, path);
  if (k == "tfrecord") return InspectRecords(env, path, show);
  auto def = TryGraph(env, path);
  if (!def) throw InvalidArgument("'", path, "' is not a GraphDef (binary protobuf with named nodes)");
  InspectGraph(env, path, *def);
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  struct Flags {
    std::string path;
    std::string kind = "auto";
    int show = 3;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "show what a checkpoint (.safetensors), model directory, SavedModel, event "
                 "file, TFRecord file or graph file holds");
  cmd->add_option("PATH", flags->path, "file or directory")->required();
  cmd->add_option("--kind", flags->kind, "auto, checkpoint, events, tfrecord or graph")
      ->check(CLI::IsMember({"auto", "checkpoint", "events", "tfrecord", "graph"}))
      ->capture_default_str();
  cmd->add_option("--examples,-n", flags->show, "TFRecord: examples to print")->capture_default_str();
  cmd->callback([flags] { Inspect(flags->path, flags->kind, flags->show); });
}

}  // namespace loom::cli
