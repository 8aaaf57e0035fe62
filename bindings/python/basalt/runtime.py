"""The runtime: the loaded plugins and the samplers registered from Python (Runtime), and the library's
version and path.
"""
import ctypes
from ctypes import byref, c_void_p

from . import _capi
from ._convert import _str
from ._lifetime import _Owned
from .errors import _check
from .samplers import _SamplerRegistration


def version():
    """The library version, e.g. "0.1.0"."""
    return _capi.lib().basalt_version_string().decode()


def library_path():
    """The path libbasalt was loaded from."""
    return _capi.lib().basalt_library_path


class Runtime(_Owned):
    """The loaded plugins (discovered beside libbasalt and in $BASALT_PLUGIN_PATH unless disabled) plus the
    samplers registered from Python. Everything created from a runtime (models, sessions, chains, engines)
    keeps it alive. close() first closes everything made from it that is still open (their calls then raise
    ValueError), then unloads the plugins."""

    def __init__(self, plugins=(), default_plugins=True, env_plugins=True):
        self._lib = _capi.lib()
        self._registrations = []  # keeps the ctypes callbacks of registered samplers alive
        params = _capi.RuntimeParams(ctypes.sizeof(_capi.RuntimeParams), 0)
        if not default_plugins:
            params.flags |= _capi.RUNTIME_NO_DEFAULT_PLUGINS
        if not env_plugins:
            params.flags |= _capi.RUNTIME_NO_ENV_PLUGINS
        handle = c_void_p()
        _check(self._lib.basalt_runtime_create(byref(params), byref(handle)))
        # the registrations' callbacks stay alive as long as the C runtime (and the chains that call them)
        self._own(handle, self._lib.basalt_runtime_destroy, keep=self._registrations)
        for path in plugins:
            self.load_plugin(path)

    def load_plugin(self, path):
        """Loads one plugin library (its components become available); raises BasaltError naming the file."""
        _check(self._lib.basalt_runtime_load_plugin(self._h, str(path).encode()))

    def components(self):
        """Every loaded component as a dict: kind, name, description, version, plugin, file."""
        out = []
        kinds = {1: "backend", 2: "kv_cache", 3: "sampler", 4: "decoder", 5: "steering"}
        for i in range(self._lib.basalt_runtime_component_count(self._h)):
            info = _capi.ComponentInfo()
            info.struct_size = ctypes.sizeof(info)
            _check(self._lib.basalt_runtime_component_info(self._h, i, byref(info)))
            out.append({
                "kind": kinds.get(info.kind, str(info.kind)),
                "name": _str(info.name),
                "description": _str(info.description),
                "version": (info.version_major, info.version_minor, info.version_patch),
                "plugin": _str(info.plugin_name),
                "file": _str(info.file),
            })
        return out

    def samplers(self):
        """Names of the samplers available to chains."""
        return [c["name"] for c in self.components() if c["kind"] == "sampler"]

    def register_sampler(self, name, sampler_class, flags=None):
        """Registers a sampler written in Python under `name` (see Sampler). flags defaults to
        sampler_class.flags. Raises BasaltError (status ERR_DUPLICATE) when a sampler of that name exists."""
        reg = _SamplerRegistration(name, sampler_class, sampler_class.flags if flags is None else flags)
        _check(self._lib.basalt_runtime_register_sampler(self._h, name.encode(), byref(reg.iface)))
        self._registrations.append(reg)
