"""Just enough of the ONNX protobuf wire format to write a model, so converting needs no ``onnx``.

The ``onnx`` package (31 MB installed, plus ml_dtypes) would only be used to serialise one graph
once; onnxruntime reads the bytes this writes. Field numbers are those of onnx.proto (IR version 9):
ModelProto ir_version=1 producer_name=2 graph=7 opset_import=8; OperatorSetIdProto domain=1
version=2; GraphProto node=1 name=2 initializer=5 input=11 output=12; NodeProto input=1 output=2
name=3 op_type=4 attribute=5 domain=7; AttributeProto name=1 f=2 i=3 s=4 type=20 (FLOAT=1, INT=2, STRING=3);
TensorProto dims=1 data_type=2 name=8 raw_data=9 (little-endian); ValueInfoProto name=1 type=2;
TypeProto tensor_type=1; TypeProto.Tensor elem_type=1 shape=2; TensorShapeProto dim=1;
Dimension dim_value=1 dim_param=2.
"""
from __future__ import annotations

import struct
from typing import Iterable

import numpy as np

IR_VERSION = 9
FLOAT, UINT8, INT8, INT32, INT64, FLOAT16 = 1, 2, 3, 6, 7, 10
_ELEM = {np.dtype("float32"): FLOAT, np.dtype("uint8"): UINT8, np.dtype("int8"): INT8,
         np.dtype("int32"): INT32, np.dtype("int64"): INT64, np.dtype("float16"): FLOAT16}


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    return _key(field, 2) + _varint(len(value)) + value


def _msgs(field: int, parts: Iterable[bytes]) -> bytes:
    return b"".join(_bytes(field, p) for p in parts)


def tensor(name: str, array: np.ndarray) -> bytes:
    array = np.asarray(array, order="C")  # (ascontiguousarray would make a scalar 1-D)
    dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
    return (b"".join(_int(1, d) for d in array.shape) + _int(2, _ELEM[np.dtype(dtype.name)])
            + _bytes(8, name) + _bytes(9, array.astype(dtype.newbyteorder("<"), copy=False).tobytes()))


def attribute(name: str, value: int | float | str) -> bytes:
    if isinstance(value, str):
        return _bytes(1, name) + _bytes(4, value) + _int(20, 3)
    if isinstance(value, float):
        return _bytes(1, name) + _key(2, 5) + struct.pack("<f", value) + _int(20, 1)
    return _bytes(1, name) + _int(3, int(value)) + _int(20, 2)


def node(op: str, inputs: list[str], outputs: list[str], name: str, domain: str = "", **attrs: int | float | str) -> bytes:
    return (b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs) + _bytes(3, name)
            + _bytes(4, op) + _msgs(5, (attribute(k, v) for k, v in sorted(attrs.items())))
            + (_bytes(7, domain) if domain else b""))


def value_info(name: str, elem: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem) + _bytes(2, shape)))


def model(nodes: list[bytes], initializers: list[bytes], inputs: list[bytes], outputs: list[bytes],
          opsets: dict[str, int], producer: str = "wikimem") -> bytes:
    graph = _msgs(1, nodes) + _bytes(2, "e5") + _msgs(5, initializers) + _msgs(11, inputs) + _msgs(12, outputs)
    return (_int(1, IR_VERSION) + _bytes(2, producer) + _bytes(7, graph)
            + _msgs(8, (_bytes(1, d) + _int(2, v) if d else _int(2, v) for d, v in opsets.items())))
