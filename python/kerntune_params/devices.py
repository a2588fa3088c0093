"""Devices: the local CPU, name folding and matching."""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Tuple

from ._common import MATCHED_NAME, _ASCII_SPACE, _go_fields, _trim

@dataclass(frozen=True)
class DeviceID:
    """A device as the params file records it: its key and fields."""

    key: str = ""
    backend: str = ""
    name: str = ""
    family: str = ""
    compute_units: int = 0


def cpu_device_key(model: str, cores: int) -> str:
    """A CPU's key in the params file: cpu:<model>:<cores>."""
    return f"cpu:{model}:{cores}"


def normalize_cpu_model(s: str) -> str:
    """Runs of white space become one space, "/" becomes "-", double quotes
    are dropped: the model name kerntune's CPU backend records."""
    return " ".join(_go_fields(s.replace("/", "-").replace('"', "")))


def fold_device_name(s: str) -> str:
    """The form in which device names are compared: ASCII letters lower-cased,
    runs of ASCII white space made one space and trimmed, "/" read as "-",
    double quotes dropped. Names match when their folded forms are equal and
    not empty."""
    s = s.replace("/", "-").replace('"', "")
    words = [w for w in re.split("[" + re.escape(_ASCII_SPACE) + "]+", s) if w]
    return " ".join(words).translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _goarch() -> str:
    m = platform.machine().lower()
    return {
        "x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386", "i686": "386",
        "x86": "386", "armv6l": "arm", "armv7l": "arm", "arm": "arm", "ppc64le": "ppc64le", "ppc64": "ppc64",
        "s390x": "s390x", "riscv64": "riscv64", "loongarch64": "loong64", "mips64": "mips64",
    }.get(m, m)


def _cpu_model_raw() -> str:
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition(":")
                if sep and _trim(k) in ("model name", "Model", "Hardware") and _trim(v):
                    return _trim(v)
        return _goarch()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c"))
            size = ctypes.c_size_t(0)
            name = b"machdep.cpu.brand_string"
            if libc.sysctlbyname(name, None, ctypes.byref(size), None, 0) == 0 and size.value > 0:
                buf = ctypes.create_string_buffer(size.value)
                if libc.sysctlbyname(name, buf, ctypes.byref(size), None, 0) == 0 and buf.value:
                    return buf.value.decode("utf-8", "replace")
        except (OSError, AttributeError):
            pass
    return _goarch()


def _num_cpu() -> int:
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return os.cpu_count() or 1


def local_device() -> DeviceID:
    """This machine's CPU exactly as kerntune's CPU backend records it (and
    Go's params.LocalDevice describes it): the model from /proc/cpuinfo
    ("model name", "Model" or "Hardware") or sysctl machdep.cpu.brand_string,
    the CPUs this process may run on, GOARCH as the family."""
    model = normalize_cpu_model(_cpu_model_raw())
    cores = _num_cpu()
    return DeviceID(cpu_device_key(model, cores), "cpu", model, _goarch(), cores)


@dataclass
class DeviceChoice:
    """Which device the loader resolves for, and why (as Go's DeviceChoice)."""

    key: str = ""
    how: str = ""
    matched: str = ""
    in_file: bool = False
    backend: str = ""
    kind: str = ""
    family: str = ""
    fallbacks: List[str] = field(default_factory=list)


def _match_name(devices: Mapping[str, Any], name: str, cu: int, backend: str) -> Tuple[str, str]:
    want = fold_device_name(name)
    if want == "":
        return "", ""
    cands = []
    for k, d in devices.items():
        if fold_device_name(d.name) != want or (backend and d.backend != backend):
            continue
        if cu <= 0:
            dist = 0
        elif d.compute_units <= 0:
            dist = 1 << 40
        else:
            dist = abs(d.compute_units - cu)
        cands.append((dist, k.encode("utf-8"), k, d.compute_units))
    if not cands:
        return "", ""
    cands.sort()
    _, _, key, has = cands[0]
    if (cu > 0 and has == cu) or (cu <= 0 and len(cands) == 1):
        return key, MATCHED_NAME
    if cu > 0 and has <= 0:
        return key, f"{MATCHED_NAME}, compute units not recorded (wanted {cu})"
    if cu > 0:
        return key, f"{MATCHED_NAME}, nearest compute units ({has} for {cu})"
    return key, f"{MATCHED_NAME}, first of {len(cands)} by key (no compute units given)"


