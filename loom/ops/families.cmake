# math family (elementwise, reductions, matmul):
list(APPEND LOOM_OPS_SRCS math.cc math_select.cc reduce.cc matmul.cc)
# g++ -O2's "very cheap" cost model skips loops that need an alias check or an epilogue,
# which is every kernel loop here (outputs may alias inputs); measured: 0 vs ~900 loops.
set_source_files_properties(math.cc math_select.cc reduce.cc matmul.cc PROPERTIES COMPILE_OPTIONS $<$<CXX_COMPILER_ID:GNU>:-fvect-cost-model=dynamic>)  # a GCC flag
loom_test(ops_math_test SRCS math_test.cc reduce_test.cc matmul_test.cc DEPS loom_runtime)
# array family:
list(APPEND LOOM_OPS_SRCS array.cc array_transpose.cc array_join.cc array_index.cc array_gather.cc)
loom_test(ops_array_test SRCS array_test.cc random_test.cc DEPS loom_runtime)
# nn family:
list(APPEND LOOM_OPS_SRCS nn_activations.cc nn_conv.cc nn_pool.cc nn_losses.cc nn_norms.cc)
loom_test(ops_nn_test SRCS nn_test.cc nn_conv_test.cc DEPS loom_runtime)
# random family:
list(APPEND LOOM_OPS_SRCS random.cc)
