"""Hugging Face: endpoint reachability (mirror and default), model access (gated / token / not found), offline cache."""

from __future__ import annotations

from typing import Any, Iterator

from doctor.context import CheckContext
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

HINT = "run `qwen-doctor check --hf` to probe Hugging Face"
REDIRECTS = (301, 302, 303, 307, 308)


def _hf(ctx: CheckContext) -> dict[str, Any] | None:
    hf = ctx.facts.data.get("hf")
    return hf if isinstance(hf, dict) else None


def _layer_failure(ep: dict[str, Any]) -> str | None:
    """Why the endpoint gave no HTTP answer at all (DNS, TCP, or HTTP timeout), or None when it answered."""
    if ep.get("error"):
        return ep["error"]
    for layer in ("dns", "tcp"):
        if ep.get(layer) and not ep[layer]["ok"]:
            return ep[layer]["error"]
    api = ep.get("api") or {}
    if api and api.get("status") is None:
        return api.get("error")
    return None


@check("QD-HF-001", "Hugging Face endpoint reachable", category="hf", severity="high")
def endpoint_reachable(ctx: CheckContext) -> Iterator[Outcome]:
    """DNS, TCP and HTTP to HF_ENDPOINT (a mirror) and to the default endpoint, each under a short timeout."""
    hf = _hf(ctx)
    if hf is None:
        yield skip(f"not probed; {HINT}")
        return
    if hf.get("offline"):
        yield skip("HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE is set: the network is not used (see QD-HF-003)")
        return
    if not hf.get("endpoints"):
        yield skip(f"{hf.get('model')} is a local directory: no endpoint needed")
        return
    mirror_used = any(ep["role"] == "mirror" for ep in hf["endpoints"])
    for ep in hf["endpoints"]:
        evidence = {k: ep.get(k) for k in ("url", "dns", "tcp", "seconds")}
        why = _layer_failure(ep)
        if why is None:
            status = (ep.get("api") or {}).get("status")
            if status is not None and status >= 500:
                yield fail(f"{ep['url']} answers HTTP {status}", subject=ep["role"], evidence=evidence,
                           fix=["The endpoint is up but failing: retry later or switch HF_ENDPOINT."])
            else:
                took = f" in {ep['seconds']:.2f} s" if isinstance(ep.get("seconds"), (int, float)) else ""
                yield ok(f"{ep['url']} answers{took}", subject=ep["role"], evidence=evidence)
            continue
        if ep["role"] == "default" and mirror_used:
            yield warn(f"{ep['url']} unreachable ({why}); HF_ENDPOINT={hf.get('endpoint_env')} is used instead",
                       subject=ep["role"], evidence=evidence,
                       details=["Tools that ignore HF_ENDPOINT (custom download scripts, some launchers) will fail."],
                       fix=["Make sure every node and every tool uses the mirror (export HF_ENDPOINT everywhere)."])
            continue
        fix = (["Check the mirror URL in HF_ENDPOINT, or unset it to use the default endpoint."]
               if ep["role"] == "mirror" else
               ["Offline machine? Pre-download the weights elsewhere and set HF_HUB_OFFLINE=1 (see QD-HF-003), "
                "or set HF_ENDPOINT to a reachable mirror, or configure HTTPS_PROXY."])
        via = f" through proxy {ep['proxy']}" if ep.get("proxy") else ""
        yield fail(f"{ep['url']} unreachable{via}: {why}", subject=ep["role"], evidence=evidence, fix=fix)


def _effective(hf: dict[str, Any]) -> dict[str, Any] | None:
    endpoints = hf.get("endpoints") or []
    return endpoints[0] if endpoints else None


@check("QD-HF-002", "Model metadata and download URL accessible", category="hf", severity="high")
def model_access(ctx: CheckContext) -> Outcome:
    """The metadata API and one file's /resolve/ URL (the data plane) on the endpoint the engine will use."""
    hf = _hf(ctx)
    if hf is None:
        return skip(f"not probed; {HINT}")
    ep = _effective(hf)
    if ep is None or hf.get("offline"):
        return skip("no endpoint probed (offline mode or a local model directory)")
    if _layer_failure(ep) is not None:
        return skip(f"{ep['url']} unreachable (see QD-HF-001)")
    model, api, file = hf["model"], ep.get("api") or {}, ep.get("file") or {}
    evidence = {"url": ep["url"], "api": api, "file": file, "redirect": ep.get("redirect")}
    for part, resp in (("metadata API", api), ("download URL", file)):
        verdict = _http_verdict(part, resp, model, hf.get("token_set", False), ep["url"])
        if verdict is not None:
            verdict.evidence = evidence
            return verdict
    redirect = ep.get("redirect")
    if redirect:
        blocked = next((redirect[layer]["error"] for layer in ("dns", "tcp")
                        if redirect.get(layer) and not redirect[layer]["ok"]), None)
        if blocked:
            return fail(f"downloads redirect to {redirect['host']}, which is unreachable: {blocked}",
                        details=["The metadata API works, so tools that only list files succeed; weights fail."],
                        fix=[f"Allow {redirect['host']}:{redirect['port']} through the firewall/proxy, or use a mirror "
                             "(HF_ENDPOINT) that serves the files itself."], evidence=evidence)
    return ok(f"{model}: metadata {api.get('status')}, download URL {file.get('status')} on {ep['url']}",
              evidence=evidence)


