"""The Facts snapshot: a versioned JSON document with typed accessors for checks."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from doctor.errors import BadBundle
from doctor.facts import schema
from doctor.facts.document import SCHEMA_NAME, SCHEMA_VERSION, validated

__all__ = ["Facts", "SCHEMA_NAME", "SCHEMA_VERSION"]
SECTIONS = ("nvml", "packages", "host", "env")


class Facts:
    """An immutable view over a facts document (as written by `qwen-doctor collect`)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self._pairs: dict[tuple[Any, Any], dict[str, Any]] | None = None

    @property
    def data(self) -> dict[str, Any]:
        return self._data

    @property
    def nvml(self) -> dict[str, Any]:
        return self._data.get("nvml") or {}

    @property
    def nvml_available(self) -> bool:
        return bool(self.nvml.get("available"))

    @property
    def gpus(self) -> list[dict[str, Any]]:
        return list(self.nvml.get("gpus") or [])

    @property
    def topology(self) -> list[dict[str, Any]]:
        return list(self.nvml.get("topology") or [])

    def topology_pair(self, a: int, b: int) -> dict[str, Any] | None:
        """The recorded topology entry of GPUs a and b (either order), found in constant time."""
        if self._pairs is None:
            self._pairs = {}
            for p in self.topology:
                self._pairs.setdefault((p.get("a"), p.get("b")), p)
        return self._pairs.get((min(a, b), max(a, b)))

    @property
    def packages(self) -> dict[str, Any]:
        return self._data.get("packages") or {}

    @property
    def inventory(self) -> list[dict[str, Any]]:
        """Every distribution recorded (name, version, location): all installed ones from a collector, those
        listed in a pasted dump (`inventory_complete` False), none from a bundle older than the inventory."""
        section = self._data.get("inventory") or {}
        out = []
        for location, lines in (section.get("locations") or {}).items():
            for line in str(lines).splitlines():
                name, sep, version = line.partition("==")
                if sep and name and version:
                    out.append({"name": name, "version": version, "location": location})
        return out

    @property
    def inventory_complete(self) -> bool:
        """True when the inventory lists everything installed (a collector read every metadata directory)."""
        section = self._data.get("inventory") or {}
        return bool(section.get("complete")) and section.get("source") == "metadata"

    @property
    def host(self) -> dict[str, Any]:
        return self._data.get("host") or {}

    @property
    def env(self) -> dict[str, str]:
        return self._data.get("env") or {}

    @property
    def probes(self) -> dict[str, Any]:
        return self._data.get("probes") or {}

    def package(self, name: str) -> dict[str, Any] | None:
        """The recorded entry of an installed package, or None when it is absent."""
        entry = self.packages.get(name)
        return entry if isinstance(entry, dict) and entry.get("version") else None

    def package_version(self, name: str) -> str | None:
        entry = self.package(name)
        return entry["version"] if entry else None

    @property
    def origin(self) -> dict[str, Any] | None:
        """Where the facts come from when they are not a collector's bundle: a pasted environment dump
        (doctor/facts/envdump.py) with its format, engine and the facts it does not hold."""
        origin = self._data.get("origin")
        return origin if isinstance(origin, dict) else None

    def knows(self, fact: str) -> bool:
        """False when the facts come from a dump that does not hold `fact` ('gpus', 'gpu.processes', 'env',
        'torch.cuda', 'packages.<name>', ...): a check must skip rather than take the absence for a good value.
        A collector's bundle knows everything it has a section for."""
        origin = self.origin
        if origin is None:
            return True
        if fact.startswith("packages."):
            return fact[len("packages."):] in self.packages
        return fact not in (origin.get("unknown") or [])

    def probe_error(self, name: str) -> str | None:
        """Why a probe produced nothing (error or timeout), or None when it ran."""
        probe = self.probes.get(name) or {}
        if probe.get("status", "ok") == "ok":
            return None
        return probe.get("error") or probe.get("status")

    def to_json(self) -> str:
        """The bundle as written for others (`collect`): every string redacted (`doctor.redact`), not only the env
        probe's values (an HF_ENDPOINT with a password is also the hf probe's URL, a node's facts carry theirs)."""
        from doctor.redact import redact_document

        return json.dumps(redact_document(self._data), indent=1, sort_keys=False, default=str)

    def save(self, path: Path) -> None:
        """Write atomically (`doctor.outfile`), so an interrupted write never leaves a half bundle behind."""
        from doctor.outfile import write_file

        write_file(path, self.to_json() + "\n", what="bundle")

    @classmethod
    def load(cls, path: str | Path) -> "Facts":
        """Read a bundle; any problem becomes a one-line BadBundle."""
        from doctor.safeio import BUNDLE_MAX_BYTES, BadJSON, InputError, load_json, read_bytes
        from doctor.unicode_text import utf8_bytes

        p = Path(path)
        try:
            raw = utf8_bytes(_gunzipped(read_bytes(p, "bundle", BUNDLE_MAX_BYTES), p))
        except InputError as exc:
            raise BadBundle(str(exc)) from None
        if raw.lstrip()[:1] not in (b"{", b"[") and _is_text(raw):
            return cls._from_dump(raw, str(p))
        try:
            data = load_json(raw, "bundle", str(p), unique_keys=True)  # a key named twice: which one counts is a guess
        except BadJSON as exc:
            raise BadBundle(f"{p} is not a qwen-doctor facts bundle: invalid JSON ({exc.detail})") from None
        except InputError as exc:
            raise BadBundle(str(exc)) from None
        schema.check_tree(data, str(p))  # what load_json lets through: integers beyond 64 bits, named by path
        _bounded_topology(data, str(p))
        return cls.from_dict(data, source=str(p), parsed=True)

    @classmethod
    def _from_dump(cls, raw: bytes, source: str) -> "Facts":
        """Facts from a pasted vLLM collect_env / SGLang check_env dump (doctor/facts/envdump.py)."""
        from doctor.facts import envdump

        return cls.from_dict(envdump.parse(raw.decode("utf-8"), source), source=source)

    @classmethod
    def from_dict(cls, data: Any, source: str = "bundle", parsed: bool = False) -> "Facts":
        """Validate a facts document; `parsed` when it comes from schema.parse_json (depth and numbers screened)."""
        return cls(validated(data, source, parsed=parsed))


