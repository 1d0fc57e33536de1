#ifndef LOOM_TRAIN_SAVER_H_
#define LOOM_TRAIN_SAVER_H_

// Saver: TF1's tf.train.Saver plus its checkpoint manager. A checkpoint is ONE safetensors
// file, "<prefix>-<global step>.safetensors" (docs/formats/checkpoint.md), holding
//   - every saved variable under its node name (default: all non-local variables, which
//     includes "global_step" and optimizer slots),
//   - the state of every initialized input iterator in the Session, as a uint8 tensor
//     named after its resource ("iterator:<shared name>"),
//   - the stream of every random op (Dropout, RandomNormal, ...) the Session ran, as an
//     int64 [2] {runs, key} named "random:<node name>" (ops/random.h), so a resumed run
//     draws the numbers the uninterrupted one would have,
//   - metadata: format, global step, wall time, and a crc32c of the data section.
// Beside it, TF's text `checkpoint` state file lists the newest checkpoint and those kept.
//
// Saving, in order:
//   1. a view of each variable's current buffer is taken (no copy: the next in-place
//      update copies-on-write instead), and each iterator's state is serialized;
//   2. the crc32c of the data section is computed over those buffers;
//   3. the file is streamed to "<path>.tmp.<pid>.<n>" straight from the buffers (so a
//      checkpoint above 2 GiB needs no second copy), fsynced, renamed over the final
//      name, and the directory is fsynced;
//   4. the `checkpoint` state file is rewritten the same crash-safe way, listing the new
//      checkpoint and the kept ones;
//   5. checkpoints beyond max_to_keep are deleted, oldest first, except one per
//      keep_checkpoint_every_n_hours and any that failed to load. At the first Save
//      into a directory the Saver adopts the state file's list, plus the
//      "<prefix>-<step>.safetensors" files the list lacks when the state file is missing
//      or unreadable, when they are newer than every listed one, or when
//      keep_checkpoint_every_n_hours is off (>= 10000): so a deleted state file does not
//      leave old checkpoints unpruned forever.
// A crash at any point leaves the previous checkpoint intact, and never a state file that
// names a deleted checkpoint (at worst it misses the newest, which restoring finds by its
// name, or an old checkpoint is left unlisted, which the next Save prunes unless
// keep_checkpoint_every_n_hours is on).
//
// Restoring the latest (RestoreLatest / LatestValidCheckpoint) takes the newest checkpoint
// in the directory whose header parses and whose checksum matches, logging a warning
// that names every newer one it skipped and why. Variables are copied out of the mapped
// file; iterator states are handed to the Session's IteratorResources (applied when the
// iterator is next created, so restore-then-initialize resumes mid-epoch).
// Thread-safety: a Saver is used from one thread at a time; Save runs between steps.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/io/safetensors.h"
#include "loom/runtime/session.h"

namespace loom::train {

inline constexpr std::string_view kCheckpointFormat = "loom-checkpoint-1";
// Tensor names with this prefix hold iterator states, not variables.
inline constexpr std::string_view kIteratorStatePrefix = "iterator:";
// The state file's name in a checkpoint directory.
inline constexpr std::string_view kCheckpointStateFile = "checkpoint";

struct SaverOptions {
  // Names of the variables to save and restore. Default: empty, meaning every variable of
  // the graph that is not local (VariableOptions::local), at the time of construction.
  std::vector<std::string> var_list;
  // Save and restore the Session's input iterator states. Default: true.
  bool save_iterators = true;
  // Save and restore the Session's random-op streams. Default: true.
  bool save_random_streams = true;
  // Checkpoints to keep; older ones are deleted. 0 keeps all. Default: 5.
  int max_to_keep = 5;
  // Additionally keep one checkpoint per this many hours forever. Default: 10000 (never).
  double keep_checkpoint_every_n_hours = 10000;
  // Default: Env::Default().
  Env* env = nullptr;
};

struct RestoreOptions {
  // Restore only these variables (by graph name). Default: empty, the Saver's var_list.
  std::vector<std::string> variables;
  // Graph variable name -> name in the checkpoint, for variables saved under another
  // name (TF's init_from_checkpoint assignment map). Default: identity.
  std::map<std::string, std::string> name_map;
  // Skip variables absent from the checkpoint instead of throwing NotFound. Default: false.
  bool allow_missing = false;
  // Restore iterator states found in the checkpoint. Default: true.
  bool restore_iterators = true;
  // Restore the streams of this graph's random ops found in the checkpoint (streams of
  // ops the graph lacks are ignored). Default: true.
  bool restore_random_streams = true;
  // RestoreLatest only: when the directory has checkpoints (named by the state file or
  // present as files) and none is valid, restore nothing and return nullopt (the caller
  // starts over from its initial values) instead of throwing DataLoss. The invalid files
  // are kept either way. Default: false.
  bool start_over_if_all_corrupt = false;
};

class Saver {
 public:
  Saver(const Graph& graph, SaverOptions options = {});
  Saver(const Saver&) = delete;
  Saver& operator=(const Saver&) = delete;

