"""CDR (the ROS 2 wire format) for messages given as .msg definitions, ROS-free.

Little-endian XCDR1 with the 4-byte encapsulation header (0, 1, 0, 0); every primitive aligned to
its size counted from the end of that header; strings as a uint32 length with the terminating NUL;
sequences as a uint32 count; fixed arrays without one; no padding after the last field (what
rmw_fastrtps and rosbag2 produce). A message is a dict of its fields (nested messages dicts, arrays
lists); absent fields encode as their zero value. Each type compiles once into a list of steps.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from acres_sim.cdr_encoding import ENCAPSULATION, align
from acres_sim.episode.msgdef import DefinitionError, Field, MessageDef, parse, type_key

_FORMATS = {"bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
            "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
_ZERO: dict[str, Any] = {"bool": False, "float32": 0.0, "float64": 0.0, "string": ""}
_U32 = struct.Struct("<I")


class CdrError(ValueError):
    """Bytes that are not a CDR message of the expected type (too short, wrong header, bad text)."""


Encoder = Callable[[bytearray, Any], None]
Decoder = Callable[[memoryview, int], tuple[Any, int]]


_BODY = len(ENCAPSULATION)  # alignment counts from here


def _pad(buffer: bytearray, size: int) -> None:
    gap = align(len(buffer) - _BODY, size) - (len(buffer) - _BODY)
    if gap:
        buffer += b"\x00" * gap


def _aligned(offset: int, size: int) -> int:
    return _BODY + align(offset - _BODY, size)


class Codec:
    """Encoders and decoders for every type of a set of .msg texts ('pkg/msg/Type' -> text)."""

    def __init__(self, texts: Mapping[str, str]):
        self._defs: dict[str, MessageDef] = {type_key(k): parse(k, v) for k, v in texts.items()}
        self._encoders: dict[str, Encoder] = {}
        self._decoders: dict[str, Decoder] = {}

    def definition(self, type_name: str) -> MessageDef:
        try:
            return self._defs[type_key(type_name)]
        except KeyError:
            raise DefinitionError(f"no definition of {type_name}") from None

    def encode(self, type_name: str, message: Mapping[str, Any]) -> bytes:
        buffer = bytearray(ENCAPSULATION)
        self._encoder(type_key(type_name))(buffer, message)
        return bytes(buffer)

    def decode(self, type_name: str, data: bytes | memoryview) -> dict[str, Any]:
        view = memoryview(data)
        if len(view) < 4 or bytes(view[:2]) != ENCAPSULATION[:2]:
            raise CdrError(f"{type_name}: not little-endian CDR (header {bytes(view[:4]).hex()})")
        try:
            message, _end = self._decoder(type_key(type_name))(view, 4)
        except (struct.error, IndexError) as exc:
            raise CdrError(f"{type_name}: {len(view)} bytes end early ({exc})") from None
        except UnicodeDecodeError as exc:
            raise CdrError(f"{type_name}: a string is not UTF-8 ({exc})") from None
        return message

    # -- compiling -------------------------------------------------------------------------------

    def _encoder(self, key: str) -> Encoder:
        if key not in self._encoders:
            fields = self.definition(key).fields
            steps = [(f.name, self._field_encoder(f), self._zero(f)) for f in fields]

            def encode(buffer: bytearray, message: Any) -> None:
                for name, step, zero in steps:
                    value = message.get(name, zero) if message is not None else zero
                    step(buffer, zero if value is None else value)
            self._encoders[key] = encode
        return self._encoders[key]

    def _zero(self, field: Field) -> Any:
        if field.length is not None:
            one = self._zero(Field(field.name, field.type, None))
            return [] if field.length < 0 else [one] * field.length
        if field.type in _FORMATS:
            return _ZERO.get(field.type, 0)
        if field.type == "string":
            return ""
        return {}

    def _field_encoder(self, field: Field) -> Encoder:
        kind, length = field.type, field.length
        if kind in _FORMATS:
            fmt = _FORMATS[kind]
            size = struct.calcsize(fmt)
            if length is None:
                one = struct.Struct("<" + fmt)

                def put(buffer: bytearray, value: Any) -> None:
                    _pad(buffer, size)
                    buffer += one.pack(value)
                return put

            def put_many(buffer: bytearray, values: Any) -> None:
                values = list(values)
                if length < 0:
                    _pad(buffer, 4)
                    buffer += _U32.pack(len(values))
                elif len(values) != length:
                    raise CdrError(f"{field.name}: {length} values wanted, got {len(values)}")
                if values:
                    _pad(buffer, size)
                    buffer += struct.pack(f"<{len(values)}{fmt}", *values)
            return put_many
        if kind == "string":
            def put_text(buffer: bytearray, value: Any) -> None:
                raw = str(value).encode("utf-8")
                _pad(buffer, 4)
                buffer += _U32.pack(len(raw) + 1) + raw + b"\x00"
            if length is None:
                return put_text
            return self._array(field, put_text)
        nested = self._lazy_encoder(kind)
        return nested if length is None else self._array(field, nested)

    def _lazy_encoder(self, key: str) -> Encoder:
        def encode(buffer: bytearray, value: Any) -> None:
            self._encoder(key)(buffer, value)
        return encode

    @staticmethod
    def _array(field: Field, one: Encoder) -> Encoder:
        length = field.length
        assert length is not None

        def put(buffer: bytearray, values: Any) -> None:
            values = list(values)
            if length < 0:
                _pad(buffer, 4)
                buffer += _U32.pack(len(values))
            elif len(values) != length:
                raise CdrError(f"{field.name}: {length} values wanted, got {len(values)}")
            for value in values:
                one(buffer, value)
        return put

    def _decoder(self, key: str) -> Decoder:
        if key not in self._decoders:
            steps = [(f.name, self._field_decoder(f)) for f in self.definition(key).fields]

            def decode(view: memoryview, offset: int) -> tuple[Any, int]:
                message = {}
                for name, step in steps:
                    message[name], offset = step(view, offset)
                return message, offset
            self._decoders[key] = decode
        return self._decoders[key]

    def _field_decoder(self, field: Field) -> Decoder:
        kind, length = field.type, field.length
        if kind in _FORMATS:
            fmt = _FORMATS[kind]
            size = struct.calcsize(fmt)
            if length is None:
                one = struct.Struct("<" + fmt)

                def get(view: memoryview, offset: int) -> tuple[Any, int]:
                    offset = _aligned(offset, size)
                    return one.unpack_from(view, offset)[0], offset + size
                return get

            def get_many(view: memoryview, offset: int) -> tuple[Any, int]:
                count = length
                if count < 0:
                    offset = _aligned(offset, 4)
                    count = _U32.unpack_from(view, offset)[0]
                    offset += 4
                    if count * size > len(view) - offset:
                        raise CdrError(f"{field.name}: {count} elements do not fit")
                if count:
                    offset = _aligned(offset, size)
                    values = list(struct.unpack_from(f"<{count}{fmt}", view, offset))
                    return values, offset + count * size
                return [], offset
            return get_many
        if kind == "string":
            def get_text(view: memoryview, offset: int) -> tuple[Any, int]:
                offset = _aligned(offset, 4)
                size = _U32.unpack_from(view, offset)[0]
                start, end = offset + 4, offset + 4 + size
                if size == 0 or end > len(view):
                    raise CdrError(f"{field.name}: a string of {size} bytes does not fit")
                return bytes(view[start:end - 1]).decode("utf-8"), end
            return get_text if length is None else self._array_decoder(field, get_text)
        nested = self._lazy_decoder(kind)
        return nested if length is None else self._array_decoder(field, nested)

    def _lazy_decoder(self, key: str) -> Decoder:
        def decode(view: memoryview, offset: int) -> tuple[Any, int]:
            return self._decoder(key)(view, offset)
        return decode

    @staticmethod
    def _array_decoder(field: Field, one: Decoder) -> Decoder:
        length = field.length
        assert length is not None

        def get(view: memoryview, offset: int) -> tuple[Any, int]:
            count = length
            if count < 0:
                offset = _aligned(offset, 4)
                count = _U32.unpack_from(view, offset)[0]
                offset += 4
                if count > len(view) - offset:  # every element takes a byte at least
                    raise CdrError(f"{field.name}: {count} elements do not fit")
            values = []
            for _ in range(count):
                value, offset = one(view, offset)
                values.append(value)
            return values, offset
        return get
