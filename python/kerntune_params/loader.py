"""The loader: precedence, environment, device choice and resolution."""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ._common import MATCHED_NAME, DEFAULT_ENV_PREFIX, DEFAULT_FILE_NAME, MATCHED_KEY, MATCHED_NONE, MATCHED_ONLY, RESERVED_PARAM_NAME, SOURCE_DEFAULT, SOURCE_ENV_PREFIX, SOURCE_FALLBACK_PREFIX, SOURCE_FILE_PREFIX, USE_BASELINE, USE_TUNED, _IDENT_RE, _INT32_MAX, _INT32_MIN, _INT_RE, _PARAM_NAME_RE, _child, _is_int, _quote, _trim
from .devices import DeviceChoice, DeviceID, _match_name, fold_device_name, local_device
from .errors import DefaultsError, EnvError, InputsError, InvalidShapeError, NoSpaceError, OptionsError, ParamsError, PathError, UnknownDTypeError, UnknownFamilyError, _ShapeError, _TooLarge, _read_limited
from .families import Family, Param, Space, _env_family, _looks_like_shape, builtin_families, dtypes, env_var_name, parse_shape, shape_string, space_kind
from .fileformat import Unknown, _Device, _parse, parse_noting
from .spec import fill_format, load_spec
from .iokit import local_gpu as _system_gpu
from .launch import Launch, bind_inputs, compute_launch, dtype_name, kernel_args

class Value(NamedTuple):
    """A resolved parameter value and where it came from: "default",
    "env:<VARIABLE>", "file:<device>/<family>/<entry key>" or
    "fallback:<device>/<family>/<entry key>"."""

    value: int
    source: str


@dataclass
class Resolved:
    """The parameters of one kernel launch (Go's params.Resolved).

    ``r["BM"]`` is a value, ``r.params["BM"].source`` its source; ``matched``
    says how the device was found; ``use_baseline`` says to call the
    baseline (``baseline`` names it) instead of the tuned kernel, from
    ``use_source`` ($<PREFIX>_<FAMILY>_USE, else the first matching entry's
    "use", else "default")."""

    device: str
    backend: str
    kernel: str
    dtype: str
    shape: Tuple[int, ...]
    shape_class: str
    params: Dict[str, Value]
    names: List[str]
    matched: str
    use_baseline: bool = False
    baseline: str = ""
    use_source: str = SOURCE_DEFAULT
    # A spec kernel with an mlx source: the arguments of its call (see Launch).
    launch: Optional[Launch] = None

    def __getitem__(self, name: str) -> int:
        return self.params[name].value

    def get(self, name: str, default: int = 0) -> int:
        v = self.params.get(name)
        return default if v is None else v.value

    def _launch(self) -> Launch:
        if self.launch is None:
            raise UnknownFamilyError(f"params: {self.kernel} is not a spec kernel with an mlx source; it has no launch")
        return self.launch

    def mlx_kwargs(self, inputs: Union[Sequence[Any], Mapping[str, Any]]) -> Dict[str, Any]:
        """The keyword arguments of the MLX kernel call for a spec kernel
        with an mlx source: kernel(**r.mlx_kwargs([x, w])). inputs: the data
        inputs in input_names order (the spec's constants, built for this
        shape, are inserted at their places), every input_names entry, or a
        mapping by input name."""
        launch = self._launch()
        try:
            return launch.kwargs(inputs)
        except InputsError as e:
            raise InputsError(f"params: {self.kernel}: {str(e)[len('params: '):]}") from None

    def mlx_source(self) -> str:
        """The kernel's source for this launch: source.mlx.format's
        placeholders filled for the shape and parameters."""
        return str(self._launch().kernel_args["source"])

    def mlx_header(self) -> str:
        """The kernel's header for this launch, filled as mlx_source."""
        return str(self._launch().kernel_args["header"])

    def mlx_kernel_args(self) -> Dict[str, Any]:
        """The arguments of mx.fast.metal_kernel for this launch: name,
        input_names, output_names, source and header (filled), and the
        spec's ensure_row_contiguous, atomic_outputs and compile_options."""
        a = dict(self._launch().kernel_args)
        for k in ("input_names", "output_names"):
            a[k] = list(a[k])
        if "compile_options" in a:
            a["compile_options"] = dict(a["compile_options"])
        return a

    def mlx_kernel(self) -> Any:
        """mx.fast.metal_kernel(**r.mlx_kernel_args()), built once per
        distinct source and kept: kernel = r.mlx_kernel(); kernel(**r.mlx_kwargs([x]))."""
        return self._launch().kernel()

    def ints(self) -> Dict[str, int]:
        """The values as a plain dict, in the space's order."""
        return {n: self.params[n].value for n in self.names}


@dataclass(frozen=True)
class Alias:
    """A variable that sets several parameters, values joined by sep (see alias)."""

    name: str
    params: Tuple[str, ...]
    sep: str = "x"
    family: str = ""


def alias(name: str, params: Sequence[str], sep: str = "x", family: Optional[str] = None) -> Alias:
    """Declares a composite override: ``alias("MLX_GEMM_TILE_AV", ("BM", "BN"),
    sep="x", family="gemm_av")`` makes ``MLX_GEMM_TILE_AV=32x8`` set BM=32
    and BN=8 (source "env:MLX_GEMM_TILE_AV"). Without family it applies to
    every family whose parameters include all of params. A parameter's own
    variable (KERNTUNE_GEMM_AV_BM) beats an alias, an earlier alias a later
    one, and an alias beats the file. Pass aliases to load(aliases=[...])."""
    return Alias(name, tuple(params), sep, family or "")


@dataclass
class _ParamState:
    param: Param
    env: str
    default: int


@dataclass
class _AliasState:
    alias: Alias
    params: Optional[List[Param]]


@dataclass
class _FamState:
    fam: Family
    kind: str
    space: Optional[Space]
    params: List[_ParamState]
    names: List[str]
    use_env: str
    aliases: List[_AliasState]


@dataclass
class _EntryState:
    params: Dict[str, int]
    source: str
    use: str
    baseline: str
    # The entry's shapes and shape_use (empty without it): the use at exactly those shapes.
    shapes: List[List[int]] = field(default_factory=list)
    shape_use: List[str] = field(default_factory=list)

    def use_at(self, shape: List[int]) -> str:
        """The entry's use for a query of shape: its shape_use value when
        shape is one of its shapes, else its use (Go's entryState.useAt)."""
        want = list(shape)
        for s, u in zip(self.shapes, self.shape_use):  # no shape_use: nothing to zip
            if s == want:
                return u
        return self.use


def _valid_dtype(s: str) -> bool:
    return s in ("f32", "f16", "bf16")


