"""tf.nn.dynamic_rnn and the basic cells of tf.nn.rnn_cell (BasicRNNCell, GRUCell,
BasicLSTMCell, LSTMCell without peepholes or projections, MultiRNNCell stacking them,
DropoutWrapper), over tf.while_loop.

A cell creates its variables (TF's names: "<scope>/basic_rnn_cell/kernel", ...) once,
when dynamic_rnn builds it before the loop, so the loop body only reads them and the
gradient of every step reaches the same variables."""
import collections

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _variables
from loom.compat.v1 import _while_loop

LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


def _tf():
    from loom.compat import v1
    return v1


def _zeros(batch, n, dtype):
    """Zeros [batch, n]; batch may be a scalar tensor."""
    tf = _tf()
    if not isinstance(batch, _fw.Tensor):
        return tf.zeros([int(batch), n], dtype=dtype)
    from loom.compat.v1 import _ops
    dims = tf.concat([tf.reshape(tf.cast(batch, tf.int64), [1]),
                      tf.constant([n], dtype=tf.int64)], 0)
    # The batch size is read from the inputs' shape, which carries no gradient: without the
    # cut, tf.gradients into the inputs (an embedding_lookup's table) reached FillDynamic
    # through Shape and failed.
    return _ops.raw_ops.FillDynamic(tf.stop_gradient(dims), tf.constant(0, dtype=dtype))


