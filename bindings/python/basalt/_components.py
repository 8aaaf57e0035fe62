"""The backend and KV-cache parts shared by basalt_session_params and basalt_engine_params: component names,
their basalt_params dicts, the device and the K/V storage keywords.
"""
import ctypes
from ctypes import c_char_p

from . import _capi
from ._convert import _int


def _params(d, keep):
    """A basalt_params over the str items of dict d; keep holds the buffers it points into."""
    keys = (c_char_p * len(d))(*[str(k).encode() for k in d])
    values = (c_char_p * len(d))(*[str(v).encode() for v in d.values()])
    keep.extend([keys, values])
    prm = _capi.Params()
    prm.struct_size = ctypes.sizeof(prm)
    prm.count = len(d)
    prm.keys = ctypes.cast(keys, ctypes.POINTER(c_char_p))
    prm.values = ctypes.cast(values, ctypes.POINTER(c_char_p))
    keep.append(prm)
    return prm


def _kv_types(kv_params, k_type, v_type, kv_residual):
    """kv_params with the k_type / v_type / kv_residual keyword arguments merged in (None: left out)."""
    out = dict(kv_params or {})
    for key, value in (("k_type", k_type), ("v_type", v_type), ("residual", kv_residual)):
        if value is not None:
            out[key] = str(value)
    return out or None


def _set_components(p, backend, kv_cache, backend_params, device, kv_params, keep):
    """Fills the backend/cache fields shared by basalt_session_params and basalt_engine_params; the ctypes objects
    they point to are appended to keep (which must outlive the create call)."""
    p.backend = backend.encode() if backend else None
    p.kv_cache = kv_cache.encode() if kv_cache else None
    bp = dict(backend_params or {})
    if device is not None:
        bp["device"] = str(_int(device, "device", 0))
    if bp:
        p.backend_params = ctypes.pointer(_params(bp, keep))
    if kv_params:
        p.kv_params = ctypes.pointer(_params(kv_params, keep))