def _http_verdict(part: str, resp: dict[str, Any], model: str, token_set: bool, url: str) -> Outcome | None:
    status, code = resp.get("status"), resp.get("error_code")
    if status is None:
        return fail(f"{part} of {model} gave no answer: {resp.get('error')}",
                    fix=["The endpoint is slow or stalls: retry, or use a closer mirror (HF_ENDPOINT)."])
    if 200 <= status < 300 or status in REDIRECTS:
        return None
    if code == "GatedRepo" or status == 403:
        return fail(f"{model} is gated: {part} answers {status}" + (" with your token" if token_set else ""),
                    details=["huggingface_hub raises GatedRepoError: 'Cannot access gated repo'."],
                    fix=["Accept the model's conditions on its page with your account, then set HF_TOKEN "
                         "(or `hf auth login`) on every node." if not token_set else
                         "Your token has no access: accept the conditions with the token's account, or use a token "
                         "with read access."])
    if status == 401:
        return fail(f"{part} of {model} requires authentication (401)" + (": the token was rejected" if token_set else ""),
                    details=["401 means a gated or private repo without valid credentials, or a repo that does not "
                             "exist (huggingface_hub reports it as RepositoryNotFoundError)."],
                    fix=["Check the repo id, then set a valid HF_TOKEN on every node." if not token_set else
                         "Create a new token with read access and set HF_TOKEN."])
    if status == 404:
        what = {"RevisionNotFound": "revision", "EntryNotFound": "file"}.get(code or "", "repository")
        return fail(f"{part}: {what} not found on {url} (404, {code or 'no error code'})",
                    fix=[f"Check the model id {model!r} and revision; a mirror may not carry this model yet."])
    return fail(f"{part} of {model} answers HTTP {status}", fix=["Retry later or switch HF_ENDPOINT."])


@check("QD-HF-003", "Local weights complete for offline use", category="hf", severity="high")
def cache_complete(ctx: CheckContext) -> Outcome:
    """With HF_HUB_OFFLINE, every safetensors shard named by the index must be in the cache, whole."""
    hf = _hf(ctx)
    if hf is None:
        return skip(f"not probed; {HINT}")
    cache, offline, model = hf.get("cache") or {}, bool(hf.get("offline")), hf.get("model")
    bad = fail if offline else warn
    where = cache.get("local_path") or cache.get("snapshot") or cache.get("repo_dir")
    if not cache.get("local_path") and not cache.get("cached"):
        if offline:
            return fail(f"{model} is not in the cache at {cache.get('cache_dir')} and offline mode is on",
                        details=["huggingface_hub: Cannot find the requested files in the disk cache and outgoing "
                                 "traffic has been disabled."],
                        fix=["Download on a connected machine (`hf download MODEL`) and copy the cache, or unset "
                             "HF_HUB_OFFLINE."])
        return ok(f"{model} is not cached yet; it will be downloaded")
    if cache.get("error"):
        return bad(f"{where}: {cache['error']}", fix=["Re-download the model (`hf download MODEL`)."])
    index = cache.get("index")
    if index is not None and not index.get("ok"):
        return bad(f"{where}: {index['error']}", fix=["Re-download model.safetensors.index.json."])
    shards = cache.get("shards") or []
    if not shards:
        return bad(f"{where} holds no safetensors weights", fix=["Download the weights (`hf download MODEL`)."])
    broken = [s for s in shards if not s.get("complete")]
    partial = cache.get("incomplete_downloads") or []
    evidence = {"shards": len(shards), "broken": [s["name"] for s in broken], "incomplete_downloads": partial}
    if broken:
        details = [f"{s['name']}: {s.get('error')}" for s in broken[:10]]
        return bad(f"{len(broken)} of {len(shards)} shard(s) missing or incomplete in {where}", details=details,
                   fix=["Resume the download (`hf download MODEL` fetches only what is missing), then re-run."],
                   evidence=evidence)
    if partial:
        return warn(f"all {len(shards)} shard(s) complete, but {len(partial)} unfinished download(s) in blobs/",
                    fix=["Let the download finish or delete the *.incomplete files."], evidence=evidence)
    return ok(f"all {len(shards)} shard(s) present and complete in {where}", evidence=evidence)
