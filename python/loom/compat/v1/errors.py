"""tf.errors: OpError and its subclasses. Loom's C++ errors arrive as these classes, with
TF's error codes and the C++ message intact (`e.message`); `e.node_name` is the graph
node the message names, when it names one."""
from loom import _loom

OpError = _loom.OpError
CancelledError = _loom.CancelledError
UnknownError = _loom.UnknownError
InvalidArgumentError = _loom.InvalidArgumentError
NotFoundError = _loom.NotFoundError
AlreadyExistsError = _loom.AlreadyExistsError
ResourceExhaustedError = _loom.ResourceExhaustedError
FailedPreconditionError = _loom.FailedPreconditionError
AbortedError = _loom.AbortedError
OutOfRangeError = _loom.OutOfRangeError
UnimplementedError = _loom.UnimplementedError
InternalError = _loom.InternalError
UnavailableError = _loom.UnavailableError
DataLossError = _loom.DataLossError

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
