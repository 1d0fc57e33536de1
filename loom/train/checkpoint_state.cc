// The checkpoint directory: TF's text state file, verification, discovery of the newest
// valid checkpoint, and reading any safetensors file's variable list.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>
#include <sstream>

#include "loom/base/crc32c.h"
#include "loom/base/logging.h"
#include "loom/io/safetensors.h"
#include "loom/ops/random.h"
#include "loom/train/saver.h"

namespace loom::train {
namespace {

constexpr std::string_view kExtension = ".safetensors";

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Parses a quoted text-proto string starting at s[0] == '"'.
std::string Unquote(std::string_view s, const std::string& file) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') {
    throw DataLoss("checkpoint state file '", file, "': expected a quoted string, got ", s);
  }
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 2 < s.size()) {
      c = s[++i];
      if (c == 'n')
        c = '\n';
      else if (c == 't')
        c = '\t';
      else if (c >= '0' && c <= '7') {  // octal escape, as protobuf writes non-ASCII bytes
        int v = 0;
        for (int k = 0; k < 3 && i + 1 < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i) {
          v = v * 8 + (s[i] - '0');
        }
        --i;
        c = static_cast<char>(v);
      }
    }
    out += c;
  }
  return out;
}

std::string Resolve(const std::string& dir, const std::string& p) {
  if (p.empty() || p.front() == '/') return p;
  return JoinPath(dir, p);
}

std::string Relativize(const std::string& dir, const std::string& p) {
  return Dirname(p) == dir ? Basename(p) : p;
}

DType DTypeFromFileName(const std::string& n) {
  if (n == "F32") return kFloat32;
  if (n == "F64") return kFloat64;
  if (n == "I32") return kInt32;
  if (n == "I64") return kInt64;
  if (n == "U8") return kUInt8;
  if (n == "BOOL") return kBool;
  return DType::kInvalid;
}

}  // namespace

int64_t CheckpointPathStep(const std::string& path) {
  const size_t dash = path.rfind('-');
  if (dash == std::string::npos || dash + 1 == path.size()) return -1;
  int64_t step = -1;
  auto [ptr, ec] = std::from_chars(path.data() + dash + 1, path.data() + path.size(), step);
  if (ec != std::errc() || ptr != path.data() + path.size() || step < 0) return -1;
  return step;
}

std::string CheckpointFilePath(const std::string& path) {
  if (path.ends_with(kExtension)) return path;
  return path + std::string(kExtension);
}

std::optional<CheckpointState> ReadCheckpointState(Env* env, const std::string& dir) {
  const std::string file = JoinPath(dir, kCheckpointStateFile);
  if (!env->FileExists(file)) return std::nullopt;
  std::istringstream in(ReadFileToString(env, file));
  CheckpointState state;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      throw DataLoss("checkpoint state file '", file, "' line ", line_no, ": no ':' in '", line,
                     "'");
    }
    std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    key.erase(0, key.find_first_not_of(" \t"));
    value.erase(0, value.find_first_not_of(" \t"));
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    try {
      if (key == "model_checkpoint_path") {
        state.model_checkpoint_path = Resolve(dir, Unquote(value, file));
      } else if (key == "all_model_checkpoint_paths") {
        state.all_model_checkpoint_paths.push_back(Resolve(dir, Unquote(value, file)));
      } else if (key == "all_model_checkpoint_timestamps") {
        state.all_model_checkpoint_timestamps.push_back(std::stod(value));
      } else if (key == "last_preserved_timestamp") {
        state.last_preserved_timestamp = std::stod(value);
      }  // Unknown fields are ignored, as protobuf's text parser would keep them.
    } catch (const std::logic_error&) {
      throw DataLoss("checkpoint state file '", file, "' line ", line_no, ": bad number '", value,
                     "'");
    }
  }
  return state;
}

