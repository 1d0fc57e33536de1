#ifndef LOOM_OPS_ATTR_KEYS_H_
#define LOOM_OPS_ATTR_KEYS_H_

// The attribute keys that ops of several files of this layer share, under TF's names. A
// key used by one file only stays in that file.
#include <cstdint>
#include <vector>

#include "loom/graph/attr_value.h"
#include "loom/tensor/dtype.h"
#include "loom/tensor/shape.h"

namespace loom::op_attrs {

inline constexpr Attr<int64_t> kAxis{"axis"};               // ConcatV2, GatherV2, Softmax, ...
inline constexpr Attr<std::vector<int64_t>> kAxes{"axes"};  // Squeeze, the reductions
inline constexpr Attr<DType> kDType{"dtype"};               // an output's dtype
inline constexpr Attr<Shape> kShape{"shape"};               // Variable, the random ops

}  // namespace loom::op_attrs

#endif  // LOOM_OPS_ATTR_KEYS_H_
