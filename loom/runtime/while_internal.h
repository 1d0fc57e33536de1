#ifndef LOOM_RUNTIME_WHILE_INTERNAL_H_
#define LOOM_RUNTIME_WHILE_INTERNAL_H_

// The While ops' attribute keys and the per-Session state their kernels share
// (while_loop.cc builds, while_kernel.cc runs).
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/runtime/region_executor.h"
#include "loom/runtime/while_loop.h"

namespace loom::while_internal {

// LoopVar.
inline constexpr Attr<DType> kDType{"dtype"};
inline constexpr Attr<Shape> kShape{"shape"};
inline constexpr Attr<int64_t> kIndex{"index"};
// While: inputs are the n initial values, then the captures; outputs the n final values.
inline constexpr Attr<std::vector<std::string>> kLoopVars{"loop_vars"};  // LoopVar nodes
inline constexpr Attr<std::string> kCond{"cond"};                        // "node:index"
inline constexpr Attr<std::vector<std::string>> kBody{"body"};           // "node:index" each
inline constexpr Attr<std::vector<Shape>> kShapeInvariants{"shape_invariants"};
inline constexpr Attr<int64_t> kMaximumIterations{"maximum_iterations"};
inline constexpr Attr<int64_t> kParallelIterations{"parallel_iterations"};
inline constexpr Attr<bool> kBackProp{"back_prop"};
// WhileGrad: inputs are the incoming gradients of the forward loop's floating loop
// variables, then the gradient region's captures; outputs the gradients of those loop
// variables' initial values, then of the floating captures.
inline constexpr Attr<std::string> kForward{"forward"};                  // the While node
inline constexpr Attr<std::vector<std::string>> kGradVars{"grad_vars"};  // LoopVar nodes
inline constexpr Attr<std::vector<int64_t>> kFloatVars{"float_vars"};
inline constexpr Attr<std::vector<int64_t>> kFloatCaptures{"float_captures"};
inline constexpr Attr<std::vector<std::string>> kVarGrads{"var_grads"};  // "" where none
inline constexpr Attr<std::vector<std::string>> kCaptureGrads{"capture_grads"};
// Per floating capture, "" where its gradient is dense, else the row indices of a
// gradient that is rows (capture_grads then names the rows: a Gather of the capture, as
// an RNN reads its input at step t), added into the sum row by row: O(rows) per
// iteration rather than a dense [n, ...] gradient per iteration.
inline constexpr Attr<std::vector<std::string>> kCaptureGradIndices{"capture_grad_indices"};
inline constexpr Attr<std::vector<DType>> kOutputTypes{"output_types"};
inline constexpr Attr<std::vector<Shape>> kOutputShapes{"output_shapes"};

// One forward run's values: per iteration, every slot of the body's plan.
struct Tape {
  std::vector<std::vector<Tensor>> iterations;
  std::vector<Tensor> captures;
};

struct ForwardPlans {
  RegionPlan cond;
  RegionPlan body;
};

struct GradPlan {
  const Node* forward = nullptr;
  std::shared_ptr<const ForwardPlans> forward_plans;
  RegionPlan plan;
  int num_grad_vars = 0;
  int num_captures = 0;
};

// The plans of the Session's loops (built on first use) and the tapes of their recent
// forward runs, keyed by (While node name, step id). A forward run keeps its tape while
// a WhileGrad of it exists in the graph; the WhileGrad takes it. At most kTapesPerLoop
// tapes per loop are kept (the newest): a step whose gradient never runs cannot pile up.
class WhileState : public Resource {
 public:
  static constexpr size_t kTapesPerLoop = 4;

  std::shared_ptr<const ForwardPlans> Forward(const Node& node);
  std::shared_ptr<const GradPlan> Grad(const Node& node);
  // Whether the graph holds a WhileGrad of `node` (rescanned when the graph grew).
  bool HasGradient(const Node& node);
  void PutTape(const std::string& loop, int64_t step, std::shared_ptr<Tape> tape);
  // nullptr when absent.
  std::shared_ptr<Tape> TakeTape(const std::string& loop, int64_t step);

 private:
  Mutex mu_;
  std::map<const Node*, std::shared_ptr<const ForwardPlans>> forward_ LOOM_GUARDED_BY(mu_);
  std::map<const Node*, std::shared_ptr<const GradPlan>> grad_ LOOM_GUARDED_BY(mu_);
  std::map<const Node*, std::pair<int, bool>> has_grad_ LOOM_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int64_t>, std::shared_ptr<Tape>> tapes_ LOOM_GUARDED_BY(mu_);
};

void WhileKernel(KernelContext& c);
void WhileGradKernel(KernelContext& c);

}  // namespace loom::while_internal

#endif  // LOOM_RUNTIME_WHILE_INTERNAL_H_
