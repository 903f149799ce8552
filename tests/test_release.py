"""A release HACS can install: the workflows, hacs.json, the version's three names agree.

The workflows are linted with actionlint (scripts/setup builds it from its Go module); the
tag, manifest.json's version and CHANGELOG.md's newest entry are compared by
scripts/release_check, which the release workflow runs before it zips the integration.
"""

import json
import os
from pathlib import Path
import shutil
import subprocess
import zipfile

import pytest
import yaml

from .project_scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def workflow(name: str) -> dict[object, object]:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def uses(flow: dict[object, object]) -> list[str]:
    jobs = flow["jobs"]
    assert isinstance(jobs, dict)
    return [str(s["uses"]) for job in jobs.values() for s in job["steps"] if "uses" in s]


def actionlint() -> str | None:
    for candidate in (ROOT / ".venv" / "bin" / "actionlint", shutil.which("actionlint")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    return None


def test_the_workflows_pass_actionlint() -> None:
    binary = actionlint()
    if binary is None:
        if os.environ.get("LLM_WARMTH_REQUIRE_E2E"):
            pytest.fail("no actionlint in CI: scripts/setup builds it (go install)")
        pytest.skip("no actionlint: scripts/setup builds it from its Go module")
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert len(files) == 3
    run = subprocess.run([binary, *files], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_hacs_and_hassfest_run_on_every_push_and_pull_request() -> None:
    flow = workflow("validate.yml")
    triggers = flow[True]  # YAML 1.1 reads the key `on` as True
    assert isinstance(triggers, dict)
    assert {"push", "pull_request"} <= set(triggers)
    steps = uses(flow)
    assert any(s.startswith("hacs/action@") for s in steps)
    assert any(s.startswith("home-assistant/actions/hassfest@") for s in steps)
    jobs = flow["jobs"]
    assert isinstance(jobs, dict)
    assert jobs["hacs"]["steps"][-1]["with"] == {"category": "integration"}


def test_the_tests_workflow_runs_the_readmes_commands_with_the_real_servers() -> None:
    flow = workflow("tests.yml")
    assert {"push", "pull_request"} <= set(flow[True])  # type: ignore[arg-type]
    runs = [
        str(step.get("run", ""))
        for job in flow["jobs"].values()
        for step in job["steps"]  # type: ignore[attr-defined]
    ]
    assert "bash .ci/run" in runs  # .ci/run: the kit's servers, then scripts/setup, scripts/test
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/setup\n" in ci
    assert "scripts/test\n" in ci


def test_the_release_zips_what_hacs_json_names_from_a_version_tag() -> None:
    flow = workflow("release.yml")
    assert flow[True] == {"push": {"tags": ["v*"]}}
    hacs = json.loads((ROOT / "hacs.json").read_text())
    assert hacs["zip_release"] is True
    text = (WORKFLOWS / "release.yml").read_text()
    assert f'--zip "${{RUNNER_TEMP}}/{hacs["filename"]}"' in text
    assert f"files: ${{{{ runner.temp }}}}/{hacs['filename']}" in text
    assert 'scripts/release_check "${GITHUB_REF_NAME}"' in text
    assert any(s.startswith("softprops/action-gh-release@") for s in uses(flow))


def test_manifest_changelog_and_tag_agree_now() -> None:
    check = load_script("release_check")
    manifest = json.loads((ROOT / "custom_components" / "llm_warmth" / "manifest.json").read_text())
    assert check.disagreements(ROOT, f"v{manifest['version']}") == []


def _project(tmp_path: Path, *, manifest: str, changelog: str) -> Path:
    (tmp_path / "custom_components" / "llm_warmth").mkdir(parents=True)
    (tmp_path / "custom_components" / "llm_warmth" / "manifest.json").write_text(
        json.dumps({"version": manifest})
    )
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    shutil.copy(ROOT / "hacs.json", tmp_path / "hacs.json")
    return tmp_path


ENTRIES = "# Changelog\n\n## [0.4.0] - 2027-01-02\n- new\n\n## [0.3.0] - 2026-12-07\n- old\n"


@pytest.mark.parametrize(
    ("manifest", "tag", "said"),
    [
        ("0.4.0", "v0.4.0", []),
        ("0.4.0", None, []),
        ("0.4.0", "v0.3.0", ["the tag is v0.3.0, manifest.json says 0.4.0 (tag v0.4.0)"]),
        ("0.3.0", "v0.3.0", ["CHANGELOG.md's newest entry is 0.4.0, manifest.json says 0.3.0"]),
        (
            "0.5.0",
            "v0.4.0",
            [
                "CHANGELOG.md's newest entry is 0.4.0, manifest.json says 0.5.0",
                "the tag is v0.4.0, manifest.json says 0.5.0 (tag v0.5.0)",
            ],
        ),
    ],
)
def test_a_version_that_disagrees_is_said(
    tmp_path: Path, manifest: str, tag: str | None, said: list[str]
) -> None:
    check = load_script("release_check")
    project = _project(tmp_path, manifest=manifest, changelog=ENTRIES)
    assert check.disagreements(project, tag) == said


def test_a_changelog_without_an_entry_or_hacs_without_a_zip_is_refused(tmp_path: Path) -> None:
    check = load_script("release_check")
    project = _project(tmp_path, manifest="0.3.0", changelog="# Changelog\n")
    assert check.disagreements(project, None) == [
        "CHANGELOG.md has no entry (a '## [X.Y.Z] - date' heading)"
    ]
    (project / "CHANGELOG.md").write_text(ENTRIES.replace("0.4.0", "0.3.0", 1))
    (project / "hacs.json").write_text(json.dumps({"name": "LLM Warmth"}))
    assert check.disagreements(project, "v0.3.0") == [
        "hacs.json does not ask for a zip release (zip_release, filename)"
    ]


def test_the_notes_are_the_newest_entry_and_the_zip_is_the_integration(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "release_check"
    manifest = json.loads((ROOT / "custom_components" / "llm_warmth" / "manifest.json").read_text())
    notes, archive = tmp_path / "notes.md", tmp_path / "llm_warmth.zip"
    run = subprocess.run(
        [
            "python3",
            str(script),
            f"v{manifest['version']}",
            "--notes",
            str(notes),
            "--zip",
            str(archive),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    check = load_script("release_check")
    assert notes.read_text() == check.changelog_entry((ROOT / "CHANGELOG.md").read_text())[1]
    assert "### Migrations on upgrade" in notes.read_text()
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
    # HACS unpacks the zip into custom_components/llm_warmth: its files at the root.
    assert "manifest.json" in names
    assert "translations/en.json" in names
    assert "frontend/llm-warmth-card.js" in names
    assert not [n for n in names if "__pycache__" in n]
    wrong = subprocess.run(
        ["python3", str(script), "v0.0.1"], capture_output=True, text=True, check=False
    )
    assert wrong.returncode == 1
    assert "the tag is v0.0.1" in wrong.stderr
