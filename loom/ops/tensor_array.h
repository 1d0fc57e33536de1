#ifndef LOOM_OPS_TENSOR_ARRAY_H_
#define LOOM_OPS_TENSOR_ARRAY_H_

// TF1's TensorArray as values: the ops under the Python front end's tf.TensorArray
// (python/loom/compat/v1/_tensor_array.py), which threads them through tf.while_loop.
//
// A TensorArray of capacity n is two tensors: `data`, [n, element...] (or, before the
// first write, an empty placeholder: any tensor whose first dimension is not n, or n == 0),
// and `written`, an int64 [n] vector with 1 at every written index. A write returns new
// tensors, so the state can be a While loop variable and the ops have ordinary gradients.
// As in TF 1.15, each index is written at most once, a read or a stack needs the index
// written, a fixed-size array does not grow, and every element has the element shape of
// the first write. Each check fails at run time with TF's InvalidArgument message,
// prefixed "TensorArray <name>: ". What TF does and these ops do not: clear_after_read (a
// read leaves no trace here, so reading twice is allowed) and elements of differing
// shapes (infer_shape=False).
//
// Cost: the first write allocates the array's storage (its capacity of rows and its
// written mask in one buffer) and every later write fills a row of it in place: O(element)
// per write, and a loop's gradient record of n iterations holds one storage, not n copies.
// The data and written tensors of every version after the first write are views of that
// storage, as TF's versions (flows) share one resource: a write through an older version
// sees the rows and marks of later ones, so writing an index twice through two versions
// fails as in TF, and an older version's data shows the later rows (only written rows are
// ever read, and a written row never changes). A dynamic array doubles its capacity when a
// write outgrows it (amortized O(element)). The gradient of a write zeroes the row of
// d data' in place when nothing else holds it (a loop's gradient region).
#include <string>

#include "loom/graph/op_def.h"

namespace loom {

struct TensorArrayState {
  Output data;     // [n, element...] of the array's dtype
  Output written;  // int64 [n]
};

// Writes `value` at `index` (an int32/int64 scalar). With dynamic_size the array grows to
// index + 1 elements when needed (zeros in between, unwritten); without, an index outside
// [0, n) fails. Gradients: to `value` (the written row of d data') and to `data` (every
// other row).
TensorArrayState TensorArrayWrite(const Scope& scope, Input data, Input written, Input index,
                                  Input value, bool dynamic_size, const std::string& name);

// The element at `index` (a scalar) or the elements at `index` (a vector, stacked);
// each index must be in [0, n) and written. Differentiable in `data`: the gradient is
// IndexedSlices (dy's rows at the indices), as Gather's, so a loop that reads a captured
// array at step t adds one row per step to its gradient, not a dense [n, ...].
Output TensorArrayRead(const Scope& scope, Input data, Input written, Input index,
                       const std::string& name);

// `data` itself once every index is written (its first unwritten index fails, as TF's
// stack). Its gradient is the identity.
Output TensorArrayStack(const Scope& scope, Input data, Input written, const std::string& name);

// The array holding value's rows (value: [m, element...]): every index written. The
// array must hold nothing yet; a fixed-size one must have n == m, a dynamic one grows to
// max(n, m). Differentiable in `value`.
TensorArrayState TensorArrayUnstack(const Scope& scope, Input written, Input value,
                                    bool dynamic_size, const std::string& name);

void RegisterTensorArrayOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_TENSOR_ARRAY_H_