void WriteCheckpointState(Env* env, const std::string& dir, const CheckpointState& state) {
  std::string text =
      "model_checkpoint_path: " + Quote(Relativize(dir, state.model_checkpoint_path)) + "\n";
  for (const auto& p : state.all_model_checkpoint_paths) {
    text += "all_model_checkpoint_paths: " + Quote(Relativize(dir, p)) + "\n";
  }
  char buf[64];
  for (double t : state.all_model_checkpoint_timestamps) {
    std::snprintf(buf, sizeof(buf), "%.17g", t);
    text += StrCat("all_model_checkpoint_timestamps: ", buf, "\n");
  }
  std::snprintf(buf, sizeof(buf), "%.17g", state.last_preserved_timestamp);
  text += StrCat("last_preserved_timestamp: ", buf, "\n");
  WriteFileAtomically(env, JoinPath(dir, kCheckpointStateFile), text);
}

std::optional<std::string> LatestCheckpoint(Env* env, const std::string& dir) {
  auto state = ReadCheckpointState(env, dir);
  if (!state || state->model_checkpoint_path.empty()) return std::nullopt;
  return state->model_checkpoint_path;
}

std::string CheckpointIndexChecksum(const std::vector<SafetensorsEntry>& entries,
                                    const std::map<std::string, std::string>& metadata) {
  std::string canonical;
  for (const SafetensorsEntry& e : entries) {
    canonical += StrCat(e.name, '\0', e.dtype, '\0');
    for (int64_t d : e.shape.dims()) canonical += StrCat(d, ',');
    canonical += StrCat('\0', e.begin, '\0', e.end, '\n');
  }
  for (const auto& [key, value] : metadata) {
    // Not wall_time: two identical runs write identical checkpoints but for it (the
    // reproducibility tests compare the bytes without it), and no restore reads it.
    if (key != "index_checksum" && key != "wall_time") {
      canonical += StrCat(key, '\0', value, '\n');
    }
  }
  char text[32];
  std::snprintf(text, sizeof(text), "crc32c:%08x",
                crc32c::Value(canonical.data(), canonical.size()));
  return text;
}

void VerifyCheckpoint(Env* env, const std::string& path) {
  const SafetensorsIndex index = ReadSafetensorsIndex(env, path);
  // The header: checkpoints from before this checksum (no key) are checked by the data
  // checksum and the header's structure only.
  if (auto h = index.metadata.find("index_checksum"); h != index.metadata.end()) {
    const std::string actual = CheckpointIndexChecksum(index.tensors, index.metadata);
    if (h->second != actual) {
      throw DataLoss("checkpoint '", path, "' is corrupt: its header (tensor names, shapes, ",
                     "offsets, metadata) has ", actual, ", the header says ", h->second);
    }
  }
  const uint64_t data_start = 8 + index.header_length;
  const uint64_t data_bytes = index.file_size - data_start;
  auto it = index.metadata.find("data_bytes");
  if (it != index.metadata.end() && it->second != std::to_string(data_bytes)) {
    throw DataLoss("checkpoint '", path, "' is truncated or padded: its header says ", it->second,
                   " data bytes, the file has ", data_bytes);
  }
  it = index.metadata.find("checksum");
  if (it == index.metadata.end()) return;  // a plain safetensors file: nothing to check
  if (!it->second.starts_with("crc32c:")) {
    throw DataLoss("checkpoint '", path, "': unknown checksum kind '", it->second, "'");
  }
  auto region = env->MapFile(path);
  const uint32_t crc = crc32c::Value(region->data() + data_start, data_bytes);
  char actual[16];
  std::snprintf(actual, sizeof(actual), "%08x", crc);
  if (it->second.substr(7) != actual) {
    throw DataLoss("checkpoint '", path, "' is corrupt: crc32c of its ", data_bytes,
                   " data bytes is ", actual, ", the header says ", it->second.substr(7));
  }
}

