"""Hostnames and IP addresses replaced by stable pseudonyms (`[HOST-1]`, `[IP-1]`) for `--redact-hosts`.

A `HostHider` learns hosts from the values of host-carrying keys (hostname, MASTER_ADDR, RAY_ADDRESS, *_HOST,
host lists such as NO_PROXY, FQDN-shaped items of NCCL_SOCKET_IFNAME / NCCL_IB_HCA lists), then hides in any
text: those hosts (and their longer forms, `node-1` also hides `node-1.corp.example`), URL hosts, IPv4 and
IPv6 addresses and fully qualified names under a common top-level domain. Loopback, wildcard and public
sites that sources link to (github.com, huggingface.co...) stay. Each pattern is linear in its input.
"""

from __future__ import annotations

import ipaddress
import re

_HOST_KEYS = frozenset({"hostname", "host", "node", "node_name", "node_ip", "node_ip_address", "ip", "address",
                        "head_address", "gcs_address", "driver_host", "master", "master_addr", "fqdn",
                        "nccl_comm_id", "no_proxy", "nodelist", "hosts"})
_HOST_SUFFIXES = ("_ADDR", "_ADDRESS", "_HOST", "_HOSTS", "_HOSTNAME", "_NODE_IP", "_NODELIST", "_IP")
# Device/interface lists where an item is a host only when it is a dotted name or an address.
_DEVICE_LIST_KEYS = re.compile(r"IFNAME|_HCA$|_DEVICES?$")
_KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", ""})
# Public sites that sources and remedies link to: naming them identifies no customer.
_PUBLIC_DOMAINS = ("huggingface.co", "hf.co", "github.com", "githubusercontent.com", "pypi.org",
                   "pythonhosted.org", "pytorch.org", "nvidia.com", "vllm.ai", "sglang.ai", "ray.io",
                   "apache.org", "docker.com", "docker.io", "nvcr.io", "python.org", "example.com")
# Top-level domains (and private-network suffixes) that make a dotted word a host name rather than a file name
# or a Python module path.
_TLDS = frozenset("com net org io ai dev cloud internal lan corp intra intranet home arpa edu gov local svc cluster "
                  "site app tech xyz me us uk de fr cn jp kr eu ca au nl se ch sg hk tw ru br co".split())
