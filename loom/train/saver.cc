#include "loom/train/saver.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>

#include "loom/base/crc32c.h"
#include "loom/base/logging.h"
#include "loom/data/iterator_ops.h"
#include "loom/io/safetensors.h"
#include "loom/ops/random.h"

namespace loom::train {
namespace {

double NowSecs(Env* env) { return env->NowMicros() * 1e-6; }

std::vector<std::string> DefaultVarList(const Graph& graph) {
  std::vector<std::string> names;
  for (Node* n : graph.Variables()) {
    if (!n->attrs().GetOr<bool>("local", false)) names.push_back(n->name());
  }
  return names;
}

// Deletes temporary files left by a writer that died mid-save (SIGKILL, power loss).
// Only this process saves into the directory right now, so none of them is live.
void DeleteStaleTemps(Env* env, const std::string& dir) {
  if (dir.empty() || !env->IsDirectory(dir)) return;
  for (const std::string& name : env->GetChildren(dir)) {
    if (name.find(".safetensors.tmp.") != std::string::npos ||
        name.starts_with(StrCat(kCheckpointStateFile, ".tmp."))) {
      try {
        env->DeleteFile(JoinPath(dir, name));
      } catch (const Error& e) {
        LOOM_LOG(WARNING) << "cannot delete stale temporary file: " << e.what();
      }
    }
  }
}

}  // namespace

Saver::Saver(const Graph& graph, SaverOptions options)
    : graph_(graph), options_(std::move(options)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  var_list_ = options_.var_list.empty() ? DefaultVarList(graph) : options_.var_list;
  for (const std::string& name : var_list_) {
    Node* node = graph.FindNode(name);
    if (node == nullptr || node->op_def().role != OpRole::kVariable) {
      throw InvalidArgument("Saver: '", name, "' is not a variable of the graph");
    }
  }
  next_keep_time_ = NowSecs(options_.env) + options_.keep_checkpoint_every_n_hours * 3600;
}

std::string Saver::Save(Session& session, const std::string& prefix,
                        std::optional<int64_t> global_step) {
  Env* env = options_.env;
  std::string path = global_step ? StrCat(prefix, "-", *global_step) : prefix;
  const std::string file = CheckpointFilePath(path);
  const std::string dir = Dirname(path);
  if (!dir.empty()) {
    if (saved_into_.count(dir) && !env->IsDirectory(dir)) {
      // Deleted under a running job (a cleanup script, a user): recreating it would hide
      // that every earlier checkpoint and summary is gone.
      throw FailedPrecondition("checkpoint directory '", dir, "' was deleted (or replaced by ",
                               "a file) after this job saved checkpoints into it; the ",
                               "checkpoints and summaries written there are gone. Restore it ",
                               "from a backup, or start again into a new directory");
    }
    env->CreateDirs(dir);
  }
  if (!stale_temp_cleaned_) {
    DeleteStaleTemps(env, dir);
    stale_temp_cleaned_ = true;
    // After a restart, keep managing the checkpoints the previous process left, so
    // max_to_keep still bounds the directory.
    AdoptExistingCheckpoints(prefix);
  }
  if (invalid_.count(path)) {
    if (env->FileExists(file)) SetAsideInvalid(file);
    invalid_.erase(path);  // the name now belongs to the checkpoint written below
  }

  // 1. Views of the current buffers: no copy, even for a multi-GiB model.
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : var_list_) {
    auto* var = session.resources().Lookup<VariableResource>(name);
    Tensor value = var != nullptr ? var->Read() : Tensor();
    if (!value.defined()) {
      throw FailedPrecondition("Saver: variable '", name, "' is not initialized; run the ",
                               "initializer or restore a checkpoint before saving");
    }
    tensors.emplace_back(name, std::move(value));
  }
  if (options_.save_iterators) {
    for (const std::string& name : data::IteratorResourceNames(session.resources())) {
      auto* it = session.resources().Lookup<data::IteratorResource>(name);
      if (it == nullptr) continue;
      // Restored but not re-created yet (a one-shot iterator before its first GetNext):
      // the restored position is kept, or a save now would lose it.
      std::optional<std::string> state = it->SaveOrPending();
      if (!state) continue;
      const std::string& blob = *state;
      Tensor t(kUInt8, Shape{static_cast<int64_t>(blob.size())});
      if (!blob.empty()) std::memcpy(t.raw_data(), blob.data(), blob.size());
      tensors.emplace_back(name, std::move(t));
    }
  }
  if (options_.save_random_streams) {
    for (auto& entry : SaveRandomStreams(session.resources())) tensors.push_back(std::move(entry));
  }
  // 2. The checksum of the data section, in file order.
  uint32_t crc = 0;
  uint64_t data_bytes = 0;
  for (size_t i : SafetensorsDataOrder(tensors)) {
    const Tensor& t = tensors[i].second;
    crc = crc32c::Extend(crc, static_cast<const char*>(t.raw_data()), t.TotalBytes());
    data_bytes += t.TotalBytes();
  }
  char crc_text[32];
  std::snprintf(crc_text, sizeof(crc_text), "crc32c:%08x", crc);
  const double now = NowSecs(env);
  std::map<std::string, std::string> metadata = {
      {"format", std::string(kCheckpointFormat)},
      {"checksum", crc_text},
      {"data_bytes", std::to_string(data_bytes)},
      {"wall_time", std::to_string(now)},
  };
  if (global_step) metadata["global_step"] = std::to_string(*global_step);
  metadata["index_checksum"] = CheckpointIndexChecksum(SafetensorsLayout(tensors), metadata);
  // 3. Temp file, fsync, rename, directory fsync.
  WriteSafetensors(env, file, tensors, metadata, {.atomic = true});
  tensors.clear();  // drop the views so the next in-place update needs no copy

