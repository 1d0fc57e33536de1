"""tf.TensorArray over Loom's TensorArray ops (loom/ops/tensor_array.h).

A TensorArray is two tensors here, not a resource handle: `data` ([n, element...]) and
`written` (int64 [n], 1 at each written index), and a write returns a new TensorArray
holding the new ones (as TF1's write returns a new TensorArray for its new flow). After
the first write both are views of one storage that later writes fill in place, so, as
TF1's objects of one resource, the objects made from one array see each other's writes. tf.while_loop and tf.cond take a TensorArray as a loop
variable or a result: _nest flattens it into its two tensors (`_composite_flat`) and
rebuilds it on the other side (`_composite_from_flat`). Gradients flow through write,
read, gather, stack and unstack.

As in TF 1.15, the checks run when the graph runs and fail with TF's messages: an index
written twice, a read (or stack) of an unwritten index, a write outside a fixed-size
array, an unstack of the wrong length, an element whose shape differs from the first
one's. Statically known shapes and dtypes are checked when the op is built. The objects
made from one TensorArray share its element shape, which writes refine (infer_shape), so
the stack of a TensorArray written inside a loop knows its element shape after the loop.

What differs from TF (docs/python.md): clear_after_read is accepted and ignored (a read
changes nothing, so reading an index twice gives the value twice instead of an error);
every element has one shape (infer_shape=False does not allow differing shapes); scatter,
split, grad and a TensorArray from a handle or flow are UnsupportedAPIError. A write copies
one element (loom/ops/tensor_array.h, "Cost"): writing n elements costs O(n) element
copies, and a loop's gradient record keeps the one storage."""

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes
from loom.compat.v1._unsupported import UnsupportedAPIError


def _tf():
    from loom.compat import v1
    return v1


class _Shared:
    """What every TensorArray made from one tf.TensorArray(...) call shares."""

    def __init__(self, dtype, name, dynamic_size, element_shape, infer_shape, size):
        self.dtype = dtype
        self.name = name
        self.dynamic_size = dynamic_size
        self.element_shape = element_shape
        self.infer_shape = infer_shape
        self.size = size  # the static size, or None

    def merge_element_shape(self, shape, what):
        shape = _fw.TensorShape(shape)
        if not self.infer_shape:
            return
        if not self.element_shape.is_compatible_with(shape):
            raise ValueError("TensorArray %s: Inconsistent shapes: %s %s but the element shape is "
                             "%s (every element of a TensorArray has one shape)"
                             % (self.name, what, shape, self.element_shape))
        self.element_shape = self.element_shape.merge_with(shape)


def _unsupported(what, why):
    raise UnsupportedAPIError("tf.TensorArray%s is not supported by Loom: %s (docs/python.md, "
                              "\"TensorArray\")" % (what, why))