  // Writes "<prefix>-<global_step>.safetensors" ("<prefix>.safetensors" without a step)
  // and updates the state file in prefix's directory (created if needed). Returns the
  // checkpoint path without the extension ("dir/model.ckpt-100"), TF's save path.
  // Throws what the Env throws; the previous checkpoint then stays valid. A directory this
  // Saver saved into before that is gone now (deleted mid-training): FailedPrecondition
  // naming it, instead of silently recreating it.
  std::string Save(Session& session, const std::string& prefix,
                   std::optional<int64_t> global_step = std::nullopt);

  // Restores from a checkpoint path (with or without ".safetensors"). Verifies the
  // checksum first (DataLoss naming the file). Throws NotFound for a variable the file
  // lacks, InvalidArgument for a dtype or shape mismatch, naming both.
  void Restore(Session& session, const std::string& path, const RestoreOptions& options = {});

  // Restores the newest valid checkpoint in `dir` and adopts the state file's list for
  // max_to_keep. Returns its path, or nullopt when the directory has no checkpoint
  // (nothing is restored). Logs one warning per newer checkpoint it skipped as invalid.
  // When there are checkpoints but none is valid: DataLoss naming each file and why,
  // unless options.start_over_if_all_corrupt. The invalid files are remembered: this
  // Saver never prunes them, and a Save to the same path first renames the old file to
  // "<file>.invalid" (".invalid.N" if taken), so a file that failed to load is never
  // deleted or overwritten.
  std::optional<std::string> RestoreLatest(Session& session, const std::string& dir,
                                           const RestoreOptions& options = {});

  // Checkpoint paths (without extension) this Saver manages, oldest first.
  std::vector<std::string> last_checkpoints() const;
  // Adopts existing checkpoints (e.g. from the state file after a restart) so
  // max_to_keep counts them. Missing files and those RestoreLatest found invalid are
  // ignored.
  void RecoverLastCheckpoints(const std::vector<std::string>& paths);
  const std::vector<std::string>& var_list() const { return var_list_; }

 private:
  void RecordAndPrune(const std::string& path, double time);
  // At the first Save into a directory: the state file's list plus the checkpoint files
  // of this prefix that it does not list (see Save).
  void AdoptExistingCheckpoints(const std::string& prefix);
  // Renames an invalid checkpoint about to be overwritten to "<file>.invalid[.N]".
  void SetAsideInvalid(const std::string& file);