  // 4-5. The state file, then pruning.
  saved_into_.insert(dir);
  RecordAndPrune(path, now);
  return path;
}

void Saver::RecordAndPrune(const std::string& path, double time) {
  Env* env = options_.env;
  std::erase_if(last_checkpoints_, [&](const Kept& k) { return k.path == path; });
  last_checkpoints_.push_back({path, time});
  std::vector<Kept> to_delete;
  if (options_.max_to_keep > 0) {
    while (static_cast<int>(last_checkpoints_.size()) > options_.max_to_keep) {
      to_delete.push_back(last_checkpoints_.front());
      last_checkpoints_.erase(last_checkpoints_.begin());
    }
  }
  std::vector<Kept> doomed;
  for (const Kept& k : to_delete) {
    if (invalid_.count(k.path)) continue;  // never delete a file that failed to load
    if (k.time > next_keep_time_) {        // kept forever, out of the managed list (TF's rule)
      next_keep_time_ += options_.keep_checkpoint_every_n_hours * 3600;
      continue;
    }
    doomed.push_back(k);
  }
  // The state file names the survivors before any file is deleted (TF's order): a crash in
  // between leaves an old checkpoint that no state file lists (adopted and pruned by the
  // next Save when keep_checkpoint_every_n_hours is off, else left on disk), never a state
  // file that names a deleted checkpoint, which TensorBoard and TF's
  // get_checkpoint_state() would trust.
  CheckpointState state;
  state.model_checkpoint_path = path;
  for (const Kept& k : last_checkpoints_) {
    state.all_model_checkpoint_paths.push_back(k.path);
    state.all_model_checkpoint_timestamps.push_back(k.time);
  }
  state.last_preserved_timestamp = next_keep_time_ - options_.keep_checkpoint_every_n_hours * 3600;
  try {
    WriteCheckpointState(env, Dirname(path), state);
  } catch (...) {
    // Nothing deleted: the doomed stay managed, so the next Save prunes them.
    last_checkpoints_.insert(last_checkpoints_.begin(), doomed.begin(), doomed.end());
    throw;
  }
  for (const Kept& k : doomed) {
    const std::string file = CheckpointFilePath(k.path);
    try {
      if (env->FileExists(file)) env->DeleteFile(file);
    } catch (const Error& e) {
      LOOM_LOG(WARNING) << "cannot delete old checkpoint '" << file << "': " << e.what();
    }
  }
}

void Saver::AdoptExistingCheckpoints(const std::string& prefix) {
  Env* env = options_.env;
  const std::string dir = Dirname(prefix);
  if (dir.empty() || !env->IsDirectory(dir)) return;
  std::optional<CheckpointState> state;
  bool state_readable = true;
  try {
    state = ReadCheckpointState(env, dir);
  } catch (const Error& e) {
    state_readable = false;
    LOOM_LOG(WARNING) << "ignoring the checkpoint state file in '" << dir << "': " << e.what();
  }
  // Already managed (RestoreLatest adopted the list) first, then the state file's list.
  std::vector<std::string> paths = last_checkpoints();
  std::set<std::string> known(paths.begin(), paths.end());
  int64_t newest_listed = -1;
  if (state) {
    for (const std::string& p : state->all_model_checkpoint_paths) {
      newest_listed = std::max(newest_listed, CheckpointPathStep(p));
      if (known.insert(p).second) paths.push_back(p);
    }
  }
  RecoverLastCheckpoints(paths);  // keeps the state file's timestamps
  // Files of this prefix the list lacks. Unlisted older files may be ones that
  // keep_checkpoint_every_n_hours preserved on purpose; they are adopted only when that
  // is off or when the state file (which knew) is gone.
  const bool state_gone = !state_readable || !state;
  const bool nothing_preserved = options_.keep_checkpoint_every_n_hours >= 10000;
  const std::string base = Basename(prefix);
  std::vector<Kept> found;
  for (const std::string& name : env->GetChildren(dir)) {
    if (!name.starts_with(base + "-") || !name.ends_with(".safetensors")) continue;
    const std::string path = JoinPath(dir, name.substr(0, name.size() - 12));
    const int64_t step = CheckpointPathStep(path);
    if (step < 0 || known.count(path) || invalid_.count(path)) continue;
    if (!state_gone && !nothing_preserved && step <= newest_listed) continue;
    double time = NowSecs(env);
    try {
      const SafetensorsIndex index = ReadSafetensorsIndex(env, CheckpointFilePath(path));
      auto format = index.metadata.find("format");
      if (format == index.metadata.end() || format->second != kCheckpointFormat) continue;
      auto wall = index.metadata.find("wall_time");
      if (wall != index.metadata.end()) time = std::stod(wall->second);
    } catch (const std::exception&) {
      continue;  // a file whose header does not parse is not ours to delete
    }
    found.push_back({path, time});
  }
  if (found.empty()) return;
  LOOM_LOG(INFO) << "managing " << found.size() << " checkpoint file(s) in '" << dir
                 << "' that the state file " << (state_gone ? "(missing) " : "")
                 << "does not list, for keep_checkpoint_max";
  last_checkpoints_.insert(last_checkpoints_.end(), found.begin(), found.end());
  std::stable_sort(last_checkpoints_.begin(), last_checkpoints_.end(),
                   [](const Kept& a, const Kept& b) {
                     return CheckpointPathStep(a.path) < CheckpointPathStep(b.path);
                   });
}

void Saver::SetAsideInvalid(const std::string& file) {
  Env* env = options_.env;
  std::string aside = file + ".invalid";
  for (int n = 1; env->FileExists(aside); ++n) aside = StrCat(file, ".invalid.", n);
  env->RenameFile(file, aside);
  LOOM_LOG(WARNING) << "checkpoint '" << file << "' failed to load earlier and is about to be "
                    << "overwritten: moved it to '" << aside << "'";
}

std::vector<std::string> Saver::last_checkpoints() const {
  std::vector<std::string> out;
  for (const Kept& k : last_checkpoints_) out.push_back(k.path);
  return out;
}

void Saver::RecoverLastCheckpoints(const std::vector<std::string>& paths) {
  std::optional<CheckpointState> state;
  if (!paths.empty()) {
    try {
      state = ReadCheckpointState(options_.env, Dirname(paths.front()));
    } catch (const Error&) {
    }
  }
  last_checkpoints_.clear();
  for (const std::string& p : paths) {
    if (invalid_.count(p) || !options_.env->FileExists(CheckpointFilePath(p))) continue;
    double time = NowSecs(options_.env);
    if (state) {
      const auto& all = state->all_model_checkpoint_paths;
      for (size_t i = 0; i < all.size() && i < state->all_model_checkpoint_timestamps.size(); ++i) {
        if (all[i] == p) time = state->all_model_checkpoint_timestamps[i];
      }
    }
    last_checkpoints_.push_back({p, time});
  }
  if (state && state->last_preserved_timestamp > 0) {
    next_keep_time_ =
        state->last_preserved_timestamp + options_.keep_checkpoint_every_n_hours * 3600;
  }
}

