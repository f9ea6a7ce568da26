"""The documentation site builds with no warning, its API reference holds every public name, every notebook
is rendered with its outputs, and the links between its Markdown pages (README included) resolve.

The site is built once, as ``docs/development.md`` says to (``sphinx -W --keep-going``), into a temporary
folder; ``-W`` makes a malformed docstring, a broken cross-reference or a page outside the table of
contents fail the build. The Python examples of the pages run in tests/test_doctests.py. External links
are checked by ``sphinx -b linkcheck``, outside CI (it needs the network).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("public_api", ROOT / "docs" / "public_api.py")
public_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(public_api)

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[pathlib.Path, subprocess.CompletedProcess]:
    """The built HTML site's folder and the build's process (its warnings are on stderr)."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                            "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
                           capture_output=True, text=True, cwd=ROOT)
    return out / "html", build


def test_the_site_builds_with_no_warning(site):
    _, build = site
    assert build.returncode == 0 and "WARNING" not in build.stderr and "ERROR" not in build.stderr, \
        build.stderr[-5000:]


def _inventory(html: pathlib.Path) -> set[str]:
    from sphinx.util.inventory import InventoryFile
    with open(html / "objects.inv", "rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, uri: uri)
    return {name for entries in inventory.data.values() for name in entries} \
        if hasattr(inventory, "data") else {name for entries in inventory.values() for name in entries}


def _public_entries() -> list[tuple[str, str]]:
    """(qualified name, where the reference documents it): a public module's own entry, a function or
    class re-exported under a second name at its first name's entry, everything else at its own."""
    first_name: dict[int, str] = {}
    entries = []
    for module_name in public_api.PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_api.public_names(module_name):
            qualified, obj = f"{module_name}.{name}", getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) in first_name:
                entries.append((qualified, first_name[id(obj)]))
            else:
                first_name.setdefault(id(obj), qualified)
                entries.append((qualified, qualified))
    return entries


def test_every_public_name_is_in_the_api_reference(site):
    html, build = site
    assert build.returncode == 0, build.stderr[-5000:]
    documented, entries = _inventory(html), _public_entries()
    missing = [qualified for qualified, entry in entries if entry not in documented]
    assert not missing, f"not in the API reference: {missing}"
    for module_name in public_api.PUBLIC_MODULES:   # a re-export is named on its module's page
        page = (html / "api" / f"{module_name}.html").read_text()
        unnamed = [qualified for qualified, entry in entries
                   if qualified != entry and qualified.rpartition(".")[0] == module_name and qualified not in page]
        assert not unnamed, f"{module_name}'s page does not name {unnamed}"


def test_a_public_function_page_shows_its_docstring(site):
    html, _ = site
    page = (html / "api" / "generated" / "hessopt.minimize.html").read_text()
    assert "Examples" in page and "scipy" in page


def test_every_notebook_is_rendered_with_its_outputs(site):
    html, _ = site
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = html / "notebooks" / f"{notebook.stem}.html"
        assert page.exists(), f"{notebook.name} is not in the site"
        text = page.read_text()
        assert "cell_output" in text and "<img" in text, f"{notebook.name} is rendered without its outputs"


# --- links between the Markdown pages (README and docs), which -W does not check for their anchors ----------
def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub and myst-parser make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _prose(file: pathlib.Path) -> str:
    """A page's text without its fenced code (a ``#`` comment there is not a heading)."""
    return re.sub(r"^```.*?^```", "", file.read_text(), flags=re.MULTILINE | re.DOTALL)


def _targets(file: pathlib.Path) -> set[str]:
    """The anchors a page offers: its headings' and its explicit ``(label)=`` targets."""
    text = _prose(file)
    return ({_anchor(heading) for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
            | set(re.findall(r"^\(([\w-]+)\)=$", text, re.MULTILINE)))


GENERATED = {ROOT / "docs" / "notebooks": ROOT / "notebooks"}   # copied at build time from these sources


def _markdown_pages() -> list[pathlib.Path]:
    built = [ROOT / "docs" / name for name in ("_build", "api", "notebooks")]
    pages = [page for page in (ROOT / "docs").rglob("*.md") if not any(page.is_relative_to(b) for b in built)]
    return [ROOT / "README.md", *sorted(pages)]


def _broken_links(page: pathlib.Path) -> list[str]:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        for generated, source in GENERATED.items():
            if file.is_relative_to(generated):
                file = source / file.relative_to(generated)
        if file.is_relative_to(ROOT / "docs" / "api"):
            continue                                            # the API reference: checked by the build
        if not file.exists() or (fragment and file.suffix == ".md" and fragment not in _targets(file)):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", _markdown_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_the_markdown_links_resolve(page):
    broken = _broken_links(page)
    assert not broken, f"links of {page.relative_to(ROOT)} that lead nowhere: {broken}"


def test_anchors_are_made_as_github_makes_them():
    assert _anchor("When does hessopt say success?") == "when-does-hessopt-say-success"
    assert _anchor("Transforms: JAX's habits") == "transforms-jaxs-habits"
