#include "python/src/convert.h"

#include <cstring>

#include "loom/base/error.h"

namespace loom::python {

namespace {

py::module_& Numpy() {
  static py::module_* np = new py::module_(py::module_::import("numpy"));
  return *np;
}

// Drops a reference to a Python object from any thread, at any time: a Tensor's release
// callback may run on a kernel thread or after the interpreter has shut down.
void ReleaseFromAnyThread(PyObject* object) {
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  Py_DECREF(object);
}

int64_t AsInt(py::handle h) {
  return py::int_(py::reinterpret_borrow<py::object>(h)).cast<int64_t>();
}
double AsFloat(py::handle h) {
  return py::float_(py::reinterpret_borrow<py::object>(h)).cast<double>();
}

Tensor StringTensor(const py::array& array, std::string_view what) {
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  Tensor t(kString, Shape(dims));
  auto out = t.flat<std::string>();
  py::object flat = array.attr("ravel")();
  size_t i = 0;
  for (py::handle item : flat) {
    if (py::isinstance<py::bytes>(item)) {
      out[i++] = item.cast<std::string>();
    } else if (py::isinstance<py::str>(item)) {
      out[i++] = item.cast<std::string>();  // UTF-8
    } else {
      throw InvalidArgument(what, ": a string tensor needs bytes or str elements, got ",
                            std::string(py::str(item.get_type().attr("__name__"))));
    }
  }
  return t;
}

}  // namespace

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return py::dtype::of<float>();
    case kFloat64:
      return py::dtype::of<double>();
    case kInt32:
      return py::dtype::of<int32_t>();
    case kInt64:
      return py::dtype::of<int64_t>();
    case kUInt8:
      return py::dtype::of<uint8_t>();
    case kBool:
      return py::dtype::of<bool>();
    case kString:
      return py::dtype("O");
    default:
      throw InvalidArgument("dtype ", static_cast<int>(dtype), " has no numpy dtype");
  }
}

DType FromNumpyDType(const py::dtype& dt) {
  if (!dt.attr("isnative").cast<bool>()) return DType::kInvalid;
  char kind = dt.kind();
  ssize_t size = dt.itemsize();
  switch (kind) {
    case 'f':
      return size == 4 ? kFloat32 : size == 8 ? kFloat64 : DType::kInvalid;
    case 'i':
      return size == 4 ? kInt32 : size == 8 ? kInt64 : DType::kInvalid;
    case 'u':
      return size == 1 ? kUInt8 : DType::kInvalid;
    case 'b':
      return kBool;
    case 'S':
    case 'U':
    case 'O':
      return kString;
    default:
      return DType::kInvalid;
  }
}

DType ToDType(py::handle value) {
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  if (py::isinstance<py::str>(value)) return DTypeFromName(value.cast<std::string>());
  // A numpy dtype, a numpy scalar type (np.float32) or a Python type (float, int, bool).
  py::object dt;
  try {
    dt = Numpy().attr("dtype")(value);
  } catch (const py::error_already_set&) {
    throw InvalidArgument("cannot interpret ", std::string(py::repr(value)), " as a dtype");
  }
  if (value.is(py::type::of(py::float_(0.0)))) return kFloat32;  // TF: float is float32
  if (value.is(py::type::of(py::int_(0)))) return kInt32;        // and int is int32
  DType d = FromNumpyDType(dt.cast<py::dtype>());
  if (d == DType::kInvalid) {
    throw InvalidArgument("Loom has no dtype for numpy's ", std::string(py::str(dt)),
                          "; use float32, float64, int32, int64, uint8, bool or string");
  }
  return d;
}

