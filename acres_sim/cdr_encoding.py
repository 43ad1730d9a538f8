"""The rules of XCDR1 little-endian encoding that every serialized message here follows (ROS-free):
the four encapsulation bytes that open it, and the alignment of a primitive to its own size,
counted from the first byte after them."""

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR, little endian, no options


def align(offset: int, alignment: int) -> int:
    """The first offset at or after `offset` (counted after the encapsulation) that is a multiple
    of `alignment`."""
    return offset + -offset % alignment
