"""tf.einsum / tf.linalg.einsum lowered to Loom ops Loom already has (Transpose, Reshape,
MatMul / BatchMatMul, Sum, Mul), so gradients follow by composition.

Supported: one to many operands of lower-case or upper-case labels, '->' with an output
or numpy's implicit output (the labels that appear once, sorted), '...' for leading
broadcast-free dims (the same count in each operand that has it). Each operand first
loses its own repeated labels (a diagonal: 'ii->i', a trace: 'ii->', for a statically known
dim) and the labels nothing else needs (summed); then operands are contracted left to
right, two at a time, as one batched matrix product: batch labels (in both and kept),
contracted labels (in both, not kept), and each side's free labels; an outer product is
a product without contracted labels. A label whose static dim is 1 in one operand and
larger in another broadcasts (numpy's rule: that operand loses the label). Anything else (a
label whose dims differ otherwise, a label in the output only, a diagonal of a dim known only
at run time) is an error naming the equation."""
import string

import numpy as np

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes

_LETTERS = set(string.ascii_letters)


def _ns():
    return _ops.NAMESPACES[""]


def _fail(equation, why, error=ValueError):
    raise error("tf.einsum('%s'): %s" % (equation, why))


def _parse(equation, operands):
    """([labels per operand], output labels); '...' becomes digits '0', '1', ... (one per
    broadcast dim), which no user label can be."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        if "->" in out:
            _fail(equation, "more than one '->'")
    else:
        lhs, out = eq, None
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        _fail(equation, "%d operand label group(s) for %d operand(s)"
              % (len(inputs), len(operands)))
    ellipsis_dims = None
    parsed = []
    for labels, x in zip(inputs, operands):
        rank = x.shape.ndims
        bad = [c for c in labels.replace("...", "", 1) if c not in _LETTERS]
        if bad:
            _fail(equation, "invalid label %r (labels are letters, plus one '...')" % bad[0])
        if "..." in labels:
            if rank is None:
                _fail(equation, "'...' needs operand %s's rank" % x.name)
            n = rank - (len(labels) - 3)
            if n < 0 or ellipsis_dims not in (None, n):
                _fail(equation, "'...' stands for %d dims in %s and %s elsewhere; Loom's "
                      "einsum needs the same count in every operand" % (n, x.name,
                                                                          ellipsis_dims))
            ellipsis_dims = n
            labels = labels.replace("...", "".join(str(i) for i in range(n)))
        if rank is not None and rank != len(labels):
            _fail(equation, "%d labels for operand %s of rank %d" % (len(labels), x.name, rank))
        parsed.append(labels)
    ell = "".join(str(i) for i in range(ellipsis_dims or 0))
    if out is None:
        counts = {}
        for labels in parsed:
            for c in labels:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS))
    else:
        bad = [c for c in out.replace("...", "", 1) if c not in _LETTERS]
        out = out.replace("...", ell)
        if bad:
            _fail(equation, "invalid output label %r" % bad[0])
    if len(set(out)) != len(out):
        _fail(equation, "the output repeats a label")
    known = set("".join(parsed))
    for c in out:
        if c not in known:
            _fail(equation, "output label %r appears in no operand" % c)
    return parsed, out


class _Term:
    """An operand or an intermediate result: a tensor and one label per dim."""

    def __init__(self, tensor, labels):
        self.tensor = tensor
        self.labels = labels

    def dim(self, label):
        """The dim of `label`: an int when known, else an int32 scalar tensor."""
        axis = self.labels.index(label)
        d = self.tensor.shape.as_list()[axis]
        return d if d is not None else _ns()["shape"](self.tensor)[axis]


def _static_sizes(equation, terms):
    """Each label's static size over the terms; a dim of 1 broadcasts against a larger one
    (numpy's rule), any other difference is an error."""
    sizes = {}
    for t in terms:
        for c, d in zip(t.labels, t.tensor.shape.as_list()):
            if d is None or d == 1:
                continue
            if sizes.setdefault(c, d) != d:
                _fail(equation, "label %r has dims %d and %d (only a dim of 1 broadcasts)"
                      % (c, sizes[c], d))
    return sizes


def _squeeze_broadcast(term, sizes):
    """term without its dims of 1 whose label is larger elsewhere: such an operand is constant
    along the label, so dropping the label from it broadcasts it (a label only the other
    operands carry is contracted, summed or kept as theirs)."""
    dims = term.tensor.shape.as_list()
    axes = [i for i, (c, d) in enumerate(zip(term.labels, dims)) if d == 1 and sizes.get(c, 1) > 1]
    if not axes:
        return term
    labels = "".join(c for i, c in enumerate(term.labels) if i not in axes)
    return _Term(_ns()["squeeze"](term.tensor, axes), labels)


def _transpose(term, labels):
    if term.labels == labels:
        return term
    perm = [term.labels.index(c) for c in labels]
    return _Term(_ns()["transpose"](term.tensor, perm), labels)


def _sum(term, labels):
    """term with `labels` summed out."""
    if not labels:
        return term
    axes = [term.labels.index(c) for c in labels]
    keep = "".join(c for c in term.labels if c not in labels)
    return _Term(_ns()["reduce_sum"](term.tensor, axes), keep)


def _diagonals(equation, term):
    """term with each repeated label reduced to its diagonal (x[i, i] for 'ii')."""
    ns = _ns()
    while True:
        repeated = [c for c in term.labels if term.labels.count(c) > 1]
        if not repeated:
            return term
        c = repeated[0]
        first = term.labels.index(c)
        second = term.labels.index(c, first + 1)
        n = term.tensor.shape.as_list()[first]
        m = term.tensor.shape.as_list()[second]
        if n is None or m is None:
            _fail(equation, "the diagonal of label %r needs its dim known when the graph is "
                  "built" % c, NotImplementedError)
        if n != m:
            _fail(equation, "label %r has dims %d and %d" % (c, n, m))
        rank = len(term.labels)
        eye_shape = [1] * rank
        eye_shape[first] = eye_shape[second] = n
        eye = _fw.constant(np.eye(n).reshape(eye_shape), dtype=term.tensor.dtype)
        masked = ns["multiply"](term.tensor, eye)
        labels = term.labels[:second] + term.labels[second + 1:]
        term = _Term(ns["reduce_sum"](masked, [second]), labels)


def _size_of(term, labels):
    """The product of the dims of `labels`: an int, or an int32 scalar tensor."""
    total, dynamic = 1, None
    for c in labels:
        d = term.dim(c)
        if isinstance(d, int):
            total *= d
        else:
            dynamic = d if dynamic is None else _ns()["multiply"](dynamic, d)
    if dynamic is None:
        return total
    return dynamic if total == 1 else _ns()["multiply"](dynamic, total)


def _reshape(tensor, dims):
    """Reshape to `dims` (ints and int32 scalar tensors): with at most one dim known only
    at run time, a static reshape with -1 there, so the other dims stay known."""
    dynamic = [i for i, d in enumerate(dims) if not isinstance(d, int)]
    if len(dynamic) <= 1:
        dims = [-1 if i in dynamic else d for i, d in enumerate(dims)]
    return _ns()["reshape"](tensor, dims)


def _contract(a, b, keep):
    """The product of terms a and b summed over their shared labels not in `keep`."""
    ns = _ns()
    batch = "".join(c for c in a.labels if c in b.labels and c in keep)
    contracted = "".join(c for c in a.labels if c in b.labels and c not in keep)
    free_a = "".join(c for c in a.labels if c not in b.labels)
    free_b = "".join(c for c in b.labels if c not in a.labels)
    a = _transpose(a, batch + free_a + contracted)
    b = _transpose(b, batch + contracted + free_b)
    dims = [a.dim(c) for c in batch + free_a] + [b.dim(c) for c in free_b]
    # [batch, free_a, contracted] x [batch, contracted, free_b], without the batch dim
    # when there is no batch label (a MatMul, not a BatchMatMul).
    lead = [_size_of(a, batch)] if batch else []
    lhs = lead + [_size_of(a, free_a), _size_of(a, contracted)]
    rhs = lead + [_size_of(b, contracted), _size_of(b, free_b)]
    product = ns["matmul"](_reshape(a.tensor, lhs), _reshape(b.tensor, rhs))
    return _Term(_reshape(product, dims), batch + free_a + free_b)


def einsum(equation, *inputs, **kwargs):
    """tf.einsum(equation, *inputs, name=None)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("tf.einsum got unexpected keyword arguments %s" % sorted(kwargs))
    if not inputs:
        _fail(equation, "no operands")
    operands = [_fw.convert_to_tensor(x) for x in inputs]
    dtype = operands[0].dtype
    for x in operands:
        if x.dtype != dtype:
            raise TypeError("tf.einsum('%s'): operands of dtypes %s and %s; cast them first"
                            % (equation, dtype.name, x.dtype.name))
    if dtype not in (_dtypes.float32, _dtypes.float64):
        raise TypeError("tf.einsum('%s'): Loom's einsum multiplies float32 or float64, got %s"
                        % (equation, dtype.name))
    labels, out = _parse(equation, operands)
    with _fw.get_default_graph().name_scope(name or "einsum"):
        terms = [_diagonals(equation, _Term(x, l)) for x, l in zip(operands, labels)]
        sizes = _static_sizes(equation, terms)
        terms = [_squeeze_broadcast(t, sizes) for t in terms]
        while True:
            # Sum out what no other term and not the output needs, then contract the first
            # two terms.
            for i, t in enumerate(terms):
                needed = set(out).union(*(o.labels for j, o in enumerate(terms) if j != i))
                terms[i] = _sum(t, "".join(c for c in t.labels if c not in needed))
            if len(terms) == 1:
                break
            rest = set(out).union(*(t.labels for t in terms[2:]))
            terms = [_contract(terms[0], terms[1], rest)] + terms[2:]
        result = _transpose(terms[0], out)
        return _ns()["identity"](result.tensor, name="einsum")