class Loader:
    """Resolves kernel parameters from one params file, the environment and
    the built-in defaults. Make one with load or loads; it does not change
    afterwards, and resolve reads the environment at every call."""

    path: str
    file_found: bool
    env_prefix: str
    device: DeviceChoice
    warnings: List[str]
    families: List[str]

    def __init__(
        self,
        devices: Optional[Dict[str, _Device]],
        name: str,
        *,
        device: Optional[str],
        device_name: Optional[str],
        compute_units: int,
        backend: Optional[str],
        device_family: Optional[str],
        env_prefix: str,
        env: Optional[Mapping[str, str]],
        specs: Sequence[str],
        defaults: Optional[Mapping[str, Mapping[str, int]]],
        aliases: Sequence[Alias],
        local: Union[None, bool, DeviceID, Mapping[str, Any]],
        local_gpu: Union[None, bool, DeviceID, Mapping[str, Any]] = None,
        unknown: Optional[Unknown] = None,
    ) -> None:
        self.path = name
        self.file_found = devices is not None
        self.env_prefix = env_prefix
        self._env = env
        self.warnings = []
        self._known_env: Dict[str, str] = {}
        # Variables known but not read for this device, and why; a family's
        # part of its variable names → the family.
        self._unread: Dict[str, str] = {}
        self._env_fams: Dict[str, str] = {}
        fams = builtin_families()
        for sp in specs:
            fam = load_spec(os.fspath(sp))
            fams[fam.name] = fam
        self._claim_env(env_prefix + "_PARAMS", "the loader's PARAMS")
        self._claim_env(env_prefix + "_DEVICE", "the loader's DEVICE")
        self._claim_env(env_prefix + "_DEVICE_NAME", "the loader's DEVICE_NAME")
        # load reads <PREFIX>_PARAMS only when the caller names no file.
        self._unread[env_prefix + "_PARAMS"] = "not read: the caller named the params file"
        if device:
            self._unread[env_prefix + "_DEVICE"] = "not read: device= names the device"
        by_env: Dict[str, str] = {}
        for key in sorted(fams):
            e = _env_family(key)
            if e in by_env:
                raise OptionsError(f"params: families {by_env[e]} and {key} share the variable names {env_prefix}_{e}_*")
            by_env[e] = key
            self._env_fams[e] = key
            self._claim_env(env_var_name(env_prefix, key, RESERVED_PARAM_NAME), key + "'s choice of the baseline")
            for kind in sorted(fams[key].spaces):
                for p in fams[key].spaces[kind].params:
                    self._claim_env(env_var_name(env_prefix, key, p.name), f"{key} parameter {p.name}")
        self._known_env[env_prefix + "_METAL_MPS"] = "the kerntune tool's MPS setting"
        for v in ("_NO_CACHE", "_CACHE_DIR", "_CACHE_MAX"):
            self._known_env[env_prefix + v] = "the kerntune tool's compile cache setting"
        self.families = sorted(fams)
        defaults = defaults or {}
        self._validate_defaults(fams, defaults)
        self._validate_aliases(fams, aliases)
        if devices is not None:
            self._validate_file(devices, name, fams, unknown or Unknown())
        self.device = self._choose_device(devices, name, device, device_name, compute_units, backend, device_family, local,
                                          local_gpu)
        self._chain: List[Dict[str, Dict[str, _EntryState]]] = []
        if devices is not None:
            if self.device.in_file:
                self._chain.append(self._dev_state(devices, self.device.key, SOURCE_FILE_PREFIX))
            for k in self.device.fallbacks:
                self._chain.append(self._dev_state(devices, k, SOURCE_FALLBACK_PREFIX))
        self._cache: Dict[Any, Any] = {}
        # resolve(inputs=...): (family, the arrays' shapes and dtypes, dims) → (dtype, shape).
        self._bind_cache: Dict[Any, Tuple[Optional[str], Tuple[int, ...]]] = {}
        self._fams: Dict[str, _FamState] = {}
        for key, fam in fams.items():
            sp = fam.spaces.get(self.device.kind)
            fs = _FamState(fam, self.device.kind, sp, [], [], env_var_name(env_prefix, key, RESERVED_PARAM_NAME), [])
            if sp is not None:
                over = defaults.get(key, {})
                for p in sp.params:
                    fs.params.append(_ParamState(p, env_var_name(env_prefix, key, p.name), over.get(p.name, p.default)))
                    fs.names.append(p.name)
                for a in aliases:
                    if a.family != key and (a.family != "" or not sp.has(a.params)):
                        continue
                    fs.aliases.append(_AliasState(a, [sp.param(n) for n in a.params] if sp.has(a.params) else None))  # type: ignore[misc]
            self._fams[key] = fs
            self._note_unread(key, fam, fs)

    def _note_unread(self, key: str, fam: Family, fs: "_FamState") -> None:
        # As the Go loader's noteUnread: the variables of a family that
        # resolve never reads for this device, and why.
        d = self.device
        dev = f"{d.key}, backend {d.backend}" if d.key else f"backend {d.backend}"
        if fs.space is None:
            why = f"{key} has no parameters for {fs.kind} backends (the device: {dev})"
            self._unread[env_var_name(self.env_prefix, key, RESERVED_PARAM_NAME)] = why
            for kind in sorted(fam.spaces):
                for p in fam.spaces[kind].params:
                    self._unread[env_var_name(self.env_prefix, key, p.name)] = why
            return
        for kind in sorted(fam.spaces):
            for p in fam.spaces[kind].params:
                if fs.space.param(p.name) is not None:
                    continue
                self._unread.setdefault(
                    env_var_name(self.env_prefix, key, p.name),
                    f"{key} {p.name} is a parameter of {kind} backends, not of {fs.kind} ones (the device: {dev}; "
                    f"its {key} parameters: {', '.join(fs.names)})",
                )

    # -- environment

    def _lookup(self, name: str) -> Optional[str]:
        env = os.environ if self._env is None else self._env
        return env.get(name)

    def _claim_env(self, name: str, what: str) -> None:
        prev = self._known_env.get(name)
        if prev is not None and prev != what:
            raise OptionsError(f"params: variable {name} would be both {prev} and {what}")
        self._known_env[name] = what

    def unused_env(self, environ: Optional[Mapping[str, str]] = None) -> List[str]:
        """The variables of environ (default os.environ) with the loader's
        prefix that have no effect, sorted: those it never reads (a typo
        such as KERNTUNE_GEMV_NT_XX) and those it does not read for this
        device (a parameter of another backend's space, such as
        KERNTUNE_GEMV_NT_TG on a CPU device; every variable of a family
        without a space for the device's backend; <PREFIX>_PARAMS when the
        caller named the file; <PREFIX>_DEVICE when device is given)."""
        return [n for n, _ in self.unused_env_vars(environ)]

    def unused_env_vars(self, environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, str]]:
        """unused_env with the reason for each variable: (name, why) pairs,
        sorted by name (Go's Loader.UnusedEnvVars)."""
        env = os.environ if environ is None else environ
        p = self.env_prefix + "_"
        out = []
        for n in sorted(env, key=lambda k: k.encode("utf-8", "surrogatepass")):
            if not n.startswith(p):
                continue
            if n in self._unread:
                out.append((n, self._unread[n]))
            elif n not in self._known_env:
                out.append((n, self._unknown_var_why(n)))
        return out

    def _unknown_var_why(self, name: str) -> str:
        rest = name[len(self.env_prefix) + 1:]
        fam = ""
        for e, key in self._env_fams.items():
            if rest.startswith(e + "_") and len(e) > len(_env_family(fam)):
                fam = key
        if fam == "":
            prefix = self.env_prefix
            return (f"not a variable the loader reads: {name} names no kernel family (known: {', '.join(self.families)}) "
                    f"and no setting ({prefix}_PARAMS, {prefix}_DEVICE, {prefix}_DEVICE_NAME)")
        fs = self._fams.get(fam)
        param = rest[len(_env_family(fam)) + 1:]
        if fs is None or fs.space is None:
            return f"not a variable the loader reads: {fam} has no parameter {param}"
        return f"not a variable the loader reads: {fam} has no parameter {param} (on {fs.kind} backends it has {', '.join(fs.names)})"

    # -- validation

    @staticmethod
    def _validate_defaults(fams: Mapping[str, Family], defaults: Mapping[str, Mapping[str, int]]) -> None:
        for key in sorted(defaults):
            fam = fams.get(key)
            if fam is None:
                raise OptionsError(f"params: defaults: unknown kernel family {_quote(key)}")
            for name in sorted(defaults[key]):
                v = defaults[key][name]
                found = False
                for kind in sorted(fam.spaces):
                    p = fam.spaces[kind].param(name)
                    if p is None:
                        continue
                    found = True
                    if not _is_int(v) or not p.allowed(v):
                        raise OptionsError(f"params: defaults[{_quote(key)}][{_quote(name)}] = {v} is not allowed on {kind} backends (allowed: {p.values_string()})")
                if not found:
                    raise OptionsError(f"params: defaults[{_quote(key)}]: family {key} has no parameter {name}")

    def _validate_aliases(self, fams: Mapping[str, Family], aliases: Sequence[Alias]) -> None:
        for i, a in enumerate(aliases):
            if not isinstance(a, Alias):
                raise OptionsError(f"params: aliases[{i}] is not an Alias (make it with kerntune_params.alias)")

            def fail(msg: str) -> OptionsError:
                return OptionsError(f"params: aliases[{i}] ({a.name}): {msg}")

            if not _IDENT_RE.match(a.name):
                raise fail(f"the name {_quote(a.name)} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")
            if a.sep == "" or any(c in a.sep for c in "0123456789+-"):
                raise fail(f"the separator {_quote(a.sep)} must be non-empty and hold no digit or sign, e.g. \"x\"")
            if not a.params:
                raise fail("names no parameters")
            for j, p in enumerate(a.params):
                if not _PARAM_NAME_RE.match(p):
                    raise fail(f"parameter name {_quote(p)} is not an upper-case identifier")
                if p in a.params[:j]:
                    raise fail(f"names parameter {p} twice")
            if a.family:
                fam = fams.get(a.family)
                if fam is None:
                    raise fail(f"unknown kernel family {_quote(a.family)}")
                if not any(s.has(a.params) for s in fam.spaces.values()):
                    raise fail(f"{a.family} has no parameter space with all of {', '.join(a.params)}")
                what = f"alias of {a.family} {', '.join(a.params)}"
            else:
                if not any(s.has(a.params) for f in fams.values() for s in f.spaces.values()):
                    raise fail(f"no family has a parameter space with all of {', '.join(a.params)}")
                what = f"alias of {', '.join(a.params)}"
            self._claim_env(a.name, what)

    def _validate_file(self, devices: Dict[str, _Device], name: str, fams: Mapping[str, Family], unknown: Unknown) -> None:
        # A parameter a family does not have is dropped from its entry (whose
        # other parameters apply) and noted; warnings: unknown fields and
        # parameters, then entries ignored for their dtype or class.
        ignored: List[str] = []
        self._validate_entries(devices, name, fams, unknown, ignored)
        self.warnings.extend(unknown.warnings(name))
        self.warnings.extend(ignored)

    def _validate_entries(self, devices: Dict[str, _Device], name: str, fams: Mapping[str, Family], unknown: Unknown,
                          ignored: List[str]) -> None:
        def fail(path: str, msg: str) -> PathError:
            return PathError(name, path, msg)

        label = name or "params data"
        for dk in sorted(devices):
            dev = devices[dk]
            kind = _device_kind(dev)
            for fk in sorted(dev.kernels):
                fam = fams.get(fk)
                if fam is None or kind not in fam.spaces:
                    continue
                space = fam.spaces[kind]
                fp = _child(_child(_child("devices", dk), "kernels"), fk)
                for ek in sorted(dev.kernels[fk]):
                    e = dev.kernels[fk][ek]
                    ep = _child(fp, ek)
                    dtype, _, suffix = ek.partition("/")
                    shape: Optional[Tuple[int, ...]] = None
                    if _looks_like_shape(suffix):
                        try:
                            s = parse_shape(suffix)
                            fam.classify(s)
                        except (InvalidShapeError, _ShapeError) as x:
                            raise fail(ep, f"bad exact-shape entry key: {x}") from None
                        if shape_string(s) != suffix:
                            raise fail(ep, f"exact-shape entry key is not canonical; write {dtype}/{shape_string(s)}")
                        shape = s
                    elif fam.classes and suffix not in [c for c, _ in fam.classes]:
                        ignored.append(f"{label}: {ep}: {fk} has no shape class {_quote(suffix)}; entry ignored")
                    if not _valid_dtype(dtype):
                        ignored.append(f"{label}: {ep}: unknown dtype {_quote(dtype)} (known: {', '.join(dtypes())}); entry ignored")
                    pp = _child(ep, "params")
                    for pn in sorted(e.params):
                        p = space.param(pn)
                        if p is None:
                            unknown.add(f"param\x00{fk}\x00{kind}\x00{pn}", _child(pp, pn),
                                        f"{fk} has no parameter {pn} on {kind} backends (it has {', '.join(x.name for x in space.params)})",
                                        "entry", True)
                            del e.params[pn]
                            continue
                        if not p.allowed(e.params[pn]):
                            raise fail(_child(pp, pn), f"{e.params[pn]} is not an allowed value of {fk} {pn} on {kind} backends (allowed: {p.values_string()})")
                    if space.check is not None and len(e.params) == len(space.params):
                        msg = _check(space, shape, e.params)
                        if msg is not None:
                            raise fail(pp, f"breaks the constraints of {fk}: {msg}")

    # -- the device

    def _choose_device(
        self,
        devices: Optional[Dict[str, _Device]],
        name: str,
        opt_device: Optional[str],
        opt_name: Optional[str],
        cu: int,
        opt_backend: Optional[str],
        opt_family: Optional[str],
        opt_local: Union[None, bool, DeviceID, Mapping[str, Any]],
        opt_gpu: Any = None,
    ) -> DeviceChoice:
        d = DeviceChoice()
        prefix = self.env_prefix
        if not _is_int(cu) or cu < 0:
            raise OptionsError(f"params: compute_units is {cu}; it must be 0 (unknown) or positive")
        o_backend = opt_backend or ""
        key, key_how = opt_device or "", "device="
        if key == "":
            x = self._lookup(prefix + "_DEVICE")
            if x is not None:
                key, key_how = _trim(x), SOURCE_ENV_PREFIX + prefix + "_DEVICE"
        dev_name, name_how = _trim(opt_name or ""), "device_name="
        x = self._lookup(prefix + "_DEVICE_NAME")
        if x is not None and _trim(x) != "":
            dev_name, name_how = _trim(x), SOURCE_ENV_PREFIX + prefix + "_DEVICE_NAME"
        backend, family = o_backend, opt_family or ""
        local = DeviceID()
        use_local = False
        if key == "" and dev_name == "" and devices is not None and len(devices) > 0:
            if opt_local is None or opt_local is True:
                local = local_device()
            elif isinstance(opt_local, DeviceID):
                local = opt_local
            elif isinstance(opt_local, Mapping):
                local = DeviceID(**dict(opt_local))
            use_local = local.backend != "" and (o_backend == "" or o_backend == local.backend)

        found, not_only = "", ""
        only = next(iter(devices)) if devices is not None and len(devices) == 1 else ""
        if devices is None:
            pass
        elif key != "" and key in devices:
            found, d.how, d.matched = key, key_how, MATCHED_KEY
        elif dev_name != "":
            k, m = self._match_name(devices, dev_name, cu, "compute_units=", o_backend, self._local_gpu(opt_gpu),
                                    f"device name {_quote(dev_name)} ({name_how})", name or "params data", "compute_units=")
            if k:
                found, d.how, d.matched = k, name_how, m
        elif key != "":
            pass
        elif only:
            # The only device is another machine's when its backend or model is
            # not this one's: then it is no match, only a possible fallback.
            same, not_only = _only_device_fits(devices[only], only, o_backend, local, use_local)
            if not_only == "":
                found = only
                d.how = d.matched = MATCHED_ONLY
                if not same:
                    self.warnings.append(
                        f"the only device in {name or 'params data'}, {_describe_device(only, devices[only])}, is not the local device "
                        f"{_describe_local(local)} but has its backend and model; its entries apply (set {prefix}_DEVICE={only} to choose it by key)"
                    )
        elif use_local and local.key != "" and local.key in devices and devices[local.key].backend == local.backend:
            found, d.how, d.matched = local.key, "local device", MATCHED_KEY
        elif use_local:
            k, m = self._match_name(devices, local.name, local.compute_units, "local device", local.backend, None,
                                    f"the local device's name {_quote(local.name)}", name or "params data", "")
            if k:
                found, d.how, d.matched = k, "local device", m

        dev = devices[found] if found and devices is not None else None
        if dev is not None:
            d.key, d.in_file = found, True
            d.backend, d.family = dev.backend, dev.family
            if o_backend and o_backend != dev.backend and space_kind(o_backend) != _device_kind(dev):
                raise OptionsError(f"params: backend= is {_quote(o_backend)} but device {_quote(d.key)} in {name or 'params data'} has backend {_quote(dev.backend)}")
        else:
            if use_local:
                backend = backend or local.backend
                family = family or local.family
            d.backend, d.family = backend, family
            if key:
                d.key, d.how = key, key_how
        d.fallbacks = _siblings(devices, d.key, d.family, d.backend)
        if d.backend == "":
            d.backend = "cpu"
            if d.fallbacks and devices is not None:
                d.backend = devices[d.fallbacks[0]].backend
                d.fallbacks = _siblings(devices, d.key, d.family, d.backend)
        d.kind = space_kind(d.backend)
        if dev is not None:
            d.kind = _device_kind(dev)
            return d
        d.matched = "family " + d.family if d.fallbacks else MATCHED_NONE
        if not devices:
            return d
        label = name or "params data"
        then = "built-in defaults apply"
        if d.fallbacks:
            then = f"using fallback devices {', '.join(d.fallbacks)} (family {d.family})"
        holds = "its devices: " + "; ".join(_describe_device(k, devices[k]) for k in _sorted_keys(devices))
        asked = []
        if key:
            asked.append(f"key {_quote(key)} ({key_how})")
        if dev_name:
            n = f"name {_quote(dev_name)} ({name_how})"
            if o_backend:
                n += " on backend " + o_backend
            asked.append(n)
        if not_only:
            self.warnings.append(
                f"the only device in {label}, {_describe_device(only, devices[only])}, {not_only}; {then} (set {prefix}_DEVICE or "
                f"{prefix}_DEVICE_NAME, or device= or device_name=, to use it)"
            )
        elif key and not dev_name:
            self.warnings.append(f"device {_quote(key)} ({key_how}) is not in {label}; {then}; {holds}")
        elif asked:
            self.warnings.append(f"no device in {label} matches {' or '.join(asked)}; {then}; {holds}")
        else:
            why = f", and none is the local device (key {_quote(local.key)}, name {_quote(local.name)})" if use_local else ""
            self.warnings.append(
                f"{label} holds {len(devices)} devices and none was chosen{why} (set {prefix}_DEVICE or {prefix}_DEVICE_NAME, "
                f"or device= or device_name=); {then}; {holds}"
            )
        return d

    def _match_name(self, devices: Dict[str, _Device], dev_name: str, cu: int, cu_how: str, backend: str,
                    gpu: Optional[DeviceID], subject: str, file: str, hint: str) -> Tuple[str, str]:
        # Go's matchName and nameMatch.warning: the compute units given, else
        # this machine's GPU's (gpu: None for no lookup) decide among the
        # devices of the name; every choice that is not exact is a warning
        # naming each of them with its compute units and the one chosen.
        want = fold_device_name(dev_name)
        if not want:
            return "", ""
        cs = [(k, devices[k].compute_units) for k in _sorted_keys(devices)
              if fold_device_name(devices[k].name) == want and (not backend or devices[k].backend == backend)]
        if not cs:
            return "", ""
        if cu <= 0 and gpu is not None and gpu.compute_units > 0 and fold_device_name(gpu.name) == want:
            cu, cu_how = gpu.compute_units, "this machine's GPU"
            if not backend and gpu.backend:
                same_b = [c for c in cs if devices[c[0]].backend == gpu.backend]
                cs = same_b or cs
        exact, why = False, ""
        if cu <= 0:
            key = cs[0][0]
            if len(cs) == 1:
                matched, exact = MATCHED_NAME, True
            else:
                matched, why = f"{MATCHED_NAME}, first of {len(cs)} by key (no compute units given)", "the first by key"
        else:
            same = [k for k, c in cs if c == cu]
            if len(same) == 1:
                key, matched, exact = same[0], MATCHED_NAME, True
            elif same:
                key = same[0]
                matched, why = f"{MATCHED_NAME}, first of {len(same)} by key with {cu} compute units", f"the first by key of those with {cu}"
            else:
                def dist(c: Tuple[str, int]) -> int:
                    return 1 << 40 if c[1] <= 0 else abs(c[1] - cu)
                best = cs[0]
                for c in cs[1:]:
                    if dist(c) < dist(best):
                        best = c
                key = best[0]
                if best[1] <= 0:
                    matched, why = f"{MATCHED_NAME}, compute units not recorded (wanted {cu})", "which records no compute units"
                else:
                    matched, why = f"{MATCHED_NAME}, nearest compute units ({best[1]} for {cu})", "the nearest in compute units"
        if not exact:
            w = subject + (f" with {cu} compute units ({cu_how})" if cu > 0 else " with compute units unknown")
            w += f" matches {'several entries' if len(cs) > 1 else 'one entry'} of {file}: "
            w += ", ".join(f"{k} ({c} compute units)" if c > 0 else f"{k} (compute units not recorded)" for k, c in cs)
            w += f"; chose {key}, {why}; to choose, set {self.env_prefix}_DEVICE to a key"
            if cu <= 0 and hint:
                w += " or pass " + hint
            self.warnings.append(w)
        return key, matched

    @staticmethod
    def _local_gpu(opt: Any) -> Optional[DeviceID]:
        # local_gpu: None asks the system (IOKit on macOS), False none, a
        # DeviceID stands for the system's answer.
        if opt is False:
            return None
        if isinstance(opt, DeviceID):
            return opt if opt != DeviceID() else None
        model, cores = _system_gpu()
        return DeviceID("", "metal", model, "", cores) if cores > 0 else None

    @staticmethod
    def _dev_state(devices: Dict[str, _Device], key: str, prefix: str) -> Dict[str, Dict[str, _EntryState]]:
        return {
            fam: {ek: _EntryState(e.params, f"{prefix}{key}/{fam}/{ek}", e.use, e.baseline, e.shapes, e.shape_use)
                  for ek, e in entries.items()}
            for fam, entries in devices[key].kernels.items()
        }

    # -- resolving

    def resolve(self, family: str, dtype: Any = None, shape: Union[Sequence[int], str, None] = None, *,
                inputs: Union[Sequence[Any], Mapping[str, Any], None] = None,
                dims: Optional[Mapping[str, int]] = None) -> Resolved:
        """The parameters to launch family with, for dtype ("f32", "f16",
        "bf16", or mx.float32, mx.float16, mx.bfloat16) and shape (a
        sequence of ints, or dims joined by x), each with its source; for a
        spec kernel with an mlx source, also its launch (Resolved.launch).

        For a spec kernel with an mlx source, inputs (the input arrays, as
        mlx_kwargs takes them) may give the shape and the dtype instead:
        resolve("rms_norm_inv", inputs=[x, w]) reads the dims from the
        arrays' shapes as the spec's buffers declare them, and the dtype
        from the first input of the tuned dtype (unless dtype is given);
        dims ({"bins": 64}) gives dims that no input's shape does.

        A shape seen before with the same family, dtype and values of the
        variables the family reads is answered from a cache, the same
        Resolved object (do not change it)."""
        if inputs is not None or dims is not None:
            return self._resolve_inputs(family, dtype, shape, inputs, dims)
        key_shape = tuple(shape) if shape.__class__ is list else shape
        key = (family, dtype, key_shape)
        try:
            hit = self._cache.get(key)
        except TypeError:  # an unhashable argument: the exact path says what is wrong
            hit = None
        if hit is not None:
            if key_shape.__class__ is tuple:
                for d in key_shape:
                    if d.__class__ is not int:
                        hit = None
                        break
            if hit is not None and hit[0] == tuple(map(hit[1], hit[2])):
                return hit[3]
        r = self._resolve(family, dtype, shape)
        fs = self._fams[family]
        get, keys = self._env_getter(fs)
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        try:
            self._cache[key] = (tuple(map(get, keys)), get, keys, r)
        except TypeError:
            pass
        return r

    def _env_getter(self, fs: "_FamState") -> Tuple[Callable[[Any], Any], Tuple[Any, ...]]:
        # The variables resolve reads for the family, and a fast way to read
        # them: os.environ's own mapping by encoded names, or env.get.
        names = [ps.env for ps in fs.params] + [fs.use_env] + [a.alias.name for a in fs.aliases]
        if self._env is None:
            data = getattr(os.environ, "_data", None)
            enc = getattr(os.environ, "encodekey", None)
            if isinstance(data, dict) and enc is not None:
                try:
                    return data.get, tuple(enc(n) for n in names)
                except Exception:
                    pass
            return os.environ.get, tuple(names)
        return self._env.get, tuple(names)

    def _resolve_inputs(self, family: Any, dtype: Any, shape: Any, inputs: Any, dims: Any) -> Resolved:
        # A list or tuple of arrays seen before (same shapes and dtypes) binds
        # as it did: an application resolves its arrays on every call.
        key: Any = None
        if shape is None and (inputs.__class__ is list or inputs.__class__ is tuple):
            try:
                key = (family, tuple((tuple(a.shape), a.dtype) for a in inputs),
                       None if dims is None else tuple(sorted(dims.items())))
                hit = self._bind_cache.get(key)
            except Exception:  # no shape, unhashable: the exact path says what is wrong
                key = hit = None
            if hit is not None and (hit[0] is not None or dtype is not None):
                return self.resolve(family, hit[0] if dtype is None else dtype, hit[1])
        fs = self._fams.get(family) if isinstance(family, str) else None
        if fs is None:
            raise UnknownFamilyError(f"params: unknown kernel family {_shown(family)} (known: {', '.join(self.families)})")
        k = getattr(fs.fam, "spec", None)
        if k is None or k.mlx is None:
            raise UnknownFamilyError(f"params: {family} is not a spec kernel with an mlx source, so its buffers do not say "
                                     "which dims the inputs give; call resolve(family, dtype, shape)")
        if shape is not None:
            raise OptionsError("params: resolve takes a shape or inputs, not both")
        if inputs is None:
            raise OptionsError("params: resolve's dims come with inputs (the dims the input arrays do not give)")
        if dims is not None and not isinstance(dims, Mapping):
            raise OptionsError(f"params: resolve's dims is {_shown(dims)}; give a mapping of dim names to integers")
        found, shp = bind_inputs(k, family, inputs, dims)
        if found is None and dtype is None:
            raise UnknownDTypeError(f"params: {family}: no input buffer has the tuned dtype (each gives its own), so "
                                    "the inputs do not say it; pass dtype=")
        r = self.resolve(family, found if dtype is None else dtype, shp)
        if key is not None:
            if len(self._bind_cache) >= _CACHE_SIZE:
                self._bind_cache.clear()
            self._bind_cache[key] = (found, shp)
        return r

    def metal_kernel_args(self, family: str) -> Dict[str, Any]:
        """The arguments of mx.fast.metal_kernel for a spec kernel with an
        mlx source: name, input_names, output_names, source, header,
        ensure_row_contiguous, atomic_outputs (and compile_options when
        the spec's math_mode is not MLX's default, "safe"). A spec with
        source.mlx.format has a source per shape: Resolved.mlx_kernel_args."""
        fs = self._fams.get(family) if isinstance(family, str) else None
        if fs is None:
            raise UnknownFamilyError(f"params: unknown kernel family {_quote(str(family))} (known: {', '.join(self.families)})")
        k = getattr(fs.fam, "spec", None)
        if k is None or k.mlx is None:
            raise UnknownFamilyError(f"params: {family} is not a spec kernel with an mlx source (load(specs=[...]))")
        m = k.mlx
        if m.format:
            raise OptionsError(f"params: {family}'s source has placeholders (source.mlx.format: "
                               f"{', '.join(n for n, _ in m.format)}) filled per shape and parameters; build the kernel "
                               "from a resolve: r.mlx_kernel(), or mx.fast.metal_kernel(**r.mlx_kernel_args())")
        if m.format is not None:  # without placeholders: only the braces to unescape
            return kernel_args(m, fill_format(m.source_parts, {}), fill_format(m.header_parts, {}), m.name)
        return kernel_args(m, m.source, m.header, m.name)

    def _resolve(self, family: Any, dtype: Any, shape: Any) -> Resolved:
        fs = self._fams.get(family) if isinstance(family, str) else None
        if fs is None:
            raise UnknownFamilyError(f"params: unknown kernel family {_shown(family)} (known: {', '.join(self.families)})")
        dtype = dtype_name(dtype)
        if isinstance(shape, str):
            try:
                shp = parse_shape(shape)
            except InvalidShapeError as e:
                raise InvalidShapeError(f"params: invalid shape: {e}") from None
        else:
            # Integers of other types (numpy's, say) are accepted through __index__; bools are not.
            try:
                if any(isinstance(d, bool) for d in shape):
                    raise TypeError
                shp = tuple(operator.index(d) for d in shape)
            except TypeError:
                raise InvalidShapeError(f"params: invalid shape: shape={_shown(shape)} is not a sequence of integers nor dims joined by x") from None
        try:
            cls = fs.fam.classify(shp)
        except _ShapeError as e:
            raise InvalidShapeError(f"params: invalid shape: {e}") from None
        if fs.space is None:
            raise NoSpaceError(
                f"params: no parameters for this backend: {family} has no parameters for {fs.kind} backends "
                f"(device {_quote(self.device.key)}, backend {_quote(self.device.backend)})"
            )
        exact, clskey = f"{dtype}/{shape_string(shp)}", f"{dtype}/{cls}"
        layers: List[_EntryState] = []
        for dev in self._chain:
            em = dev.get(family)
            if em is None:
                continue
            if exact in em:
                layers.append(em[exact])
            if clskey in em:
                layers.append(em[clskey])
        r = Resolved(self.device.key, self.device.backend, family, dtype, shp, cls, {}, list(fs.names), self.device.matched)

        env_vars: List[Tuple[str, str]] = []
        alias_vars: List[Tuple[str, str]] = []
        aliased: Dict[str, Value] = {}
        for st in fs.aliases:
            raw = self._lookup(st.alias.name)
            if raw is None or _trim(raw) == "":
                continue
            vals = self._parse_alias(st, family, fs.kind, raw)
            alias_vars.append((st.alias.name, raw))
            for n, v in zip(st.alias.params, vals):
                if n not in aliased:
                    aliased[n] = Value(v, SOURCE_ENV_PREFIX + st.alias.name)
        for ps in fs.params:
            raw = self._lookup(ps.env)
            if raw is not None and _trim(raw) != "":
                v = self._parse_env(ps, family, fs.kind, raw)
                r.params[ps.param.name] = Value(v, SOURCE_ENV_PREFIX + ps.env)
                env_vars.append((ps.env, raw))
            elif ps.param.name in aliased:
                r.params[ps.param.name] = aliased[ps.param.name]
            else:
                r.params[ps.param.name] = _from_layers(ps, layers)
        for n, raw in alias_vars:
            if any(v.source == SOURCE_ENV_PREFIX + n for v in r.params.values()):
                env_vars.append((n, raw))
        if layers:
            r.use_baseline, r.baseline, r.use_source = layers[0].use_at(shp) == USE_BASELINE, layers[0].baseline, layers[0].source
        raw = self._lookup(fs.use_env)
        if raw is not None and _trim(raw) != "":
            v = _trim(raw)
            if v not in (USE_BASELINE, USE_TUNED):
                raise EnvError(
                    [(fs.use_env, raw)],
                    f"not an allowed value; {fs.use_env} chooses between the tuned {family} kernel and the baseline; allowed: {USE_BASELINE}, {USE_TUNED}",
                )
            r.use_baseline = v == USE_BASELINE
            r.use_source = SOURCE_ENV_PREFIX + fs.use_env
        spec = getattr(fs.fam, "spec", None)
        if fs.space.check is None:
            if spec is not None:
                r.launch = compute_launch(spec, shp, dtype, r.ints())
            return r
        err = _check(fs.space, shp, r.ints())
        if err is not None:
            err = self._degrade(r, fs, shp, layers, err)
        if err is None:
            if spec is not None:
                r.launch = compute_launch(spec, shp, dtype, r.ints())
            return r
        if env_vars:
            raise EnvError(
                env_vars,
                f"breaks the constraints of {family} for shape {shape_string(shp)} (class {cls}), even with the defaults for the other parameters: {err}",
            )
        raise DefaultsError(f"params: the built-in defaults break the family's constraints: {family} for shape {shape_string(shp)}: {err}")

    @staticmethod
    def _parse_env(ps: _ParamState, family: str, kind: str, raw: str) -> int:
        s = _trim(raw)
        p = ps.param
        if not _INT_RE.match(s):
            raise EnvError([(ps.env, raw)], f"not a base-10 integer; {family} {p.name} on {kind} backends allows {p.values_string()}")
        v = int(s)
        if v < _INT32_MIN or v > _INT32_MAX or not p.allowed(v):
            raise EnvError([(ps.env, raw)], f"not an allowed value of {family} {p.name} on {kind} backends; allowed: {p.values_string()}")
        return v

    @staticmethod
    def _parse_alias(st: _AliasState, family: str, kind: str, raw: str) -> List[int]:
        a = st.alias

        def fail(msg: str) -> EnvError:
            return EnvError([(a.name, raw)], msg)

        if st.params is None:
            raise fail(f"sets {', '.join(a.params)}, which {family} does not have on {kind} backends")
        parts = _trim(raw).split(a.sep)
        if len(parts) != len(st.params):
            ex = a.sep.join(str(p.default) for p in st.params)
            raise fail(f"not {len(st.params)} values joined by {_quote(a.sep)}: write {a.sep.join(a.params)}, e.g. {ex}")
        vals = []
        for part, p in zip(parts, st.params):
            s = _trim(part)
            if not _INT_RE.match(s):
                raise fail(f"{p.name} ({_quote(part)}) is not a base-10 integer; {family} {p.name} on {kind} backends allows {p.values_string()}")
            v = int(s)
            if v < _INT32_MIN or v > _INT32_MAX or not p.allowed(v):
                raise fail(f"{p.name}={s} is not an allowed value of {family} {p.name} on {kind} backends; allowed: {p.values_string()}")
            vals.append(v)
        return vals

    @staticmethod
    def _degrade(r: Resolved, fs: _FamState, shape: Sequence[int], layers: List[_EntryState], err: str) -> Optional[str]:
        # As the Go loader: the subsets of the first 8 matching entries, those
        # keeping higher entries first, down to the defaults alone; the
        # variables' values stay.
        n = min(len(layers), 8)
        assert fs.space is not None
        for mask in range((1 << n) - 2, -1, -1):
            sub = [layers[i] for i in range(n) if mask & (1 << (n - 1 - i))]
            for ps in fs.params:
                if not r.params[ps.param.name].source.startswith(SOURCE_ENV_PREFIX):
                    r.params[ps.param.name] = _from_layers(ps, sub)
            e = _check(fs.space, shape, r.ints())
            if e is None:
                return None
            err = e
        return err


