#include "loom/ops/ops_layer.h"

#include "loom/ops/array.h"
#include "loom/ops/control.h"
#include "loom/ops/dropout.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/math_trig.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_conv_transpose.h"
#include "loom/ops/nn_depthwise.h"
#include "loom/ops/nn_pool_argmax.h"
#include "loom/ops/random.h"
#include "loom/ops/scatter.h"
#include "loom/ops/space_batch.h"
#include "loom/ops/sparse.h"
#include "loom/ops/state.h"
#include "loom/ops/tensor_array.h"
#include "loom/ops/topk.h"
#include "loom/ops/unique.h"

namespace loom {

void RegisterOpsLayerOps(OpRegistry& registry) {
  RegisterStateOps(registry);
  RegisterGradSupportOps(registry);
  RegisterMathOps(registry);
  RegisterArrayOps(registry);
  RegisterRandomOps(registry);
  RegisterDropoutOps(registry);
  RegisterNnOps(registry);
  RegisterSparseOps(registry);
  RegisterControlOps(registry);
  RegisterTensorArrayOps(registry);
  RegisterTopKOps(registry);
  RegisterScatterOps(registry);
  RegisterUniqueOps(registry);
  RegisterMathTrigOps(registry);
  RegisterNnDepthwiseOps(registry);
  RegisterNnConvTransposeOps(registry);
  RegisterSpaceBatchOps(registry);
  RegisterNnPoolArgmaxOps(registry);
}

}  // namespace loom
