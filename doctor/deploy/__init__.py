"""`qwen-doctor deploy`: start a profile's server, follow its log, exercise its API, always stop it.

Click-free library; `doctor/cli/deploy.py` parses options, calls `session` and prints. Modules, one job each:
`session` (prepare(request) -> plan, run(plan) -> outcome), `targets` (one machine or a Ray fleet behind one
interface), `spec` (what to launch), `ports`, `process` (process-group supervision), `phases` (+ `phases.yaml`),
`follower` (live log: phases, KV line, remedies), `remedy` (catalogue adapter), `health`, `exercise`,
`metrics`, `kv` (logged vs planned KV capacity), `run` (the orchestration and the report).
"""