  const Graph& graph_;
  SaverOptions options_;
  std::vector<std::string> var_list_;
  struct Kept {
    std::string path;
    double time;
  };
  std::vector<Kept> last_checkpoints_;
  double next_keep_time_;
  bool stale_temp_cleaned_ = false;
  std::set<std::string> invalid_;     // checkpoints (without extension) that failed to load
  std::set<std::string> saved_into_;  // directories a Save of this Saver wrote into
};

// TF's CheckpointState, the text `checkpoint` file:
//   model_checkpoint_path: "model.ckpt-200"
//   all_model_checkpoint_paths: "model.ckpt-100"
//   all_model_checkpoint_paths: "model.ckpt-200"
//   all_model_checkpoint_timestamps: 1700000000.5
//   all_model_checkpoint_timestamps: 1700000100.5
//   last_preserved_timestamp: 1700000000
// Paths inside the directory are written relative to it; reading returns them joined
// with the directory.
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;
  std::vector<double> all_model_checkpoint_timestamps;
  double last_preserved_timestamp = 0;
};
// nullopt when the file is absent; DataLoss when it does not parse.
std::optional<CheckpointState> ReadCheckpointState(Env* env, const std::string& dir);
// Writes it atomically (temp file, fsync, rename, directory fsync).
void WriteCheckpointState(Env* env, const std::string& dir, const CheckpointState& state);

// What a look for the newest valid checkpoint in `dir` found, considering the state
// file's list and every "*-<step>.safetensors" file, newest step first.
struct CheckpointScan {
  // The newest checkpoint (path without extension) whose header parses and whose
  // checksum matches; nullopt when there is none.
  std::optional<std::string> latest;
  // Every candidate newer than `latest` (all of them when latest is nullopt) that failed,
  // newest first: a file the state file names but that does not exist, a bad header, a
  // checksum mismatch.
  struct Invalid {
    std::string path;    // without extension
    std::string reason;  // the error's message
  };
  std::vector<Invalid> invalid;
  // Set when the state file exists but does not parse (it is then ignored).
  std::string state_file_error;
};
// Logs nothing; reads every candidate's header and verifies checksums until one is valid.
CheckpointScan ScanCheckpoints(Env* env, const std::string& dir);
// One warning per invalid checkpoint (and for a state file that does not parse).
void LogCheckpointScan(const CheckpointScan& scan, const std::string& dir);
// ScanCheckpoints(env, dir).latest, after LogCheckpointScan.
std::optional<std::string> LatestValidCheckpoint(Env* env, const std::string& dir);
// The state file's model_checkpoint_path, unverified (TF's tf.train.latest_checkpoint).
std::optional<std::string> LatestCheckpoint(Env* env, const std::string& dir);

// Throws DataLoss naming the file when the header is malformed or the checksum (when the
// file carries one) does not match.
void VerifyCheckpoint(Env* env, const std::string& path);

// The `index_checksum` a checkpoint's header carries: "crc32c:" + 8 hex digits of CRC-32C
// over every tensor entry (name, file dtype, shape, data offsets, in data order) and every
// other metadata entry but wall_time, so a damaged header (a tensor's name, shape or offsets) fails
// VerifyCheckpoint instead of restoring the wrong bytes under a valid data checksum.
std::string CheckpointIndexChecksum(const std::vector<SafetensorsEntry>& entries,
                                    const std::map<std::string, std::string>& metadata);

// One tensor of a checkpoint, from its header only.
struct CheckpointEntry {
  std::string name;
  DType dtype = DType::kInvalid;  // kInvalid for file dtypes Loom lacks (e.g. "U16")
  std::string file_dtype;         // "F32", "I64", ...
  Shape shape;
  bool is_iterator_state = false;
  bool is_random_stream = false;  // "random:<node>", a random op's {runs, key}
};
// Lists any safetensors file's tensors in data order (TF's tf.train.list_variables).
std::vector<CheckpointEntry> ListVariables(Env* env, const std::string& path);
// One tensor's value (a copy), TF's tf.train.load_variable.
Tensor LoadVariable(Env* env, const std::string& path, const std::string& name);

// The step a checkpoint path names: "dir/model.ckpt-100" -> 100; -1 when the path does not
// end in "-<digits>" (or the number overflows int64).
int64_t CheckpointPathStep(const std::string& path);

// "dir/model.ckpt-100" -> "dir/model.ckpt-100.safetensors" (unchanged if it has it).
std::string CheckpointFilePath(const std::string& path);

}  // namespace loom::train

#endif  // LOOM_TRAIN_SAVER_H_
