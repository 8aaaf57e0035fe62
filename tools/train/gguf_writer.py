"""A minimal GGUF v3 writer (numpy only): metadata key/values and F32/F16 tensors, 32-byte aligned.

Follows the GGUF specification: header (magic, version, tensor count, key/value count), the key/values,
the tensor infos (name, dims with ne[0] innermost, type, offset into the data section), padding to the
alignment, then the tensor data, each tensor starting at a multiple of the alignment.
"""
import struct

import numpy as np

ALIGNMENT = 32
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_UINT64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16 = 0, 1


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class GGUFWriter:
    def __init__(self):
        self.kv = []  # (key, type, payload bytes)
        self.tensors = []  # (name, ggml type, array)

    def add_u32(self, key, v):
        self.kv.append((key, T_UINT32, struct.pack("<I", v)))

    def add_i32(self, key, v):
        self.kv.append((key, T_INT32, struct.pack("<i", v)))

    def add_f32(self, key, v):
        self.kv.append((key, T_FLOAT32, struct.pack("<f", v)))

    def add_bool(self, key, v):
        self.kv.append((key, T_BOOL, struct.pack("<B", 1 if v else 0)))

    def add_string(self, key, v):
        self.kv.append((key, T_STRING, _string(v)))

    def add_array(self, key, elem_type, values):
        body = struct.pack("<IQ", elem_type, len(values))
        if elem_type == T_STRING:
            body += b"".join(_string(v) for v in values)
        elif elem_type == T_FLOAT32:
            body += np.asarray(values, dtype="<f4").tobytes()
        elif elem_type == T_INT32:
            body += np.asarray(values, dtype="<i4").tobytes()
        else:
            raise ValueError(f"unsupported array element type {elem_type}")
        self.kv.append((key, T_ARRAY, body))

    def add_tensor(self, name, array: np.ndarray, ggml_type: int):
        dtype = {GGML_F32: "<f4", GGML_F16: "<f2"}[ggml_type]
        self.tensors.append((name, ggml_type, np.ascontiguousarray(array, dtype=dtype)))

    def write(self, path: str):
        out = bytearray()
        out += b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        for key, t, payload in self.kv:
            out += _string(key) + struct.pack("<I", t) + payload
        offset = 0
        offsets = []
        for name, t, a in self.tensors:
            offsets.append(offset)
            ne = list(reversed(a.shape))  # numpy is row-major: the last axis is GGUF's ne[0]
            out += _string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
            out += struct.pack("<IQ", t, offset)
            offset += (a.nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        out += b"\0" * (-len(out) % ALIGNMENT)
        for (name, t, a), off in zip(self.tensors, offsets):
            out += a.tobytes()
            out += b"\0" * (-len(out) % ALIGNMENT)
        with open(path, "wb") as f:
            f.write(out)