void Saver::Restore(Session& session, const std::string& path, const RestoreOptions& options) {
  Env* env = options_.env;
  const std::string file = CheckpointFilePath(path);
  VerifyCheckpoint(env, file);
  auto reader = SafetensorsReader::Open(env, file);
  const std::vector<std::string>& names = options.variables.empty() ? var_list_ : options.variables;
  auto key_of = [&](const std::string& name) -> const std::string& {
    auto mapped = options.name_map.find(name);
    return mapped == options.name_map.end() ? name : mapped->second;
  };
  // Every variable is looked up before any is written, so that a checkpoint of another
  // model (a model_dir shared by two) is reported as such and restores nothing.
  if (!options.allow_missing) {
    std::vector<std::string> missing;
    for (const std::string& name : names) {
      if (!reader->Contains(key_of(name))) missing.push_back(name);
    }
    if (!missing.empty()) {
      std::set<std::string> keys;
      for (const std::string& name : names) keys.insert(key_of(name));
      std::vector<std::string> foreign;
      for (const std::string& tensor : reader->names()) {
        if (!tensor.starts_with(kIteratorStatePrefix) && !tensor.starts_with(kRandomStreamPrefix) &&
            !keys.count(tensor))
          foreign.push_back(tensor);
      }
      const std::string& key = key_of(missing.front());
      std::string message = StrCat("checkpoint '", file, "' has no tensor '", key,
                                   "' for variable '", missing.front(), "'");
      if (missing.size() > 1)
        message += StrCat(" (", missing.size(), " of the ", names.size(),
                          " variables restored are missing)");
      // Only a full restore (a model_dir's checkpoint) can tell that it is another model's.
      if (options.variables.empty() && !foreign.empty()) {
        message += StrCat("; it holds ", foreign.size(), " tensor(s) that are no variable of ",
                          "this graph, e.g. '", foreign.front(), "'. It is probably the ",
                          "checkpoint of another model: train this one in another model_dir ",
                          "(or warm-start it from that checkpoint, WarmStartSettings)");
      }
      throw NotFound(message, "; if a variable was saved under another name, map it to that name ",
                     "(RestoreOptions::name_map; in a warm start, ",
                     "WarmStartSettings::var_name_to_prev_var_name)");
    }
  }
  for (const std::string& name : names) {
    const std::string& key = key_of(name);
    if (!reader->Contains(key)) continue;  // allow_missing
    Node* node = graph_.FindNode(name);
    if (node == nullptr || node->op_def().role != OpRole::kVariable) {
      throw NotFound("restoring '", file, "': no variable named '", name, "' in the graph");
    }
    Tensor value = reader->Get(key);
    if (value.dtype() != node->output_dtype(0) ||
        !value.shape().IsCompatibleWith(node->output_shape(0))) {
      throw InvalidArgument("restoring '", file, "': tensor '", key, "' is ",
                            DTypeName(value.dtype()), value.shape(), " but variable '", name,
                            "' is ", DTypeName(node->output_dtype(0)), node->output_shape(0),
                            options.variables.empty()
                                ? ": the checkpoint is of a model with other layer sizes or "
                                  "inputs; train this model in another model_dir (or warm-start "
                                  "only the variables that match, "
                                  "WarmStartSettings::vars_to_warm_start)"
                                : "");
    }
    // Copy out of the read-only mapping, so the file may be deleted or replaced later.
    if (!value.buffer()->owned() || !value.BufferIsUnique()) value = value.Clone();
    session.resources().LookupOrCreate<VariableResource>(name)->Write(std::move(value));
  }
  if (options.restore_iterators && options_.save_iterators) {
    for (const std::string& name : reader->names()) {
      if (!name.starts_with(kIteratorStatePrefix)) continue;
      Tensor blob = reader->Get(name);
      auto* it = session.resources().LookupOrCreate<data::IteratorResource>(name);
      it->Restore(std::string_view(static_cast<const char*>(blob.raw_data()), blob.TotalBytes()),
                  file);
    }
  }
  if (options.restore_random_streams && options_.save_random_streams) {
    for (const std::string& name : reader->names()) {
      if (!name.starts_with(kRandomStreamPrefix)) continue;
      RestoreRandomStream(session.resources(), graph_, name, reader->Get(name), file);
    }
  }
}

std::optional<std::string> Saver::RestoreLatest(Session& session, const std::string& dir,
                                                const RestoreOptions& options) {
  const CheckpointScan scan = ScanCheckpoints(options_.env, dir);
  LogCheckpointScan(scan, dir);
  for (const auto& bad : scan.invalid) invalid_.insert(bad.path);
  std::optional<std::string> latest = scan.latest;
  if (!latest) {
    if (scan.invalid.empty()) return std::nullopt;
    std::string files;
    for (const auto& bad : scan.invalid) {
      files += StrCat(files.empty() ? "" : "; ", "'", CheckpointFilePath(bad.path), "' (",
                      bad.reason, ")");
    }
    if (!options.start_over_if_all_corrupt) {
      throw DataLoss("no checkpoint in '", dir, "' can be restored, though ",
                     scan.invalid.size() == 1 ? "one exists" : "some exist", ": ", files,
                     ". Training would start over from step 0 and lose them. Restore the "
                     "files from a backup or move them out of the directory, or start over "
                     "explicitly (RunConfig::start_over_if_checkpoints_corrupt, `loom train "
                     "--start-over-if-corrupt`), which keeps the files");
    }
    LOOM_LOG(WARNING) << "starting over from step 0 in '" << dir
                      << "' as asked: no checkpoint there is valid (" << files
                      << "); the invalid files are kept";
    return std::nullopt;
  }
  LOOM_LOG(INFO) << "Restoring parameters from " << *latest;
  Restore(session, *latest, options);
  std::vector<std::string> managed;
  try {
    if (auto state = ReadCheckpointState(options_.env, dir)) {
      managed = state->all_model_checkpoint_paths;
    }
  } catch (const Error&) {
  }
  if (std::find(managed.begin(), managed.end(), *latest) == managed.end())
    managed.push_back(*latest);
  RecoverLastCheckpoints(managed);
  return latest;
}

}  // namespace loom::train
