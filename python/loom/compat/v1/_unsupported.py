"""TF1 names that Loom does not have, and the error that names them.

A module of the package lists the TF1 names it lacks with the reason, and installs
`missing(...)` as its module `__getattr__` (PEP 562): `tf.cond` is then an
UnsupportedAPIError ("tf.cond is not supported by Loom: ...") at the line that uses it,
instead of a bare AttributeError, or one deep inside a later call. UnsupportedAPIError is
both an AttributeError (so `hasattr(tf, "cond")` is False and feature probes keep working)
and a NotImplementedError. docs/python.md and docs/python_core.md list the same names."""

_DOCS = "docs/python.md and docs/python_core.md list what Loom supports"


class UnsupportedAPIError(AttributeError, NotImplementedError):
    """A TF1 API that Loom does not provide."""


def missing(prefix, names):
    """A module __getattr__ for `prefix` (e.g. "tf.metrics") that raises
    UnsupportedAPIError for each of `names` (name -> reason) and a plain AttributeError
    naming the full TF path for anything else."""

    def __getattr__(name):
        if name.startswith("__"):  # copy, pickle, doctest probes: the plain protocol
            raise AttributeError(name)
        full = "%s.%s" % (prefix, name)
        if name in names:
            raise UnsupportedAPIError("%s is not supported by Loom: %s (%s)"
                                      % (full, names[name], _DOCS))
        raise AttributeError("%s does not exist in Loom's TF1 API (%s)" % (full, _DOCS))

    __getattr__.missing_names = names  # for the test that no listed name is defined
    return __getattr__