_CACHE_SIZE = 4096


def _shown(v: Any) -> str:
    if isinstance(v, str):
        return _quote(v)
    try:
        return _quote(repr(v))[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    except Exception:
        return f"<{type(v).__name__}>"


def _check(space: Space, shape: Optional[Sequence[int]], p: Mapping[str, int]) -> Optional[str]:
    if space.check is None:
        return None
    try:
        return space.check(shape, p)
    except Exception as e:  # a family's check must not crash the loader (Go recovers panics)
        return f"Check panicked: {e}"


def _from_layers(ps: _ParamState, layers: Sequence[_EntryState]) -> Value:
    for e in layers:
        if ps.param.name in e.params:
            return Value(e.params[ps.param.name], e.source)
    return Value(ps.default, SOURCE_DEFAULT)


def _sorted_keys(m: Mapping[str, Any]) -> List[str]:
    # Go sorts strings by their UTF-8 bytes.
    return sorted(m, key=lambda k: k.encode("utf-8", "surrogatepass"))


def _describe_device(k: str, d: _Device) -> str:
    return f"{k} (backend {d.backend}, name {_quote(d.name)}, compute units {d.compute_units}, family {d.family})"


def _describe_local(d: DeviceID) -> str:
    return f"{d.key} (backend {d.backend}, name {_quote(d.name)}, compute units {d.compute_units}, family {d.family})"


def _only_device_fits(dev: _Device, k: str, backend: str, local: DeviceID, use_local: bool) -> Tuple[bool, str]:
    # As the Go loader's onlyDeviceFits: (whether it is the local device
    # itself or nothing is known to compare it with, why it may not stand
    # for the device the loader runs for; "" when it may).
    if backend and dev.backend != backend:
        return False, f"is of backend {dev.backend}, not {backend} (backend=)"
    if not use_local:
        return True, ""
    if dev.backend != local.backend:
        return False, f"is not the local device {_describe_local(local)}: another backend"
    if local.key and k == local.key:
        return True, ""
    name = fold_device_name(local.name)
    if name == "" or fold_device_name(dev.name) != name or (dev.family and local.family and dev.family != local.family):
        return False, f"is not the local device {_describe_local(local)}: another model"
    return False, ""


def _device_kind(dev: Any) -> str:
    """The kind of parameter space of a device in the file: its record's space, else its backend's."""
    return dev.space or space_kind(dev.backend)


def _siblings(devices: Optional[Mapping[str, _Device]], self_key: str, family: str, backend: str) -> List[str]:
    if devices is None or family == "":
        return []
    same, other = [], []
    for k in _sorted_keys(devices):
        dv = devices[k]
        if k == self_key or dv.family != family:
            continue
        if backend and dv.backend != backend and _device_kind(dv) != space_kind(backend):
            continue
        (same if dv.backend == backend else other).append(k)
    return same + other


# ---------------------------------------------------------------------------
# Entry points


class IOError_(ParamsError):
    """A params file that exists but cannot be read; __cause__ is the OSError."""

    kind = "io"


_KNOWN_ARGS = ("device", "device_name", "compute_units", "backend", "device_family", "env_prefix", "env", "specs",
               "defaults", "aliases", "local", "local_gpu")


def _arg_error(name: str, v: Any, want: str) -> OptionsError:
    return OptionsError(f"params: {name}={_shown(v)}: must be {want}")


def _options(kw: Dict[str, Any]) -> Dict[str, Any]:
    """Checks the arguments' types: every problem is an OptionsError naming the argument."""
    for k in kw:
        if k not in _KNOWN_ARGS:
            raise OptionsError(f"params: unknown argument {k}= (known: {', '.join(_KNOWN_ARGS)})")
    for k in ("device", "device_name", "backend", "device_family", "env_prefix"):
        v = kw.get(k)
        if v is not None and not isinstance(v, str):
            raise _arg_error(k, v, "a str or None")
    cu = kw.get("compute_units", 0)
    if cu is None:
        kw["compute_units"] = cu = 0
    if not _is_int(cu) or cu > _INT32_MAX:
        raise _arg_error("compute_units", cu, f"an int from 0 (unknown) to {_INT32_MAX}")
    env = kw.get("env")
    if env is not None and not isinstance(env, Mapping):
        raise _arg_error("env", env, "a mapping of str to str, or None (os.environ)")
    if env is not None:
        for n, v in env.items():
            if not isinstance(n, str) or not isinstance(v, str):
                raise _arg_error("env", {n: v}, "a mapping of str to str")
    specs = kw.get("specs", ())
    if specs is None:
        kw["specs"] = specs = ()
    if isinstance(specs, (str, bytes)) or not isinstance(specs, (list, tuple)):
        raise _arg_error("specs", specs, "a list of spec file paths")
    for x in specs:
        if not isinstance(x, (str, os.PathLike)):
            raise _arg_error("specs", specs, "a list of spec file paths (str or os.PathLike)")
    d = kw.get("defaults")
    if d is not None:
        if not isinstance(d, Mapping) or not all(
                isinstance(f, str) and isinstance(m, Mapping) and all(isinstance(n, str) and _is_int(x) for n, x in m.items())
                for f, m in d.items()):
            raise _arg_error("defaults", d, "a mapping {family: {param: int}}")
    al = kw.get("aliases", ())
    if al is None:
        kw["aliases"] = al = ()
    if not isinstance(al, (list, tuple)):
        raise _arg_error("aliases", al, "a list of kerntune_params.alias(...)")
    for i, a in enumerate(al):
        if not isinstance(a, Alias) or not isinstance(a.name, str) or not isinstance(a.sep, str) or not isinstance(
                a.family, str) or not isinstance(a.params, tuple) or not all(isinstance(p, str) for p in a.params):
            raise _arg_error(f"aliases[{i}]", a, "made by kerntune_params.alias(name: str, params: [str], sep: str, family: str)")
    loc = kw.get("local")
    if loc is not None and not isinstance(loc, (bool, DeviceID, Mapping)):
        raise _arg_error("local", loc, "None, a bool, a DeviceID or a dict of its fields")
    if isinstance(loc, Mapping):
        try:
            loc = DeviceID(**dict(loc))
        except TypeError:
            raise _arg_error("local", loc, "a dict of DeviceID's fields (key, backend, name, family, compute_units)") from None
    if isinstance(loc, DeviceID):
        if not all(isinstance(getattr(loc, f), str) for f in ("key", "backend", "name", "family")) or not _is_int(loc.compute_units):
            raise _arg_error("local", loc, "a DeviceID of str fields and int compute_units")
        kw["local"] = loc
    g = kw.get("local_gpu")
    if g is True:
        kw["local_gpu"] = g = None
    if g is not None and g is not False:
        if isinstance(g, Mapping):
            try:
                g = DeviceID(**dict(g))
            except TypeError:
                raise _arg_error("local_gpu", g, "a dict of DeviceID's fields (backend, name, compute_units)") from None
        if not isinstance(g, DeviceID) or not isinstance(g.name, str) or not isinstance(g.backend, str) or not _is_int(g.compute_units):
            raise _arg_error("local_gpu", g, "None (ask the system), False (no lookup) or a DeviceID")
        kw["local_gpu"] = g
    prefix = kw.get("env_prefix") or DEFAULT_ENV_PREFIX
    if not _IDENT_RE.match(prefix):
        raise OptionsError(f"params: env_prefix {_quote(prefix)} is not an identifier")
    kw["env_prefix"] = prefix
    return kw


def load(
    path: Optional[Union[str, "os.PathLike[str]"]] = None,
    device_name: Optional[str] = None,
    *,
    device: Optional[str] = None,
    compute_units: int = 0,
    backend: Optional[str] = None,
    device_family: Optional[str] = None,
    env_prefix: str = DEFAULT_ENV_PREFIX,
    env: Optional[Mapping[str, str]] = None,
    specs: Sequence[Union[str, "os.PathLike[str]"]] = (),
    defaults: Optional[Mapping[str, Mapping[str, int]]] = None,
    aliases: Sequence[Alias] = (),
    local: Union[None, bool, DeviceID, Mapping[str, Any]] = None,
    local_gpu: Union[None, bool, DeviceID, Mapping[str, Any]] = None,
    required: bool = False,
) -> Loader:
    """Opens the params file: path, else $<PREFIX>_PARAMS, else
    ./hardware_params.json (Go's params.Open). A missing file is no error:
    defaults and variables apply (a warning when the file was named), so an
    application runs where its file is not shipped. With required=True a
    missing file raises IOError_ whose __cause__ is the FileNotFoundError
    (Go's params.Load). A damaged file raises PathError naming the file and
    the JSON path.

    The device whose entries apply is the key device (else $<PREFIX>_DEVICE)
    if the file holds it; else the device named device_name (else
    $<PREFIX>_DEVICE_NAME replaces it), as the system reports it ("Apple M3
    Max" from mx.metal.device_info()["device_name"], "NVIDIA H100 80GB
    HBM3"), of backend when given, the nearest compute_units among several;
    else the file's only device, unless it is another machine's (of another
    backend than backend or the local device's, or another model than the
    local device's: then it is only a fallback, with a warning); else, when
    nothing names a device, the local
    device (local: None for this CPU, a DeviceID or dict, False for none);
    else the fallback devices of device_family. The loader's ``device`` and
    ``warnings`` say what happened. env is the environment (default
    os.environ, read at every resolve); specs are kernel spec files whose
    kernels resolve like built-in families; defaults replaces built-in
    defaults per family and parameter; aliases are composite variables."""
    o = _options(dict(device=device, device_name=device_name, compute_units=compute_units, backend=backend,
                      device_family=device_family, env_prefix=env_prefix, env=env, specs=specs, defaults=defaults,
                      aliases=aliases, local=local, local_gpu=local_gpu))
    if not isinstance(required, bool):
        raise _arg_error("required", required, "True or False")
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise _arg_error("path", path, "a str, an os.PathLike or None")
    if path is not None and not isinstance(os.fspath(path), str):
        raise _arg_error("path", path, "a str path (not bytes)")
    e = os.environ if env is None else env
    explicit = path is not None and os.fspath(path) != ""
    p = os.fspath(path) if explicit else ""
    if not explicit:
        v = e.get(o["env_prefix"] + "_PARAMS")
        if v:
            p, explicit = v, True
        else:
            p = DEFAULT_FILE_NAME
    named = path is not None and os.fspath(path) != ""
    try:
        data = _read_limited(p)
    except _TooLarge as x:
        raise PathError(p, "", x.message("a params file")) from None
    except FileNotFoundError as x:
        if required is True:
            raise IOError_(f"params: open {p}: no such file or directory") from x
        l = Loader(None, p, **o)
        if explicit:
            l.warnings.insert(0, f"params file {p} does not exist; built-in defaults apply")
    except (OSError, ValueError) as x:  # ValueError: a NUL in the path
        err = IOError_(f"params: {x}")
        raise err from x
    else:
        devs, unknown = parse_noting(data, p)
        l = Loader(devs, p, unknown=unknown, **o)
    if not named:
        l._unread.pop(o["env_prefix"] + "_PARAMS", None)  # it was read, set or not
    return l


def loads(data: Union[bytes, str], device_name: Optional[str] = None, **kw: Any) -> Loader:
    """Loads params file contents (Go's params.LoadBytes); errors name
    "params data" instead of a file. Takes load's keyword arguments."""
    if not isinstance(data, (bytes, bytearray, memoryview, str)):
        raise _arg_error("data", data, "bytes or str")
    if not isinstance(data, (bytes, str)):
        data = bytes(data)
    o = _options(dict(kw, device_name=device_name))
    for k, dflt in (("device", None), ("compute_units", 0), ("backend", None), ("device_family", None), ("env", None),
                    ("specs", ()), ("defaults", None), ("aliases", ()), ("local", None), ("local_gpu", None)):
        o.setdefault(k, dflt)
    devs, unknown = parse_noting(data, "")
    return Loader(devs, "", unknown=unknown, **o)