namespace {

// numpy's own dtype object for a Loom dtype (kInvalid for strings and others): the one
// numpy gives every native-order array of that type, so an identity test finds it.
PyObject* ExactNumpyDType(DType dtype) {
  static PyObject* const table[] = {
      NumpyDType(kFloat32).release().ptr(), NumpyDType(kFloat64).release().ptr(),
      NumpyDType(kInt32).release().ptr(),   NumpyDType(kInt64).release().ptr(),
      NumpyDType(kUInt8).release().ptr(),   NumpyDType(kBool).release().ptr()};
  switch (dtype) {
    case kFloat32:
      return table[0];
    case kFloat64:
      return table[1];
    case kInt32:
      return table[2];
    case kInt64:
      return table[3];
    case kUInt8:
      return table[4];
    case kBool:
      return table[5];
    default:
      return nullptr;
  }
}

// `array`'s memory as a Tensor of `dtype` that holds a reference to the array.
Tensor BorrowArray(const py::array& array, DType dtype) {
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  return Tensor::Borrowed(dtype, Shape(std::move(dims)), const_cast<void*>(array.data()),
                          [owner] { ReleaseFromAnyThread(owner); });
}

}  // namespace

Tensor ToTensor(py::handle value, DType want, std::string_view what) {
  // The common feed: an aligned C-contiguous array of exactly the wanted dtype, borrowed
  // with no call into Python (Session.run's per-step cost).
  if (want != DType::kInvalid && py::isinstance<py::array>(value)) {
    auto array = py::reinterpret_borrow<py::array>(value);
    PyObject* exact = ExactNumpyDType(want);
    if (exact != nullptr && array.dtype().ptr() == exact && (array.flags() & py::array::c_style) &&
        reinterpret_cast<uintptr_t>(array.data()) % DTypeSize(want) == 0) {
      return BorrowArray(array, want);
    }
  }
  py::module_& np = Numpy();
  py::array array;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
  } else {
    bool numpy_scalar = py::isinstance(value, np.attr("generic"));
    array = np.attr("asarray")(value);
    if (want == DType::kInvalid && !numpy_scalar) {
      // Python numbers and lists: float32 and int32, as TF converts them.
      char kind = array.dtype().kind();
      if (kind == 'f') {
        want = kFloat32;
      } else if (kind == 'i') {
        bool fits = array.size() == 0 || (np.attr("min")(array).cast<int64_t>() >= INT32_MIN &&
                                          np.attr("max")(array).cast<int64_t>() <= INT32_MAX);
        want = fits ? kInt32 : kInt64;
      }
    }
  }
  DType have = FromNumpyDType(array.dtype());
  if (have == DType::kInvalid) {
    throw InvalidArgument(what, ": numpy dtype ", std::string(py::str(array.dtype())),
                          " has no Loom dtype; use float32, float64, int32, int64, uint8, bool "
                          "or bytes");
  }
  if (want == DType::kInvalid) want = have;
  if (want == kString || have == kString) {
    if (want != have) {
      throw InvalidArgument(what, ": cannot convert a ", DTypeName(have), " value to ",
                            DTypeName(want));
    }
    return StringTensor(array, what);
  }
  if (have != want) {
    py::dtype target = NumpyDType(want);
    // An empty value loses nothing (numpy makes [] float64; TF feeds it to any dtype).
    if (array.size() != 0 &&
        !np.attr("can_cast")(array.dtype(), target, "same_kind").cast<bool>()) {
      throw InvalidArgument(what, ": cannot convert a ", DTypeName(have), " value to ",
                            DTypeName(want),
                            " without losing information; cast it first "
                            "(numpy's astype, or tf.cast)");
    }
    array = array.attr("astype")(target, py::arg("order") = "C");
  } else if (!(array.flags() & py::array::c_style) ||
             reinterpret_cast<uintptr_t>(array.data()) % DTypeSize(want) != 0) {
    array = np.attr("ascontiguousarray")(array);
  }
  return BorrowArray(array, want);
}

py::object ToNumpy(Tensor tensor) {
  const std::vector<int64_t>& dims = tensor.shape().dims();
  std::vector<ssize_t> shape(dims.begin(), dims.end());
  if (tensor.dtype() == kString) {
    py::array out(py::dtype("O"), shape);
    py::object flat = out.attr("reshape")(-1);
    auto values = tensor.flat<std::string>();
    for (size_t i = 0; i < values.size(); ++i) {
      flat[py::int_(i)] = py::bytes(values[i]);
    }
    return tensor.rank() == 0 ? py::object(out[py::tuple()]) : py::object(out);
  }
  py::dtype dt = NumpyDType(tensor.dtype());
  if (tensor.rank() > 0 && tensor.NumElements() > 0 && tensor.BufferIsUnique() &&
      tensor.buffer()->owned()) {
    void* data = tensor.raw_data();
    auto* keep = new Tensor(std::move(tensor));
    py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(dt, shape, data, owner);
  }
  py::array out(dt, shape);
  if (tensor.NumElements() > 0) {
    std::memcpy(out.mutable_data(), tensor.raw_data(), tensor.TotalBytes());
  }
  // A scalar comes back as a numpy scalar (np.float32(1.0), bytes), as TF returns it.
  return tensor.rank() == 0 ? py::object(out[py::tuple()]) : py::object(out);
}

