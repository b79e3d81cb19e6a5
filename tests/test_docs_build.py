"""`make docs`: the docs site and the API reference build with `mkdocs build --strict`, offline, and a
warning fails the build; every public name (`hierviz.__all__`) has its entry in the reference."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("mkdocs_api_names", ROOT / "scripts" / "mkdocs_api_names.py")
assert SPEC is not None and SPEC.loader is not None
api_names = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(api_names)


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_docs_build_strictly_without_a_warning(tmp_path):
    run = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stdout + run.stderr
    reference = (tmp_path / "site" / "api" / "partitioning.html").read_text()
    import hierviz as hv

    assert "hv.partition" in reference and f'id="{hv.Partition.__module__}.Partition.render"' in reference


def test_a_page_with_a_broken_link_fails_the_build(tmp_path):
    """The site's own settings (strict, link validation) on a page that links to a missing one."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# hierviz\n\nSee [the missing page](missing.md).\n")
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}], plugins=["search"])
    config.pop("hooks")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    run = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert run.returncode != 0
    assert "missing.md" in run.stdout + run.stderr


def test_a_reference_entry_is_read_from_the_module_that_defines_the_name():
    import hierviz as hv

    page = "# x\n\n::: hv.partition\n\n::: hv.Builds\n"
    written = api_names.on_page_markdown(page, None, None, None)
    assert f"::: {hv.partition.__module__}.partition\n" in written
    assert f"::: {hv.Builds.__module__}.Builds\n" in written
    assert '      heading: "hv.Builds"' in written
    assert "::: hv." not in written


def test_a_name_outside_the_public_api_is_refused():
    with pytest.raises(PluginError, match="not_a_name is not in hierviz.__all__"):
        api_names.on_page_markdown("::: hv.not_a_name\n", None, None, None)


def test_a_public_name_missing_from_the_reference_fails_the_build():
    import hierviz as hv

    api_names.on_pre_build(None)
    api_names.on_page_markdown("\n".join(f"::: hv.{name}" for name in hv.__all__ if name != "tune"), None, None, None)
    with pytest.raises(PluginError, match=r"names no `::: hv.NAME` for: tune$"):
        api_names.on_post_build(None)
    api_names.on_page_markdown("::: hv.tune\n", None, None, None)
    api_names.on_post_build(None)
