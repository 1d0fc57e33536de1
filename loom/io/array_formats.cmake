# Array formats: safetensors, npy, IDX, CSV. Their own library, loom_io_arrays, so that it
# builds independently of the record formats; the two are combined into loom_io later.
# Paths are absolute (CMAKE_CURRENT_LIST_DIR) so the lists work from any includer.
set(_loom_io_array_srcs array_layout.cc safetensors.cc npy.cc idx.cc csv.cc)
set(_loom_io_array_tests safetensors_test.cc npy_test.cc idx_test.cc csv_test.cc)
list(TRANSFORM _loom_io_array_srcs PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
list(TRANSFORM _loom_io_array_tests PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
list(APPEND LOOM_IO_ARRAY_SRCS ${_loom_io_array_srcs})
list(APPEND LOOM_IO_ARRAY_TESTS ${_loom_io_array_tests})

loom_library(loom_io_arrays
  SRCS ${_loom_io_array_srcs}
  DEPS loom_tensor nlohmann_json::nlohmann_json ZLIB::ZLIB)
loom_test(io_array_test SRCS ${_loom_io_array_tests}
  DEPS loom_io_arrays nlohmann_json::nlohmann_json ZLIB::ZLIB)
