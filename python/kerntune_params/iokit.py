"""The GPU core count of an Apple GPU, from IOKit's "gpu-core-count"
property of the AGXAccelerator service, through ctypes only. Never raises:
0 means unknown (another system, no such service, any failure)."""

from __future__ import annotations

import sys
from typing import Optional, Tuple

_cached: Optional[Tuple[str, int]] = None


def local_gpu() -> Tuple[str, int]:
    """This Mac's GPU: its model ("Apple M3 Max") and core count, or ("", 0)
    when they cannot be found."""
    global _cached
    if _cached is None:
        try:
            _cached = _query() if sys.platform == "darwin" else ("", 0)
        except Exception:  # ctypes, a missing symbol, anything: unknown
            _cached = ("", 0)
    return _cached


def gpu_core_count() -> int:
    """The core count of this Mac's GPU, or 0 when it cannot be found."""
    return local_gpu()[1]


def _query() -> Tuple[str, int]:
    import ctypes
    import ctypes.util

    iokit_path = ctypes.util.find_library("IOKit") or "/System/Library/Frameworks/IOKit.framework/IOKit"
    cf_path = (ctypes.util.find_library("CoreFoundation")
               or "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation")
    iokit = ctypes.CDLL(iokit_path)
    cf = ctypes.CDLL(cf_path)
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32

    iokit.IOServiceMatching.restype = vp
    iokit.IOServiceMatching.argtypes = [ctypes.c_char_p]
    iokit.IOServiceGetMatchingServices.restype = ctypes.c_int
    iokit.IOServiceGetMatchingServices.argtypes = [u32, vp, ctypes.POINTER(u32)]
    iokit.IOIteratorNext.restype = u32
    iokit.IOIteratorNext.argtypes = [u32]
    iokit.IORegistryEntryCreateCFProperty.restype = vp
    iokit.IORegistryEntryCreateCFProperty.argtypes = [u32, vp, vp, u32]
    iokit.IOObjectRelease.restype = ctypes.c_int
    iokit.IOObjectRelease.argtypes = [u32]
    cf.CFStringCreateWithCString.restype = vp
    cf.CFStringCreateWithCString.argtypes = [vp, ctypes.c_char_p, u32]
    cf.CFNumberGetValue.restype = ctypes.c_bool
    cf.CFNumberGetValue.argtypes = [vp, ctypes.c_int, vp]
    cf.CFGetTypeID.restype = ctypes.c_ulong
    cf.CFGetTypeID.argtypes = [vp]
    cf.CFNumberGetTypeID.restype = ctypes.c_ulong
    cf.CFStringGetTypeID.restype = ctypes.c_ulong
    cf.CFStringGetCString.restype = ctypes.c_bool
    cf.CFStringGetCString.argtypes = [vp, ctypes.c_char_p, ctypes.c_long, u32]
    cf.CFRelease.restype = None
    cf.CFRelease.argtypes = [vp]

    k_cf_string_encoding_utf8 = 0x08000100
    k_cf_number_sint64 = 4
    matching = iokit.IOServiceMatching(b"AGXAccelerator")
    if not matching:
        return "", 0
    it = u32(0)
    # kIOMainPortDefault is 0; the call consumes the matching dictionary.
    if iokit.IOServiceGetMatchingServices(0, matching, ctypes.byref(it)) != 0 or not it.value:
        return "", 0
    key = cf.CFStringCreateWithCString(None, b"gpu-core-count", k_cf_string_encoding_utf8)
    model_key = cf.CFStringCreateWithCString(None, b"model", k_cf_string_encoding_utf8)
    if not key or not model_key:
        iokit.IOObjectRelease(it.value)
        return "", 0
    count, model = 0, ""
    try:
        while count == 0:
            svc = iokit.IOIteratorNext(it.value)
            if not svc:
                break
            try:
                prop = iokit.IORegistryEntryCreateCFProperty(svc, key, None, 0)
                if prop:
                    try:
                        if cf.CFGetTypeID(prop) == cf.CFNumberGetTypeID():
                            v = ctypes.c_int64(0)
                            if cf.CFNumberGetValue(prop, k_cf_number_sint64, ctypes.byref(v)) and 0 < v.value < 1 << 20:
                                count = int(v.value)
                    finally:
                        cf.CFRelease(prop)
                if count:
                    mp = iokit.IORegistryEntryCreateCFProperty(svc, model_key, None, 0)
                    if mp:
                        try:
                            buf = ctypes.create_string_buffer(256)
                            if cf.CFGetTypeID(mp) == cf.CFStringGetTypeID() and cf.CFStringGetCString(
                                    mp, buf, 256, k_cf_string_encoding_utf8):
                                model = buf.value.decode("utf-8", "replace")
                        finally:
                            cf.CFRelease(mp)
            finally:
                iokit.IOObjectRelease(svc)
    finally:
        cf.CFRelease(key)
        cf.CFRelease(model_key)
        iokit.IOObjectRelease(it.value)
    return model, count
