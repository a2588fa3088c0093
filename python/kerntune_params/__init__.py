"""Load kerntune's hardware_params.json from Python.

``kerntune tune`` measures, per device, kernel family, dtype and shape class,
the fastest parameters of a kernel and writes them to hardware_params.json.
This module answers, at run time, the question the Go package
``github.com/kerntune/kerntune/params`` answers for Go programs, with the
same precedence, the same environment variables, the same device matching,
fallback and validation (a conformance suite, params/testdata/conformance,
runs both loaders on the same cases)::

    import kerntune_params as kp

    l = kp.load(device_name="Apple M3 Max")   # $KERNTUNE_PARAMS, else ./hardware_params.json
    for w in l.warnings:
        print("kerntune:", w)                 # e.g. no device of the file matches
    r = l.resolve("gemm_av", "f16", (1024, 1024, 1024))
    if r.use_baseline:
        ...                                   # call the vendor library (r.baseline)
    bm, bn = r["BM"], r["BN"]                 # r.params["BM"].source says where it came from

Per parameter the first of these that sets it wins: the variable
``<PREFIX>_<FAMILY>_<PARAM>`` (``KERNTUNE_GEMM_AV_BM=32``), an alias the
application declares (``alias("MLX_GEMM_TILE_AV", ("BM", "BN"), sep="x")``),
the device's exact-shape entry, its shape-class entry, the same entries of
the fallback devices of the same family, the built-in default. Kernels of
spec files (``kerntune tune --spec k.json``) are loaded with
``load(..., specs=["k.json"])``. The module uses only the standard library
(Python 3.9 or newer).
"""

from __future__ import annotations

from ._common import (
    DEFAULT_ENV_PREFIX,
    DEFAULT_FILE_NAME,
    MATCHED_KEY,
    MATCHED_NAME,
    MATCHED_NONE,
    MATCHED_ONLY,
    MAX_DIM,
    MAX_ELEMENTS,
    MAX_FILE_SIZE,
    RESERVED_PARAM_NAME,
    SCHEMA_VERSION,
    SOURCE_DEFAULT,
    SOURCE_ENV_PREFIX,
    SOURCE_FALLBACK_PREFIX,
    SOURCE_FILE_PREFIX,
    USE_BASELINE,
    USE_TUNED,
)
from .devices import DeviceChoice, DeviceID, cpu_device_key, fold_device_name, local_device, normalize_cpu_model
from .errors import (
    DefaultsError,
    EnvError,
    InputsError,
    InvalidShapeError,
    NoSpaceError,
    OptionsError,
    ParamsError,
    PathError,
    SpecError,
    UnknownDTypeError,
    UnknownFamilyError,
)
from .families import Family, Param, Space, builtin_families, dtypes, env_var_name, parse_shape, shape_string, space_kind
from .loader import Alias, IOError_, Loader, Resolved, Value, alias, load, loads
from .spec import load_spec

__version__ = "0.1.0"

__all__ = [
    "Alias",
    "DeviceChoice",
    "DeviceID",
    "DefaultsError",
    "EnvError",
    "Family",
    "InputsError",
    "IOError_",
    "InvalidShapeError",
    "Loader",
    "NoSpaceError",
    "OptionsError",
    "Param",
    "ParamsError",
    "PathError",
    "Resolved",
    "SpecError",
    "UnknownDTypeError",
    "UnknownFamilyError",
    "Value",
    "alias",
    "builtin_families",
    "cpu_device_key",
    "dtypes",
    "env_var_name",
    "fold_device_name",
    "load",
    "load_spec",
    "loads",
    "local_device",
    "normalize_cpu_model",
    "parse_shape",
    "shape_string",
]