class RNNCell:
    """The cell protocol: state_size, output_size, zero_state, build, __call__."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        self._num_units = int(num_units)
        self._activation = activation
        self._name = name
        self._dtype = dtype
        self._variables = None

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def zero_state(self, batch_size, dtype):
        return _while_loop._pack(self.state_size, [
            _zeros(batch_size, n, dtype) for n in _while_loop._flatten(self.state_size)])

    def _kernel(self, name, input_depth, width, bias_init):
        tf = _tf()
        with _variables.variable_scope(name):
            kernel = tf.get_variable("kernel", [input_depth + self._num_units, width],
                                     dtype=self._dtype)
            bias = tf.get_variable("bias", [width], dtype=self._dtype,
                                   initializer=tf.constant_initializer(bias_init))
        return kernel, bias

    def build(self, input_depth):
        if self._variables is None:
            with _variables.variable_scope(self._name or self._default_name):
                self._variables = self._make_variables(int(input_depth))

    def __call__(self, inputs, state, scope=None):
        if self._variables is None:
            self.build(inputs.shape.dims[-1])
        return self._step(inputs, state)


class BasicRNNCell(RNNCell):
    """h' = activation([x, h] W + b) (tanh by default); output = h'."""
    _default_name = "basic_rnn_cell"

    def _make_variables(self, input_depth):
        tf = _tf()
        return (tf.get_variable("kernel", [input_depth + self._num_units, self._num_units],
                                dtype=self._dtype),
                tf.get_variable("bias", [self._num_units], dtype=self._dtype,
                                initializer=tf.zeros_initializer()))

    def _step(self, x, h):
        tf = _tf()
        kernel, bias = self._variables
        act = self._activation or tf.tanh
        out = act(tf.matmul(tf.concat([x, h], 1), kernel) + bias)
        return out, out


class GRUCell(RNNCell):
    """TF's GRUCell: r, u = sigmoid([x, h] Wg + bg) (bg = 1); c = tanh([x, r h] Wc + bc);
    h' = u h + (1 - u) c."""
    _default_name = "gru_cell"

    def _make_variables(self, input_depth):
        return (self._kernel("gates", input_depth, 2 * self._num_units, 1.0) +
                self._kernel("candidate", input_depth, self._num_units, 0.0))

    def _step(self, x, h):
        tf = _tf()
        wg, bg, wc, bc = self._variables
        gates = tf.sigmoid(tf.matmul(tf.concat([x, h], 1), wg) + bg)
        r, u = tf.split(gates, 2, axis=1)
        c = (self._activation or tf.tanh)(tf.matmul(tf.concat([x, r * h], 1), wc) + bc)
        new_h = u * h + (1.0 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """TF's BasicLSTMCell: i, j, f, o = split([x, h] W + b, 4); c' = c sigmoid(f + forget_bias)
    + sigmoid(i) tanh(j); h' = tanh(c') sigmoid(o). The state is LSTMStateTuple(c, h)."""
    _default_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(num_units, activation, reuse, name, dtype)
        if not state_is_tuple:
            raise NotImplementedError("Loom's LSTM cells keep the state as LSTMStateTuple "
                                      "(state_is_tuple=True)")
        self._forget_bias = float(forget_bias)

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    def _make_variables(self, input_depth):
        tf = _tf()
        return (tf.get_variable("kernel", [input_depth + self._num_units, 4 * self._num_units],
                                dtype=self._dtype),
                tf.get_variable("bias", [4 * self._num_units], dtype=self._dtype,
                                initializer=tf.zeros_initializer()))

    def _step(self, x, state):
        tf = _tf()
        kernel, bias = self._variables
        c, h = state
        i, j, f, o = tf.split(tf.matmul(tf.concat([x, h], 1), kernel) + bias, 4, axis=1)
        act = self._activation or tf.tanh
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * act(j)
        new_h = act(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """TF's LSTMCell without peepholes, cell clipping or projections (variables under
    "lstm_cell")."""
    _default_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        if use_peepholes or cell_clip is not None or num_proj is not None:
            raise NotImplementedError("Loom's LSTMCell has no peepholes, cell clipping or "
                                      "projections")
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)


class MultiRNNCell(RNNCell):
    """TF's MultiRNNCell: cells stacked, each one's output the next one's input; the state
    is the tuple of the cells' states (variables under "multi_rnn_cell/cell_<i>/...", as
    TF names them)."""
    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        cells = list(cells)
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not state_is_tuple:
            raise NotImplementedError("Loom's MultiRNNCell keeps the state as a tuple "
                                      "(state_is_tuple=True)")
        if len({id(c) for c in cells}) != len(cells):
            raise ValueError("MultiRNNCell got the same cell object twice; make one cell per "
                             "layer ([tf.nn.rnn_cell.LSTMCell(n) for _ in range(layers)])")
        super().__init__(1)
        self._cells = cells

    @property
    def state_size(self):
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def build(self, input_depth):
        if self._variables is None:
            with _variables.variable_scope(self._name or self._default_name):
                depth = int(input_depth)
                for i, cell in enumerate(self._cells):
                    with _variables.variable_scope("cell_%d" % i):
                        cell.build(depth)
                    depth = cell.output_size
            self._variables = True

    def _step(self, x, state):
        new_states = []
        for cell, s in zip(self._cells, state):
            x, new_s = cell._step(x, s)
            new_states.append(new_s)
        return x, tuple(new_states)


def _is_one(v):
    return not isinstance(v, _fw.Tensor) and float(v) == 1.0


class DropoutWrapper(RNNCell):
    """TF's DropoutWrapper without variational_recurrent: dropout on each step's input
    (input_keep_prob) and output (output_keep_prob), fresh masks every step; keep
    probabilities may be tensors (a placeholder fed 1.0 to evaluate). The wrapped cell's
    variables keep their names. state_keep_prob other than 1 is a NotImplementedError."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        if variational_recurrent:
            raise NotImplementedError("Loom's DropoutWrapper has no variational_recurrent "
                                      "(one mask for all steps)")
        if not _is_one(state_keep_prob):
            raise NotImplementedError("Loom's DropoutWrapper drops inputs and outputs only "
                                      "(state_keep_prob must be 1)")
        super().__init__(1)
        self._cell = cell
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._seed = seed

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def build(self, input_depth):
        if self._variables is None:
            self._cell.build(input_depth)
            self._variables = True

    def _dropout(self, x, keep_prob):
        if _is_one(keep_prob):
            return x
        return _tf().nn.dropout(x, keep_prob=keep_prob, seed=self._seed)

    def _step(self, x, state):
        out, new_state = self._cell._step(self._dropout(x, self._input_keep_prob), state)
        return self._dropout(out, self._output_keep_prob), new_state


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """tf.nn.dynamic_rnn: (outputs, final state) of `cell` over inputs' time dimension.
    Past a row's sequence_length its state is carried through and its outputs are zero,
    as TF does."""
    tf = _tf()
    inputs = _fw.convert_to_tensor(inputs)
    with _variables.variable_scope(scope or "rnn"):
        x = inputs if time_major else tf.transpose(inputs, [1, 0, 2])
        batch = tf.shape(x, out_type=tf.int64)[1]
        if initial_state is None:
            if dtype is None:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            initial_state = cell.zero_state(batch, dtype)
        cell.build(x.shape.dims[2])
        n, n_static = _while_loop._length([x])
        lengths = None if sequence_length is None else tf.cast(sequence_length, x.dtype)
        state_flat = [_fw.convert_to_tensor(s) for s in _while_loop._flatten(initial_state)]
        traced = {}

        def cond(t, *rest):
            return tf.less(t, n)

        def body(t, *rest):
            state = _while_loop._pack(initial_state, list(rest[:len(state_flat)]))
            out, new_state = cell(tf.gather(x, t), state)
            new_flat = [_fw.convert_to_tensor(v) for v in _while_loop._flatten(new_state)]
            if lengths is not None:
                # Rows past their length keep their state and output zeros: selected, as
                # TF's where, so a NaN or Inf the cell makes of padding stays out (a 0 / 1
                # blend let it through: 0 * NaN).
                alive = tf.expand_dims(tf.cast(t, x.dtype) < lengths, 1)
                new_flat = [tf.where_v2(alive, v, o) for v, o in
                            zip(new_flat, rest[:len(state_flat)])]
                out = tf.where_v2(alive, out, tf.zeros_like(out))
            traced["output"] = out
            data, written = rest[len(state_flat):]
            return [t + 1] + new_flat + list(_while_loop._collect(tf, data, written, t, out))

        t0 = tf.constant(0, dtype=tf.int64)
        loop_vars = [t0] + state_flat + _while_loop._collector_vars(tf, n, x.dtype)
        invariants = [t0.shape] + [v.shape for v in state_flat] + [None, [None]]
        results = _while_loop.while_loop(
            cond, body, loop_vars, shape_invariants=invariants,
            parallel_iterations=parallel_iterations or 32, name="while",
            return_same_structure=True)
        final = _while_loop._pack(initial_state, list(results[1:1 + len(state_flat)]))
        outputs = _while_loop._stacked(tf, results[-2], results[-1], n_static, traced["output"])
        if not time_major:
            outputs = tf.transpose(outputs, [1, 0, 2])
        return outputs, final


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """tf.nn.bidirectional_dynamic_rnn: ((outputs_fw, outputs_bw), (state_fw, state_bw)),
    the backward cell run over each row reversed within its sequence_length and its outputs
    reversed back, as TF (variables under "bidirectional_rnn/fw/..." and ".../bw/...")."""
    tf = _tf()
    inputs = _fw.convert_to_tensor(inputs)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reverse(x):
        if sequence_length is None:
            return tf.reverse(x, [time_axis])
        return tf.reverse_sequence(x, sequence_length, seq_axis=time_axis,
                                   batch_axis=batch_axis)

    with _variables.variable_scope(scope or "bidirectional_rnn"):
        out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                       dtype, parallel_iterations, swap_memory, time_major,
                                       scope="fw")
        out_rev, state_bw = dynamic_rnn(cell_bw, reverse(inputs), sequence_length,
                                        initial_state_bw, dtype, parallel_iterations,
                                        swap_memory, time_major, scope="bw")
    return (out_fw, reverse(out_rev)), (state_fw, state_bw)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """tf.nn.static_rnn: the cell unrolled over a Python list of [batch, depth] inputs;
    (list of outputs, final state). Past a row's sequence_length its state is carried
    through and its outputs are zero, as TF (variables under "rnn/", as dynamic_rnn's)."""
    tf = _tf()
    inputs = [_fw.convert_to_tensor(x) for x in inputs]
    if not inputs:
        raise ValueError("inputs must not be empty")
    with _variables.variable_scope(scope or "rnn"):
        first = inputs[0]
        if initial_state is None:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            batch = first.shape.dims[0]
            batch = batch if batch is not None else tf.shape(first, out_type=tf.int64)[0]
            initial_state = cell.zero_state(batch, dtype)
        cell.build(first.shape.dims[-1])
        lengths = None if sequence_length is None else tf.cast(sequence_length, first.dtype)
        state = initial_state
        outputs = []
        for t, x in enumerate(inputs):
            out, new_state = cell(x, state)
            if lengths is not None:
                alive = tf.expand_dims(float(t) < lengths, 1)  # selected, as dynamic_rnn
                flat_new = _while_loop._flatten(new_state)
                flat_old = _while_loop._flatten(state)
                new_state = _while_loop._pack(state, [tf.where_v2(alive, n, o) for n, o in
                                                      zip(flat_new, flat_old)])
                out = tf.where_v2(alive, out, tf.zeros_like(out))
            outputs.append(out)
            state = new_state
        return outputs, state
