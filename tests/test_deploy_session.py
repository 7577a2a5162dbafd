"""`deploy` as a library session, without the CLI: prepare(request) judges the checks and says what it would run;
a dry run or a refusal ends there with the outcome in the report; the targets share one interface."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.report.model import Report, now
from doctor.session import session
from doctor.session.request import Request
from doctor.session.targets import RayFleet, SingleMachine, target_for
from profiles import load_profile
from tests.conftest import load_fixture
from tests.support.deploy_helpers import python_shim


def _session() -> tuple[session.Session, list[str]]:
    events: list[str] = []
    return session.Session(Report(command="deploy", results=[], created_at=now()), events.append), events


def _outcome(run: session.Session):
    return next(r for r in run.report.results if r.check_id == "QD-DEPLOY-OUTCOME")


def test_a_dry_run_plans_checks_and_shows_the_command_without_starting(tmp_path: Path) -> None:
    run, events = _session()
    request = Request(load_profile("cpu-tiny"), model=str(tmp_path), python=str(python_shim(tmp_path)), port=8765,
                      dry_run=True)
    plan = session.prepare(request, run)
    assert isinstance(plan.target, SingleMachine) and not plan.ready
    shown = next(e for e in events if e.startswith("would run:"))
    assert "--model" in shown and str(tmp_path) in shown and "--port 8765" in shown
    assert any(e.strip().startswith("preflight:") for e in events)
    assert _outcome(run).status.value in ("skip", "fail") and _outcome(run).summary.startswith("dry run:")
    assert run.report.sections["deployment"]["dry_run"] is True


@pytest.mark.parametrize("force", [False, True])
def test_failing_checks_refuse_the_start_unless_forced(tmp_path: Path, monkeypatch, force: bool) -> None:
    """vllm-stable on a machine without an NVIDIA driver: QD-DRV-001 fails, so the start is refused (--force: ready)."""
    import doctor.facts.collect

    monkeypatch.setattr(doctor.facts.collect, "collect", lambda **kw: load_fixture("no-driver"))
    run, events = _session()
    plan = session.prepare(Request(load_profile("vllm-stable"), python=str(python_shim(tmp_path)), force=force), run)
    assert "QD-DRV-001" in [r.check_id for r in plan.failing]
    assert plan.ready is force and run.refused is not force
    if not force:
        assert any(e.startswith("refusing to start: failing checks") for e in events)
        assert _outcome(run).summary.startswith("refused to start") and run.exit_code("fail") == 1


def test_the_target_follows_the_profile_and_refuses_options_that_do_not_apply() -> None:
    assert isinstance(target_for(Request(load_profile("vllm-stable"))), SingleMachine)
    assert isinstance(target_for(Request(load_profile("vllm-multinode"))), RayFleet)
    with pytest.raises(DoctorError, match="--ray deploys a multi-node profile"):
        target_for(Request(load_profile("vllm-stable"), ray=""))
    with pytest.raises(DoctorError, match="--keep is not available"):
        target_for(Request(load_profile("sglang-multinode"), keep=True))


def test_a_multinode_dry_run_without_ray_prints_every_node() -> None:
    run, events = _session()
    plan = session.prepare(Request(load_profile("sglang-multinode"), dry_run=True), run)
    assert not plan.ready and "--node-rank 1" in events[-1] and _outcome(run).status.value == "skip"


def test_a_ray_fleet_deploy_builds_its_deployment_once(tmp_path: Path, monkeypatch) -> None:
    """`deploy --ray`: the fleet checks and every node's command read one Deployment, with the head's address."""
    import doctor.facts.collect
    import doctor.fleet.extend
    import profiles.model
    from tests.test_deploy_fleet import FLEET

    monkeypatch.setattr(doctor.facts.collect, "collect", lambda **kw: load_fixture("no-driver"))
    monkeypatch.setattr(doctor.fleet.extend, "extend", lambda data, **kw: data.update(fleet=FLEET))
    built = []
    real = profiles.model.from_profile
    monkeypatch.setattr(profiles.model, "from_profile", lambda *a, **kw: built.append(a) or real(*a, **kw))
    run, events = _session()
    plan = session.prepare(Request(load_profile("sglang-multinode"), ray="10.0.0.1:6379",
                                   python=str(python_shim(tmp_path)), dry_run=True), run)
    spec, plans, address, _ = plan.launch
    assert len(built) == 1 and address == "10.0.0.1:6379"
    assert [p.ip for p in plans] == ["10.0.0.1", "10.0.0.2"]
    assert all(p.deployment.setting("dist_init_addr") == "10.0.0.1:20000" for p in plans)
    assert spec.base_url == "http://10.0.0.1:30000"