_IPV4 = re.compile(r"(?<![\w.=])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_WORD = re.compile(r"(?<![A-Za-z0-9-])[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,16}")
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://")
_AUTHORITY = re.compile(r"[^\s/?#\"'`<>\\]*")
_ITEM_SPLIT = re.compile(r"[\s,;]+")
_PORT = re.compile(r":\d{1,5}\Z")
_PSEUDONYM = re.compile(r"(?:HOST|IP)-\d{1,9}")
_IP_SHAPE = re.compile(r"[0-9.]{7,15}|[0-9A-Fa-f:.]{2,45}")


# Every host any hider learnt in this process, for a `shared` hider (stderr) that hides what reports hid.
_LEARNT: list[str] = []


class HostHider:
    """Learn host names from host-carrying keys, then hide hosts in any text; a `shared` hider also hides the
    hosts that the other hiders of this process learnt."""

    def __init__(self, known: tuple[str, ...] = (), shared: bool = False) -> None:
        self.shared = shared
        self._synced = 0
        self.pseudonyms: dict[str, str] = {}
        self._counts: dict[str, int] = {"IP": 0, "HOST": 0}
        self._known: dict[str, str] = {}
        self._added: set[str] = set()
        self._places: set[str] = set()
        self._kept: set[str] = set()
        for host in known:
            self.add(host)

    def learn(self, key: str, value: str) -> None:
        """Remember the hosts in `value` when `key` names a host, a host list or a device list."""
        norm = re.sub(r"[^A-Za-z0-9]+", "_", key).upper()
        device_list = _DEVICE_LIST_KEYS.search(norm) is not None
        if not (device_list or key.lower() in _HOST_KEYS or norm.endswith(_HOST_SUFFIXES)):
            return
        if "://" in value:
            return
        for item in _ITEM_SPLIT.split(value[:65536]):
            host = _PORT.sub("", item.lstrip("^=!@.").strip("[]"))
            if device_list and not (_is_ip(host) or _dotted_name(host)):
                continue
            self.add(host)

    def add(self, host: str) -> None:
        """Hide `host` from now on (and, for a dotted name, its first label on its own)."""
        host = host.strip().rstrip(".")
        if host in self._added or _PSEUDONYM.fullmatch(host):
            return
        self._added.add(host)
        if not host or host.lower() in _KEEP_HOSTS or _is_local(host) or host.startswith("["):
            return
        if _is_ip(host):
            self.pseudonym(host)
            return
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}", host) or _is_public(host):
            return
        self._known.setdefault(host.lower(), host.lower())
        if not self.shared:
            _LEARNT.append(host)
        first = host.split(".")[0].lower()
        if "." in host and len(first) >= 4:
            self._known.setdefault(first, host.lower())
        self.pseudonym(host)

    def hide(self, text: str) -> str:
        """`text` with known hosts, URL hosts, IP addresses and dotted host names replaced by pseudonyms."""
        if self.shared and self._synced < len(_LEARNT):
            for host in _LEARNT[self._synced:]:
                self.add(host)
            self._synced = len(_LEARNT)
        text = _SCHEME.sub(self._url, text) if "://" in text else text
        text = _WORD.sub(self._word, text)
        if "." in text:
            text = _IPV4.sub(lambda m: self.pseudonym(m.group(0)) if _is_ip(m.group(0)) else m.group(0), text)
        if ":" in text:
            text = _IPV6.sub(self._ipv6, text)
        return text

    def _ipv6(self, m: re.Match[str]) -> str:
        addr = m.group(0)
        if addr in self.pseudonyms or addr in self._kept:
            return self.pseudonym(addr)
        return self.pseudonym(addr) if ("::" in addr or addr.count(":") == 7) and _is_ip(addr) else addr

    def _url(self, m: re.Match[str]) -> str:
        # Only the scheme is consumed: the authority that follows is plain text to the word pass, which hides
        # any host name; here an unknown one-label host (http://gpu7:8000) is learnt first.
        place = _AUTHORITY.match(m.string, m.end()).group().rpartition("@")[2]
        if place not in self._places:
            self._places.add(place)
            host = place[1:place.find("]")] if place.startswith("[") else _PORT.sub("", place)
            if host and (_is_ip(host) or not place.startswith("[")) and not _is_public(host):
                self.add(host)
        return m.group(0)

    def _word(self, m: re.Match[str]) -> str:
        word = m.group(0)
        lower = word.lower().rstrip(".")
        if lower in self._known:
            return self.pseudonym(self._known[lower])
        first = lower.split(".")[0]
        if "." in lower and first in self._known and not _is_public(lower):
            return self.pseudonym(self._known[first])
        if _dotted_name(lower) and lower.rpartition(".")[2] in _TLDS and not _is_public(lower):
            return self.pseudonym(lower)
        return word

    def pseudonym(self, host: str) -> str:
        """A stable stand-in per host or address; loopback, wildcard and already hidden values stay as they are."""
        key = host.lower()
        if key in self.pseudonyms:
            return self.pseudonyms[key]
        if key in self._kept or key in _KEEP_HOSTS or host.startswith("[") or _is_local(host):
            self._kept.add(key)
            return host
        kind = "IP" if _is_ip(host) else "HOST"
        self._counts[kind] += 1
        self.pseudonyms[key] = f"[{kind}-{self._counts[kind]}]"
        return self.pseudonyms[key]


def _dotted_name(host: str) -> bool:
    """A name of two or more labels ending in a letter label (node.corp, not eth0.100 nor a version)."""
    labels = host.split(".")
    return len(labels) >= 2 and all(labels) and labels[-1][:1].isalpha() and not _is_ip(host)


def _is_ip(text: str) -> bool:
    if _IP_SHAPE.fullmatch(text) is None:
        return False
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_public(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in _PUBLIC_DOMAINS)


def _is_local(text: str) -> bool:
    if _IP_SHAPE.fullmatch(text) is None:
        return False
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return False
    return addr.is_loopback or addr.is_unspecified
