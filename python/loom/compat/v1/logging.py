"""tf.logging: TF1's logging functions over Python's logging module (logger "loom")."""
import logging as _logging

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARNING
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.CRITICAL

_logger = _logging.getLogger("loom")
if not _logger.handlers:
    _handler = _logging.StreamHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:loom:%(message)s"))
    _logger.addHandler(_handler)
    _logger.propagate = False
_logger.setLevel(WARN)


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.critical(msg, *args, **kwargs)


_counts = {}


def log_every_n(level, msg, n, *args):
    """Logs on the first call from a call site and every n-th after it."""
    import inspect
    frame = inspect.currentframe().f_back
    key = (frame.f_code.co_filename, frame.f_lineno)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % n == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    import inspect
    frame = inspect.currentframe().f_back
    key = (frame.f_code.co_filename, frame.f_lineno, "first")
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        _logger.log(level, msg, *args)


def log_if(level, msg, condition, *args):
    if condition:
        _logger.log(level, msg, *args)


def log(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)
