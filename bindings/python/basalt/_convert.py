"""Python values to C arguments, checked: ctypes silently wraps an int past 32 bits and turns an int into
NUL bytes where a string is due, so every value crossing the ABI goes through these first.
"""
import operator
from ctypes import c_int32


def _str(s):
    return s.decode("utf-8", "replace") if s is not None else None


_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _int(value, what, lo=_INT32_MIN, hi=_INT32_MAX):
    """value as an int in [lo, hi]; TypeError (not an integer) or ValueError (out of range) naming `what`: ctypes
    would silently wrap a value past 32 bits (2**32 + 300 reads as 300)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = operator.index(value)  # numpy integers and the like
        except TypeError:
            raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{what} {value} is out of range ({lo}..{hi})")
    return value


def _ids(values, what):
    """A sequence of token ids checked by _int, as a ctypes int32 array."""
    checked = [_int(v, f"{what}[{i}]") for i, v in enumerate(values)]
    return (c_int32 * len(checked))(*checked)


def _text_bytes(text, what):
    """str as UTF-8, or a bytes-like object; TypeError for anything else (an int would become NUL bytes)."""
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"{what} must be str or bytes, not {type(text).__name__}")


def _c_string(text, what):
    """_text_bytes for a field the C API reads up to its first NUL byte: ValueError naming `what` when the text
    holds one (ctypes would pass it and C would silently cut the text there)."""
    data = _text_bytes(text, what)
    at = data.find(b"\0")
    if at >= 0:
        raise ValueError(f"{what} contains a NUL byte (at byte {at} of {data[:40]!r}); the C API would cut the "
                         f"text there")
    return data


def _u32(name, value):
    return _int(value, name, 0, 0xFFFFFFFF)


def _u64(name, value):
    return _int(value, name, 0, 0xFFFFFFFFFFFFFFFF)


def _i32(name, value, low=_INT32_MIN):
    return _int(value, name, low)
