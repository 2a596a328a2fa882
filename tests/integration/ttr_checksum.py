"""The raw record checksum of collector/include/tracetune/collector/record_format.h, for the
integration tests that parse .ttr files on their own (one copy, so the tests cannot drift
apart from each other; the C++ header stays the definition)."""
import struct


def checksum32(data, h=2166136261):
    """record_format.h's checksum32: 8-byte little-endian words, then single bytes."""
    m, prime = (1 << 64) - 1, 0x100000001B3
    x, n, i = h, len(data), 0
    while n - i >= 8:
        x = ((x ^ int.from_bytes(data[i:i + 8], "little")) * prime) & m
        x ^= x >> 32
        i += 8
    for b in data[i:]:
        x = ((x ^ b) * prime) & m
    return (x ^ (x >> 32)) & 0xFFFFFFFF


def record_checksum(rtype, flags, tid, payload, version=2):
    """record_format.h's record_checksum: type, flags, tid, then the payload. Version 1 chains
    the three header fields one by one; version 2 takes them as one 8-byte word."""
    if version == 1:
        h = checksum32(struct.pack("<H", rtype))
        h = checksum32(struct.pack("<H", flags), h)
        h = checksum32(struct.pack("<I", tid), h)
    else:
        h = checksum32(struct.pack("<HHI", rtype, flags, tid))
    return checksum32(payload, h)