Shape ToShape(py::handle value) {
  if (value.is_none()) return Shape::Unknown();
  if (py::hasattr(value, "as_list") && !py::isinstance<py::list>(value)) {
    // A TensorShape-like object (loom.compat.v1.TensorShape).
    py::object dims = value.attr("dims");
    if (dims.is_none()) return Shape::Unknown();
    return ToShape(dims);
  }
  if (py::isinstance<py::int_>(value)) return Shape({value.cast<int64_t>()});
  std::vector<int64_t> dims;
  for (py::handle d : value) {
    if (d.is_none()) {
      dims.push_back(kUnknownDim);
    } else if (py::hasattr(d, "value") && !py::isinstance<py::int_>(d)) {
      py::object v = d.attr("value");  // a Dimension
      dims.push_back(v.is_none() ? kUnknownDim : v.cast<int64_t>());
    } else {
      dims.push_back(AsInt(d));
    }
  }
  return Shape(dims);
}

py::object FromShape(const Shape& shape) {
  if (!shape.rank_known()) return py::none();
  py::list dims;
  for (int64_t d : shape.dims()) {
    if (d == kUnknownDim) {
      dims.append(py::none());
    } else {
      dims.append(d);
    }
  }
  return dims;
}

AttrValue ToAttrValue(py::handle value, AttrType type, std::string_view owner,
                      std::string_view attr) {
  try {
    switch (type) {
      case AttrType::kInt:
        return AsInt(value);
      case AttrType::kFloat:
        return AsFloat(value);
      case AttrType::kBool:
        return value.cast<bool>();
      case AttrType::kString:
        return value.cast<std::string>();
      case AttrType::kType:
        return ToDType(value);
      case AttrType::kShape:
        return ToShape(value);
      case AttrType::kTensor:
        return ToTensor(value, DType::kInvalid, attr).Clone();
      case AttrType::kIntList: {
        if (py::isinstance<py::int_>(value)) return std::vector<int64_t>{value.cast<int64_t>()};
        std::vector<int64_t> v;
        for (py::handle x : value) v.push_back(AsInt(x));
        return v;
      }
      case AttrType::kFloatList: {
        std::vector<double> v;
        for (py::handle x : value) v.push_back(AsFloat(x));
        return v;
      }
      case AttrType::kStringList:
        return value.cast<std::vector<std::string>>();
      case AttrType::kTypeList: {
        std::vector<DType> v;
        for (py::handle x : value) v.push_back(ToDType(x));
        return v;
      }
      case AttrType::kShapeList: {
        std::vector<Shape> v;
        for (py::handle x : value) v.push_back(ToShape(x));
        return v;
      }
      case AttrType::kHostObject:
        break;
    }
  } catch (const py::error_already_set& e) {
    throw InvalidArgument(owner, ": attribute '", attr, "' must be ", AttrTypeName(type), ", got ",
                          std::string(py::repr(value)));
  } catch (const py::cast_error& e) {
    throw InvalidArgument(owner, ": attribute '", attr, "' must be ", AttrTypeName(type), ", got ",
                          std::string(py::repr(value)));
  }
  throw InvalidArgument(owner, ": attribute '", attr, "' is a host object; Python cannot set it");
}

py::object FromAttrValue(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, HostObject>) {
          return py::str("<host object " + v.type_name() + ">");
        } else if constexpr (std::is_same_v<T, Shape>) {
          return FromShape(v);
        } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
          py::list l;
          for (const Shape& s : v) l.append(FromShape(s));
          return l;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return ToNumpy(v);
        } else {
          return py::cast(v);
        }
      },
      value);
}

}  // namespace loom::python