class TensorArray:
    """tf.TensorArray (TF 1.15's constructor arguments)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None or flow is not None:
            _unsupported("(handle=, flow=)", "a TensorArray is two tensors here, not a "
                         "resource handle; build it with dtype and size")
        if size is None and not dynamic_size:
            raise ValueError("Size must be provided if handle is not provided "
                             "(tf.TensorArray(dtype, size=n), or dynamic_size=True)")
        tf = _tf()
        dtype = _dtypes.as_dtype(dtype)
        element_shape = _fw.TensorShape(None if element_shape is None else element_shape)
        graph = _fw.get_default_graph()
        with graph.name_scope(name or "TensorArray") as scope:
            array_name = tensor_array_name or scope.rstrip("/")
            static = _ops.constant_value(size) if size is not None else 0
            if static is not None:
                static = int(static)
                if static < 0:
                    raise ValueError("TensorArray %s: size must be >= 0, got %d"
                                     % (array_name, static))
                written = tf.zeros([static], dtype=tf.int64)
            else:
                n = tf.reshape(tf.cast(size, tf.int64), [1])
                written = _ops.raw_ops.FillDynamic(n, tf.constant(0, dtype=tf.int64))
            dims = element_shape.dims if element_shape.is_fully_defined() else []
            data = tf.zeros([0] + dims, dtype=dtype)  # the placeholder until the first write
        self._shared = _Shared(dtype, array_name, bool(dynamic_size), element_shape,
                               bool(infer_shape), None if dynamic_size else static)
        self._data, self._written = data, written

    @classmethod
    def _make(cls, shared, data, written):
        ta = cls.__new__(cls)
        ta._shared, ta._data, ta._written = shared, data, written
        return ta

    # --- what _nest and tf.while_loop see ------------------------------------------------
    def _composite_flat(self):
        return [self._data, self._written]

    def _composite_from_flat(self, flat):
        return TensorArray._make(self._shared, flat[0], flat[1])

    def _composite_invariants(self):
        """The loop-variable shape invariants of the two tensors: the data's rank changes
        at the first write and its length at each write of a dynamic array."""
        return [None, [None]]

    # --- properties ----------------------------------------------------------------------
    @property
    def dtype(self):
        return self._shared.dtype

    @property
    def element_shape(self):
        return self._shared.element_shape

    @property
    def dynamic_size(self):
        return self._shared.dynamic_size

    @property
    def flow(self):
        return self._data

    @property
    def handle(self):
        _unsupported(".handle", "a TensorArray is two tensors here, not a resource handle")

    # --- ops -----------------------------------------------------------------------------
    def _value(self, value, what):
        if isinstance(value, _fw.Tensor):
            if value.dtype != self.dtype:
                raise TypeError("TensorArray %s: TensorArray dtype is %s but Op is trying to %s "
                                "dtype %s" % (self._shared.name, self.dtype.name, what,
                                              value.dtype.name))
            return value
        return _fw.convert_to_tensor(value, dtype=self.dtype)

    def _index(self, index, what):
        index = _fw.convert_to_tensor(index)
        if index.dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("TensorArray %s: the index of %s must be an int32 or int64 tensor, "
                            "got %s" % (self._shared.name, what, index.dtype.name))
        return index

    def write(self, index, value, name=None):
        """The TensorArray with `value` at `index` (each index is written once)."""
        tf = _tf()
        with tf.name_scope(name or "TensorArrayWrite"):
            value = self._value(value, "write")
            self._shared.merge_element_shape(value.shape, "writing a value of shape")
            data, written = _ops.raw_ops.TensorArrayWrite(
                self._data, self._written, self._index(index, "write"), value,
                tensor_array_name=self._shared.name, dynamic_size=self._shared.dynamic_size)
        return TensorArray._make(self._shared, data, written)

    def _elements(self, out, leading):
        shape = self._shared.element_shape
        if shape.dims is not None:
            merged = out.shape.merge_with(_fw.TensorShape(leading + shape.dims))
            if merged.dims != out.shape.dims:
                out.set_shape(merged)
        return out

    def read(self, index, name=None):
        """The element at `index` (written before)."""
        out = _ops.raw_ops.TensorArrayRead(self._data, self._written, self._index(index, "read"),
                                           tensor_array_name=self._shared.name,
                                           name=name or "TensorArrayRead")
        return self._elements(out, [])

    def gather(self, indices, name=None):
        """The elements at `indices` (a vector), stacked."""
        indices = self._index(indices, "gather")
        if indices.shape.ndims not in (None, 1):
            raise ValueError("TensorArray %s: gather takes a vector of indices, got shape %s"
                             % (self._shared.name, indices.shape))
        out = _ops.raw_ops.TensorArrayRead(self._data, self._written, indices,
                                           tensor_array_name=self._shared.name,
                                           name=name or "TensorArrayGather")
        n = indices.shape.dims[0] if indices.shape.ndims == 1 else None
        return self._elements(out, [n])

    def stack(self, name=None):
        """Every element, stacked along a new first dimension (all must be written)."""
        tf = _tf()
        with tf.name_scope(name or "TensorArrayStack"):
            out = _ops.raw_ops.TensorArrayStack(self._data, self._written,
                                                tensor_array_name=self._shared.name)
            shape = self._shared.element_shape
            if shape.is_fully_defined() and out.shape.ndims != 1 + len(shape.dims):
                # An empty array's placeholder, or a loop variable of unknown rank.
                out = tf.reshape(out, [-1] + shape.dims)
            return self._elements(out, [self._shared.size])

    def concat(self, name=None):
        """The elements joined along their first dimension."""
        tf = _tf()
        shape = self._shared.element_shape
        with tf.name_scope(name or "TensorArrayConcat"):
            stacked = self.stack()
            if shape.ndims == 0:
                raise ValueError("TensorArray %s: concat needs elements of rank >= 1; they are "
                                 "scalars (use stack)" % self._shared.name)
            if shape.dims is not None and all(d is not None for d in shape.dims[1:]):
                return tf.reshape(stacked, [-1] + shape.dims[1:])
            rest = tf.shape(stacked, out_type=tf.int64)[2:]
            return tf.reshape(stacked, tf.concat([tf.constant([-1], dtype=tf.int64), rest], 0))

    def unstack(self, value, name=None):
        """The TensorArray holding value's rows (it must hold nothing yet)."""
        tf = _tf()
        with tf.name_scope(name or "TensorArrayUnstack"):
            value = self._value(value, "unstack")
            if value.shape.ndims == 0:
                raise ValueError("TensorArray %s: cannot unstack a scalar" % self._shared.name)
            if value.shape.dims is not None:
                m = value.shape.dims[0]
                if self._shared.size is not None and m is not None and m != self._shared.size:
                    raise ValueError("TensorArray %s: Input value must have first dimension "
                                     "equal to the array size (%d vs. %d)"
                                     % (self._shared.name, m, self._shared.size))
                self._shared.merge_element_shape(value.shape.dims[1:],
                                                 "unstacking elements of shape")
            data, written = _ops.raw_ops.TensorArrayUnstack(
                self._written, value, tensor_array_name=self._shared.name,
                dynamic_size=self._shared.dynamic_size)
        return TensorArray._make(self._shared, data, written)

    def size(self, name=None):
        """The number of elements (int32), as TF."""
        tf = _tf()
        return tf.cast(tf.size(self._written), tf.int32, name=name or "TensorArraySize")

    def identity(self):
        return TensorArray._make(self._shared, self._data, self._written)

    def close(self, name=None):
        return _tf().no_op(name=name or "TensorArrayClose")

    def scatter(self, indices, value, name=None):
        _unsupported(".scatter", "write the elements one by one with write(i, value[i]), or "
                     "unstack a whole value")

    def split(self, value, lengths, name=None):
        _unsupported(".split", "every element has one shape here; reshape and unstack")

    def grad(self, source, flow=None, name=None):
        _unsupported(".grad", "gradients through a TensorArray come from tf.gradients and the "
                     "optimizers")
