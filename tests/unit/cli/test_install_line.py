"""The README's install line brings what the bundled examples import."""

from __future__ import annotations

import re
import tomllib

from tests.support.procs import REPO


def test_the_readme_install_line_names_an_extra_with_every_example_dependency() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    (extra,) = re.findall(r"pip install 'llamon-playground\[(\w+)\]'", install)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    brought = set(pyproject["project"]["optional-dependencies"][extra])
    for example in sorted((REPO / "examples").glob("*/pyproject.toml")):
        needs = set(tomllib.loads(example.read_text(encoding="utf-8"))["project"]["dependencies"])
        assert needs <= brought, (example, needs - brought)
