# math family (elementwise, reductions, matmul):
# array family:
# nn family:
# random family:
