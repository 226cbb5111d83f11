"""The README's test command is the one CI runs, so the two cannot drift apart."""

import re

from helpers import REPO


def test_readme_test_command_is_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    ci = (REPO / ".ci/run").read_text().strip().splitlines()[-1]
    assert ci in blocks, f"README must show CI's command: {ci}"
