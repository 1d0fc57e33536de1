"""tf.nn: the nn ops under TF's names (generated from the registry, _ops._TABLE) and the
composites TF1 has (dropout, l2_normalize, embedding_lookup)."""
from loom.compat.v1 import _ops

globals().update(_ops.NAMESPACES["nn"])
dropout = _ops.dropout
l2_normalize = _ops.l2_normalize
moments = _ops.moments
embedding_lookup = _ops.embedding_lookup

from loom.compat.v1 import _selection  # noqa: E402

top_k = _selection.top_k

from loom.compat.v1 import _math_ops  # noqa: E402

swish = _math_ops.swish
selu = _math_ops.selu

from loom.compat.v1 import _nn_ops  # noqa: E402

batch_normalization = _nn_ops.batch_normalization
weighted_cross_entropy_with_logits = _nn_ops.weighted_cross_entropy_with_logits
conv1d = _nn_ops.conv1d
fused_batch_norm = _nn_ops.fused_batch_norm
max_pool_with_argmax = _nn_ops.max_pool_with_argmax
local_response_normalization = lrn = _nn_ops.local_response_normalization

from loom.compat.v1 import _conv_ops  # noqa: E402

depthwise_conv2d = _conv_ops.depthwise_conv2d
depthwise_conv2d_native = _conv_ops.depthwise_conv2d_native
separable_conv2d = _conv_ops.separable_conv2d
conv2d_transpose = _conv_ops.conv2d_transpose
conv2d = _conv_ops.conv2d
atrous_conv2d = _conv_ops.atrous_conv2d

from loom.compat.v1 import _elementwise  # noqa: E402

softsign = _elementwise.softsign
crelu = _elementwise.crelu

from loom.compat.v1.sparse import embedding_lookup_sparse  # noqa: E402

import types as _types  # noqa: E402

from loom.compat.v1 import _rnn  # noqa: E402

dynamic_rnn = _rnn.dynamic_rnn
bidirectional_dynamic_rnn = _rnn.bidirectional_dynamic_rnn
static_rnn = _rnn.static_rnn
# tf.nn.rnn_cell: the basic cells (_rnn.py).
rnn_cell = _types.ModuleType("loom.compat.v1.nn.rnn_cell", "tf.nn.rnn_cell")
for _name in ("RNNCell", "BasicRNNCell", "GRUCell", "BasicLSTMCell", "LSTMCell",
              "LSTMStateTuple", "MultiRNNCell", "DropoutWrapper"):
    setattr(rnn_cell, _name, getattr(_rnn, _name))

from loom.compat.v1 import _unsupported  # noqa: E402

__getattr__ = _unsupported.missing("tf.nn", {
    n: "no op for it in Loom's registry" for n in (
        "conv3d", "dilation2d",
        "nce_loss", "sampled_softmax_loss", "ctc_loss")})
