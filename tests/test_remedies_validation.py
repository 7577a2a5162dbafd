"""Loading rejects a broken catalogue with one message naming the file and the entry."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from remedies import CatalogueError, load_catalogue

GOOD = {
    "id": "QD-R-VLLM-EXAMPLE",
    "severity": "error",
    "title": "Example",
    "literal": "boom happened",
    "pattern": r"boom happened \d+",
    "why": "Because.",
    "fix": ["Do this.", {"text": "Then that.", "applies": "vllm>=0.17.0"}],
    "source": ["vllm-project/vllm vllm/example.py"],
    "samples": ["ERROR boom happened 42"],
}


def write(tmp_path: Path, *entries: dict, name: str = "vllm.yaml") -> Path:
    (tmp_path / name).write_text(yaml.safe_dump({"component": "vllm", "entries": list(entries)}))
    return tmp_path


def test_a_valid_entry_loads_with_its_defaults(tmp_path):
    (remedy,) = load_catalogue(write(tmp_path, GOOD))
    assert remedy.component == "vllm" and remedy.rank == 50 and not remedy.wrapper
    assert [s.applies for s in remedy.fix] == [None, "vllm>=0.17.0"]


def test_another_wording_of_the_message_is_a_further_literal_with_its_own_sample(tmp_path):
    older = {**GOOD, "also": ["kaboom at"], "pattern": r"boom happened \d+|kaboom at \d+",
             "samples": ["ERROR boom happened 42", "kaboom at 7"]}
    (remedy,) = load_catalogue(write(tmp_path, older))
    assert [form.literal for form in remedy.forms()] == ["boom happened", "kaboom at"]
    assert {form.id for form in remedy.forms()} == {"QD-R-VLLM-EXAMPLE"} and remedy.to_dict()["also"] == ["kaboom at"]


def test_an_entry_records_the_source_wordings_it_matches(tmp_path):
    wording = {"package": "vllm", "releases": ">=0.8.5,<0.10", "template": "boom happened {}"}
    (remedy,) = load_catalogue(write(tmp_path, {**GOOD, "versions": [wording]}))
    assert [w.to_dict() for w in remedy.versions] == [wording]
    assert remedy.to_dict()["versions"] == [wording]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pattern": "boom (unclosed"}, "pattern does not compile"),
        ({"title": None}, "'title' must be a non-empty string"),
        ({"severity": "fatal"}, "severity must be one of"),
        ({"component": "tensorflow"}, "component must be one of"),
        ({"id": "R-1"}, "id must look like"),
        ({"literal": "kaboom"}, "does not occur in sample"),
        ({"pattern": r"boom happened [a-z]+"}, "pattern does not match sample"),
        ({"samples": []}, "'samples' must have 1 to 3 items"),
        ({"samples": ["boom happened 1"] * 4}, "'samples' must have 1 to 3 items"),
        ({"fix": [{"text": "x", "applies": "vllm >= not-a-version"}]}, "not a version range"),
        ({"fix": [{"txt": "x"}]}, "fix step must be a string or a mapping"),
        ({"wrapper": "yes"}, "'wrapper' must be true or false"),
        ({"root_cause_rank": 101}, "'root_cause_rank' must be an integer"),
        ({"unexpected": 1}, "unknown field"),
        ({"also": ["boom elsewhere"]}, "'also' literal 'boom elsewhere' occurs in no sample"),
        ({"also": "boom"}, "'also' must be a list"),
        ({"versions": {"package": "vllm"}}, "'versions' must be a list"),
        ({"versions": [{"package": "vllm", "releases": ">=0.8"}]}, "'versions' item must have"),
        ({"versions": [{"package": "tgi", "releases": ">=1.0", "template": "boom happened {}"}]},
         "'versions' package must be one of"),
        ({"versions": [{"package": "vllm", "releases": "since 0.8", "template": "boom happened {}"}]},
         "'versions' releases is not a range"),
    ],
)
def test_an_invalid_entry_names_file_entry_and_problem(tmp_path, change, message):
    write(tmp_path, {**GOOD, **change})
    with pytest.raises(CatalogueError) as err:
        load_catalogue(tmp_path)
    text = str(err.value)
    assert str(tmp_path / "vllm.yaml") in text and message in text
    if change.get("id", GOOD["id"]) == GOOD["id"]:
        assert "entry QD-R-VLLM-EXAMPLE" in text


def test_a_missing_field_is_named(tmp_path):
    write(tmp_path, {k: v for k, v in GOOD.items() if k != "why"})
    with pytest.raises(CatalogueError, match=r"entry QD-R-VLLM-EXAMPLE: missing field\(s\): why"):
        load_catalogue(tmp_path)


def test_a_duplicate_id_across_files_names_both_files(tmp_path):
    write(tmp_path, GOOD, name="a.yaml")
    write(tmp_path, GOOD, name="b.yaml")
    with pytest.raises(CatalogueError, match=r"b\.yaml: entry QD-R-VLLM-EXAMPLE: duplicate id \(first defined in a\.yaml\)"):
        load_catalogue(tmp_path)


def test_malformed_yaml_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "vllm.yaml").write_text("entries: [\n  - id: x\n")
    with pytest.raises(CatalogueError) as err:
        load_catalogue(tmp_path)
    assert "vllm.yaml: not valid YAML" in str(err.value) and "\n" not in str(err.value)


def test_a_file_without_an_entries_list_is_rejected(tmp_path):
    (tmp_path / "vllm.yaml").write_text("- just a list\n")
    with pytest.raises(CatalogueError, match="expected a mapping with an 'entries' list"):
        load_catalogue(tmp_path)
