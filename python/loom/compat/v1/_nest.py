"""TF's nest for the structures TF1 code passes (lists, tuples, namedtuples, dicts):
the leaves in TF's order (a dict's by sorted key) and a structure rebuilt from them (a
dict keeps its own key order and type, as TF's `pack_sequence_as`). Used by tf.cond,
tf.while_loop, map_fn / scan and dynamic_rnn.

A composite value (a tf.TensorArray: an object with `_composite_flat()` and
`_composite_from_flat(tensors)`) is its tensors here, as TF's nest with
expand_composites=True: flatten gives them, pack_sequence_as rebuilds the object around
new ones."""


def is_sequence(value):
    return isinstance(value, (list, tuple, dict))


def is_composite(value):
    return hasattr(value, "_composite_flat")


def flatten(structure):
    if is_composite(structure):
        return list(structure._composite_flat())
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure, flat):
    """`structure` with its leaves replaced, in flatten's order, by the items of `flat`;
    ValueError when the counts differ."""
    leaves = iter(flat)

    def build(s):
        if isinstance(s, dict):
            packed = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, packed[k]) for k in s)
        if isinstance(s, tuple) and hasattr(s, "_fields"):  # namedtuple
            return type(s)(*[build(item) for item in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(item) for item in s)
        if is_composite(s):
            return s._composite_from_flat([build(None) for _ in s._composite_flat()])
        try:
            return next(leaves)
        except StopIteration:
            raise ValueError("the structure has more leaves than the %d values given"
                             % len(flat)) from None

    result = build(structure)
    if next(leaves, leaves) is not leaves:
        raise ValueError("the structure has fewer leaves than the %d values given" % len(flat))
    return result
