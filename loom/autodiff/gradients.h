#ifndef LOOM_AUTODIFF_GRADIENTS_H_
#define LOOM_AUTODIFF_GRADIENTS_H_

// Symbolic reverse-mode differentiation, TF1's tf.gradients: adds to the graph the ops
// that compute d(sum_i grad_ys[i] . ys[i]) / d(xs[j]). Per-op rules live with the ops
// (OpDef::grad); this file is only the walk: find the nodes between xs and ys, visit them
// in reverse topological order, sum the gradients that reach each output (AddN), and call
// each op's rule. Ops with no rule on the path fail with InvalidArgument naming the op
// and why (OpDef::no_gradient). An x that ys do not depend on gets an invalid Output
// (TF's None).
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

// grad_ys defaults to ones shaped like each y. New ops go under scope's "gradients" name
// scope.
std::vector<Output> Gradients(const Scope& scope, const std::vector<Output>& ys,
                              const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys = {});

// As Gradients, but a gradient that arrives only as IndexedSlices (from Gather over a
// variable) stays sparse, so an optimizer can update just those rows.
std::vector<GradOutput> GradientsWithSparse(const Scope& scope, const std::vector<Output>& ys,
                                            const std::vector<Output>& xs,
                                            const std::vector<Output>& grad_ys = {});

// As Gradients, for a loop's body (runtime/while_loop.h): only nodes with id >= first_id
// are differentiated through. An x below first_id (a value the loop captures) is a leaf:
// it gets the gradient that reaches it from inside, and nothing propagates past it.
std::vector<Output> GradientsWithinRegion(const Scope& scope, const std::vector<Output>& ys,
                                          const std::vector<Output>& xs,
                                          const std::vector<Output>& grad_ys, int first_id);

}  // namespace loom

#endif  // LOOM_AUTODIFF_GRADIENTS_H_
