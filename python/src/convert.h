#ifndef LOOM_PYTHON_SRC_CONVERT_H_
#define LOOM_PYTHON_SRC_CONVERT_H_

// Conversions between Python values and Loom's: numpy arrays <-> Tensors, shapes, dtypes,
// attribute values. The no-copy rules (docs/python_core.md):
//   ToTensor     a C-contiguous numpy array of a numeric dtype Loom has, and (when asked)
//                of the wanted dtype, is borrowed: the Tensor views the array's memory and
//                holds a reference to the array until its last view is gone. Anything
//                else (another dtype, a strided view, Python scalars and lists, strings)
//                is converted into a new Tensor.
//   ToNumpy      a Tensor that owns its buffer and is its only view becomes a numpy array
//                over that buffer; a shared buffer (a variable's value, a fed array) or a
//                borrowed one is copied, so an array returned by Session.run never changes
//                under its holder and never aliases an input. A scalar is returned as a
//                numpy scalar (bytes for a string), as TF's Session.run returns it.
// Every function here needs the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "loom/graph/attr_value.h"
#include "loom/tensor/tensor.h"

namespace loom::python {

namespace py = pybind11;

// The numpy dtype of `dtype` (object for strings). Throws InvalidArgument for kInvalid.
py::dtype NumpyDType(DType dtype);
// The Loom dtype of a numpy dtype; kInvalid when Loom has none (complex, float16, ...).
DType FromNumpyDType(const py::dtype& dtype);
// A DType from a Python value: a DType, a numpy dtype or type, or a name ("float32").
DType ToDType(py::handle value);

// `value` (an array, a scalar, nested lists, bytes/str) as a Tensor of dtype `want`
// (kInvalid: the value's own dtype, with Python floats as float32 and ints as int32, as TF
// does). Converts between numeric dtypes as numpy's astype does when `want` differs
// (TF's session.run feeding a float64 array to a float32 placeholder). Throws
// InvalidArgument naming `what` when the value has no such conversion.
Tensor ToTensor(py::handle value, DType want, std::string_view what);
py::object ToNumpy(Tensor tensor);

// Shapes: None (unknown rank) or a sequence of ints / None (unknown dims).
Shape ToShape(py::handle value);
py::object FromShape(const Shape& shape);

// An attribute value of `type` from a Python value; InvalidArgument naming `owner` and
// the attribute when it does not convert.
AttrValue ToAttrValue(py::handle value, AttrType type, std::string_view owner,
                      std::string_view attr);
py::object FromAttrValue(const AttrValue& value);

}  // namespace loom::python

#endif  // LOOM_PYTHON_SRC_CONVERT_H_
