#ifndef LOOM_LOOM_H_
#define LOOM_LOOM_H_

// Everything a user program needs, in one include. Each header below documents its part;
// docs/ has the guided tour.
#include "loom/autodiff/gradients.h"
#include "loom/data/dataset.h"
#include "loom/data/file_sources.h"
#include "loom/estimator/canned.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/feature_column.h"
#include "loom/estimator/initializers.h"
#include "loom/estimator/input_fn.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/estimator/metrics.h"
#include "loom/estimator/train_and_evaluate.h"
#include "loom/graph/graph_def.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/train/adagrad.h"
#include "loom/train/adam.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/ftrl.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/learning_rate.h"
#include "loom/train/momentum.h"
#include "loom/train/monitored_session.h"
#include "loom/train/rmsprop.h"
#include "loom/train/saver.h"

#endif  // LOOM_LOOM_H_
