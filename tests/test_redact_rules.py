"""Provider secret forms (gitleaks' vendored rules and ours), disguised by Unicode or split over lines, are
redacted in the original text (issue 23, item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from doctor.redact import REDACTED, redact_document, redact_text
from doctor.secret_rules import LEFT_OUT, rules, to_python

# One example per provider form the campaign named, each in the shape it takes on a command line or in a log.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Pm2Tk4x"
CORPUS = {
    "aws secret key as a CLI value": ("aws configure set aws_secret_access_key {}", AWS_SECRET),
    "aws access key id": ("export AWS_ACCESS_KEY_ID={}", "AKIAZ7QW3RT5YU6IO8PL"),
    "google oauth access token": ("token ya29.{}", "a0AfH6SMBx9kQ2mP7vB3nL8cR5tYzW0eUoI4"),
    "google oauth client secret": ("client_secret GOCSPX-{}", "Zx81kQ2mP9vB7nL3cR5tY0wE"),
    "google api key": ("key AIza{}", "SyD7kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgH"),
    "slack app token": ("SLACK xapp-1-A0123ABCD-1234567890123-{}", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0"),
    "slack bot token": ("xoxb-{}", "1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    "slack webhook": ("post to https://hooks.slack.com/services/{}", "T0A1B2C3D/B0A1B2C3D/Zx81kQ2mP9vB7nL3cR5tY0wE"),
    "nvidia api key": ("NGC key nvapi-{}", "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjKlQwErTyUiOp1234567890abcdEFGH"),
    "curl -u password": ("curl -u admin:{} https://registry.local/v2/", "S3cr3t-Passw0rd"),
    "docker login -p": ("docker login -u robot -p {} nvcr.io", "Zx81kQ2mP9vB"),
    "docker login --password=": ("docker login --password={} -u robot nvcr.io", "Zx81kQ2mP9vB"),
    "github fine-grained pat": ("github_pat_{}", "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU"),
    "gitlab pat": ("GITLAB glpat-{}", "Zx81kQ2mP9vB7nL3cR5t"),
    "openai key": ("OPENAI sk-proj-{}", "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjKlQwErTyUiOp"),
    "anthropic key": ("sk-ant-api03-{}", "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjKlQwErTyUiOpZx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjKlQwErTyUiAA"),
    "huggingface token": ("hf_{}", "ZxqkQmPvBnLcRtYwEuIoPaSdFgHjKlQwEr"),
    "stripe key": ("sk_live_{}", "Zx81kQ2mP9vB7nL3cR5tY0wE"),
    "sendgrid key": ("SG.{}", "Zx81kQ2mP9vB7nL3cR5tY0." + "wEuIoPaSdFgHjKlQwErTyUiOpZx81kQ2mP9vB7nL3cR"),
    "jwt": ("auth eyJhbGciOiJIUzI1NiJ9.{}", "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
}


@pytest.mark.parametrize("form", sorted(CORPUS))
def test_every_provider_form_is_redacted(form: str) -> None:
    template, secret = CORPUS[form]
    line = template.format(secret)
    out = redact_text(line)
    assert secret not in out and REDACTED in out, out


@pytest.mark.parametrize("form", sorted(CORPUS))
def test_every_form_is_redacted_in_every_report_format(form: str) -> None:
    template, secret = CORPUS[form]
    doc = redact_document({"summary": template.format(secret), "argv": template.format(secret).split()})
    assert secret not in json.dumps(doc)


def test_every_vendored_rule_compiles_in_python_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = [r.pattern for r in rules()]
    assert len(compiled) > 200
    assert not LEFT_OUT & {r.id for r in rules()}


def test_re2_inline_flags_are_scoped_to_their_group() -> None:
    assert to_python(r"\b((?i)ltai[a-z]{2})x") == r"\b((?i:ltai[a-z]{2}))x"
    assert to_python(r"a\z") == r"a\Z"
    assert to_python("[[:alnum:]_]") == "[A-Za-z0-9_]"


DISGUISES = {
    "full-width equals": "HF_TOKEN\uff1d{}",
    "full-width colon": "api_key\uff1a {}",
    "no-break space": "--api-key\u00a0{}",
    "zero-width space inside": "token={head}\u200b{tail}",
    "word joiner inside": "hf_token: {head}\u2060{tail}",
    "soft hyphen inside": "password={head}\u00ad{tail}",
    "backslash continuation": "vllm serve m --api-key \\\n    {} --port 8000",
    "token wrapped at a line width": "the key was hf_{head}\n{tail} (rotated)",
    "bearer on the next line": "curl -H 'Authorization:\n     Bearer {}' http://h",
    "json key and value on two lines": '{{"api_key":\n    "{}"}}',
    "yaml folded scalar": "auth:\n  token: >-\n    {}\n",
}
VALUE = "Zx81kQ2mP9vB7nL3cR5tY0wE"


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_disguised_or_split_secrets_are_redacted_and_the_rest_kept(name: str) -> None:
    text = DISGUISES[name].format(VALUE, head=VALUE[:10], tail=VALUE[10:])
    out = redact_text(text)
    plain = out.replace("\u200b", "").replace("\u2060", "").replace("\u00ad", "").replace("\n", "")
    assert VALUE not in plain and VALUE[10:] not in out and VALUE[:10] not in out, out
    assert out.count("\n") == text.count("\n")


def test_nothing_changes_in_text_without_secrets() -> None:
    text = "Ｑｗｅｎ 模型 loaded in 12.5 s\nport：8000 — ready\u200b\n"
    assert redact_text(text) == text


def test_deploy_dry_run_hides_a_profile_env_secret(tmp_path) -> None:
    import yaml

    profile = tmp_path / "p.yaml"
    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "cpu-tiny.yaml").read_text())
    data.setdefault("env", {})["NGC_CONFIG"] = "nvapi-" + "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjK"
    data["env"]["REGISTRY_LOGIN"] = f"docker login -p {VALUE} nvcr.io"
    profile.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", str(profile), "--dry-run",
                           "--format", "json", "-o", str(tmp_path / "r.json")], capture_output=True, text=True,
                          timeout=300)
    everything = done.stdout + done.stderr + (tmp_path / "r.json").read_text() if (tmp_path / "r.json").exists() \
        else done.stdout + done.stderr
    assert "Zx81kQ2mP9vB7nL3cR5tY0wEuIoPaSdFgHjK" not in everything and VALUE not in everything


def test_a_secret_yaml_block_scalar_is_hidden_line_by_line_and_its_neighbours_kept() -> None:
    text = "password: >\n  correct horse\n  battery staple\nport: 8000\ndescription: |\n  keep me\n"
    out = redact_text(text)
    assert "horse" not in out and "staple" not in out
    assert "port: 8000" in out and "keep me" in out and out.count("\n") == text.count("\n")