CheckpointScan ScanCheckpoints(Env* env, const std::string& dir) {
  CheckpointScan scan;
  if (!env->IsDirectory(dir)) return scan;
  std::vector<std::string> candidates;
  try {
    if (auto state = ReadCheckpointState(env, dir)) {
      if (!state->model_checkpoint_path.empty()) {
        candidates.push_back(state->model_checkpoint_path);
      }
      for (auto it = state->all_model_checkpoint_paths.rbegin();
           it != state->all_model_checkpoint_paths.rend(); ++it) {
        candidates.push_back(*it);
      }
    }
  } catch (const Error& e) {
    scan.state_file_error = e.message();
  }
  // Files the state file may not list yet (a crash between the checkpoint's rename and
  // the state file's) or no longer lists.
  for (const std::string& name : env->GetChildren(dir)) {
    if (!name.ends_with(kExtension)) continue;
    std::string stem = JoinPath(dir, name.substr(0, name.size() - kExtension.size()));
    if (CheckpointPathStep(stem) >= 0) candidates.push_back(stem);
  }
  // Newest step first; among equal steps the state file's order (it came first).
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const std::string& a, const std::string& b) {
                     return CheckpointPathStep(a) > CheckpointPathStep(b);
                   });
  std::set<std::string> seen;
  for (const std::string& c : candidates) {
    if (!seen.insert(c).second) continue;
    const std::string file = CheckpointFilePath(c);
    try {
      if (!env->FileExists(file)) throw NotFound("file does not exist");
      const SafetensorsIndex index = ReadSafetensorsIndex(env, file);
      auto format = index.metadata.find("format");
      if (format == index.metadata.end() || format->second != kCheckpointFormat) {
        continue;  // some other safetensors file, not a checkpoint: not a candidate
      }
      VerifyCheckpoint(env, file);
    } catch (const Error& e) {
      scan.invalid.push_back({.path = c, .reason = e.message()});
      continue;
    }
    scan.latest = c;
    break;
  }
  return scan;
}

void LogCheckpointScan(const CheckpointScan& scan, const std::string& dir) {
  if (!scan.state_file_error.empty()) {
    LOOM_LOG(WARNING) << "ignoring the checkpoint state file in '" << dir
                      << "': " << scan.state_file_error;
  }
  for (const auto& s : scan.invalid) {
    LOOM_LOG(WARNING) << "skipped invalid checkpoint '" << CheckpointFilePath(s.path) << "' ("
                      << s.reason << "); "
                      << (scan.latest
                              ? StrCat("restoring '", CheckpointFilePath(*scan.latest), "' instead")
                              : StrCat("no valid checkpoint in '", dir, "'"));
  }
}

std::optional<std::string> LatestValidCheckpoint(Env* env, const std::string& dir) {
  CheckpointScan scan = ScanCheckpoints(env, dir);
  LogCheckpointScan(scan, dir);
  return scan.latest;
}

std::vector<CheckpointEntry> ListVariables(Env* env, const std::string& path) {
  std::string file = path;
  if (!env->FileExists(file) && env->FileExists(CheckpointFilePath(path))) {
    file = CheckpointFilePath(path);
  }
  const SafetensorsIndex index = ReadSafetensorsIndex(env, file);
  std::vector<CheckpointEntry> out;
  for (const auto& e : index.tensors) {
    out.push_back({.name = e.name,
                   .dtype = DTypeFromFileName(e.dtype),
                   .file_dtype = e.dtype,
                   .shape = e.shape,
                   .is_iterator_state = e.name.starts_with(kIteratorStatePrefix),
                   .is_random_stream = e.name.starts_with(kRandomStreamPrefix)});
  }
  return out;
}

Tensor LoadVariable(Env* env, const std::string& path, const std::string& name) {
  std::string file = path;
  if (!env->FileExists(file)) file = CheckpointFilePath(path);
  return SafetensorsReader::Open(env, file)->Get(name).Clone();
}

}  // namespace loom::train
