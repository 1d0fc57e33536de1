"""tf.dtypes: DType objects with TF's names (tf.float32, tf.int64, ...).

A DType wraps the extension's loom._loom.DType. Loom has float32, float64, int32, int64,
uint8, bool and string; TF's other dtypes (float16, complex, ...) are missing.
"""
import numpy as np

from loom import _loom


class DType:
    """TF's tf.DType: compares equal to itself, its numpy dtype and its name."""

    __slots__ = ("_enum", "_name")

    def __init__(self, enum, name):
        self._enum = enum
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return np.dtype(object).type if self._name == "string" else np.dtype(self._name).type

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self._name in ("float32", "float64")

    @property
    def is_integer(self):
        return self._name in ("int32", "int64", "uint8")

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def size(self):
        return {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "uint8": 1, "bool": 1}.get(
            self._name, 0)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return as_dtype(other)._enum == self._enum
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "tf." + self._name

    def __str__(self):
        return "<dtype: %r>" % self._name


float32 = DType(_loom.DType.float32, "float32")
float64 = DType(_loom.DType.float64, "float64")
int32 = DType(_loom.DType.int32, "int32")
int64 = DType(_loom.DType.int64, "int64")
uint8 = DType(_loom.DType.uint8, "uint8")
bool = DType(_loom.DType.bool, "bool")  # noqa: A001  (TF's name)
string = DType(_loom.DType.string, "string")
float = float32  # noqa: A001
double = float64

_BY_ENUM = {d._enum: d for d in (float32, float64, int32, int64, uint8, bool, string)}


def as_dtype(type_value):
    """tf.as_dtype: a DType from a DType, a numpy dtype or type, or a name."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, _loom.DType):
        return _BY_ENUM[type_value]
    try:
        return _BY_ENUM[_loom.dtype_from(type_value)]
    except _loom.OpError as e:
        raise TypeError(str(e)) from None
