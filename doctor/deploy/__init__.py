"""`qwen-doctor deploy`: start a profile's server, follow its log, exercise its API, always stop it.

Click-free library; the session that runs a deploy from a request is doctor/session, `doctor/cli/deploy.py`
parses options, calls it and prints. Modules, one job each: `spec` (what to launch), `ports`, `process` (process-group supervision), `phases` (+ `phases.yaml`),
`follower` (live log: phases, KV line, remedies), `remedy` (catalogue adapter), `health`, `exercise`,
`metrics`, `kv` (logged vs planned KV capacity), `run` (the orchestration and the report).
"""