# The GPUs of one host whose pairs a bundle may record: the checks judge pairs inside one tensor-parallel group,
# which lives on one host (HGX / DGX boards hold 8 or 16 GPUs); more pairs would only make validation and the
# report quadratic in GPUs.
MAX_TOPOLOGY_GPUS = 64
MAX_TOPOLOGY_PAIRS = MAX_TOPOLOGY_GPUS * (MAX_TOPOLOGY_GPUS - 1) // 2


def _bounded_topology(data: Any, source: str) -> None:
    """Refuse a bundle recording more GPU pairs than one host can have (BadBundle, one line)."""
    nvml = data.get("nvml") if isinstance(data, dict) else None
    topology = nvml.get("topology") if isinstance(nvml, dict) else None
    if isinstance(topology, list) and len(topology) > MAX_TOPOLOGY_PAIRS:
        raise BadBundle(f"{source}: nvml.topology lists {len(topology)} GPU pairs, more than one host's "
                        f"{MAX_TOPOLOGY_GPUS} GPUs can have ({MAX_TOPOLOGY_PAIRS}); a cluster is a fleet bundle "
                        "(`qwen-doctor collect --ray/--spark`), one topology per node")


def _is_text(raw: bytes) -> bool:
    """UTF-8 without NUL bytes: what a pasted dump is (anything else is judged as JSON, and refused as such)."""
    if b"\x00" in raw:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _gunzipped(raw: bytes, path: Path) -> bytes:
    """A gzip-compressed bundle (`gzip bundle.json` before attaching it to a ticket) decompressed, within the
    same size cap as a plain one; another compressed format or archive refused by name; other bytes as they are."""
    from doctor.compressed import refusal
    from doctor.safeio import BUNDLE_MAX_BYTES, InputError, gunzip

    if raw[:2] != b"\x1f\x8b":
        packed = refusal(raw)
        if packed:
            raise BadBundle(f"bundle {path}: {packed}")
        return raw
    try:
        return gunzip(raw, "bundle", str(path), BUNDLE_MAX_BYTES)
    except zlib.error as exc:
        raise BadBundle(f"{path} is not a qwen-doctor facts bundle: corrupt gzip data ({exc})") from None
    except EOFError:
        raise BadBundle(f"{path} is not a qwen-doctor facts bundle: truncated gzip data") from None
    except InputError as exc:
        raise BadBundle(str(exc)) from None
