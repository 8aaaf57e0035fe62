"""The errors of the package: one hierarchy rooted at BasaltError.

    BasaltError            a failed Basalt call: .status (a basalt_status code), .status_name, str() the message
    |-- RequestError       a request that finished with reason "error" (.request; .status is ERR_INTERNAL)
    `-- SamplerError       raised by a sampler written in Python to fail with a status (default ERR_INVALID_ARGUMENT)

`except basalt.BasaltError` catches all three; each subclass is caught by its own name as well. Misuse from
Python is reported with Python's own classes, never these: TypeError (a wrong type), ValueError (a value out of
range, or a call on a closed object), RuntimeError (step(), run() or close() from inside an engine's callback),
OSError (libbasalt cannot be loaded).
"""
from . import _capi


class BasaltError(Exception):
    """A failed Basalt call: .status is the basalt_status code, .status_name its name, str() the message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self._status_name = None  # read from libbasalt when first asked: a SamplerError needs no library to exist

    @property
    def status_name(self):
        """The name of .status, e.g. "BASALT_ERR_INVALID_ARGUMENT" (basalt_status_name)."""
        if self._status_name is None:
            self._status_name = _capi.lib().basalt_status_name(self.status).decode()
        return self._status_name

    @status_name.setter
    def status_name(self, name):
        self._status_name = name


class RequestError(BasaltError):
    """A request that finished with reason "error" (its decoder, a sampler of its chain or the forward pass
    failed), raised by the request's iteration, text() and tokens(). str() is the request's message; .request is
    the Request. The C API keeps no status for a failed request: .status is BASALT_ERR_INTERNAL."""

    def __init__(self, message, request):
        super().__init__(_capi.ERR_INTERNAL, message)
        self.request = request


class SamplerError(BasaltError):
    """Raise from a Python sampler to fail with a given status (default ERR_INVALID_ARGUMENT); the message
    reaches basalt_last_error() prefixed with the sampler's name. A BasaltError, so .status_name is set too."""

    def __init__(self, message, status=_capi.ERR_INVALID_ARGUMENT):
        super().__init__(status, message)


def _check(status):
    """Raises BasaltError with the library's last error message when status is not BASALT_OK."""
    if status != _capi.OK:
        raise BasaltError(status, _capi.lib().basalt_last_error().decode("utf-8", "replace"))
