#ifndef LOOM_TRAIN_SCAFFOLD_H_
#define LOOM_TRAIN_SCAFFOLD_H_

// Scaffold: TF1's tf.train.Scaffold, what a MonitoredSession needs to create, initialize
// and save a model. Leave a field empty to get the default, built by Finalize():
//   init_op        GlobalVariablesInitializer (runs only when no checkpoint is restored)
//   local_init_op  LocalVariablesInitializer  (runs after every restore or init)
//   summary_op     MergeAllSummaries, or none when the graph has no summary ops
//   saver          Saver over every non-local variable, with the iterator states
// Finalize() then finalizes the graph. Shared (std::shared_ptr) between the session
// creator and the hooks that save checkpoints and summaries. Not thread-safe.
#include <functional>
#include <memory>

#include "loom/train/saver.h"

namespace loom::train {

struct Scaffold {
  Operation init_op;
  // Feeds for init_op (e.g. the value of a placeholder-initialized variable).
  FeedList init_feeds;
  // Runs after init_op when no checkpoint was restored (TF's init_fn).
  std::function<void(Session&)> init_fn;
  Operation local_init_op;
  Output summary_op;
  std::shared_ptr<Saver> saver;
  // Options for the default Saver. Default: SaverOptions{} (max_to_keep 5).
  SaverOptions saver_options;

  // Fills the defaults above (once; later calls only re-finalize the graph).
  void Finalize(Graph& graph);
  bool finalized() const { return finalized_; }

 private:
  bool finalized_ = false;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_SCAFFOLD_H_
