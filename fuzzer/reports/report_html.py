"""index.html: one self-contained page with the mutants and the MCC combinations.

Weak mutation is shown by Stryker's viewer (``<mutation-test-report-app>``, vendored in
assets/ with its licence), fed mutation.json's content inline; MCC decisions get a view of
their own, one table per decision listing its combinations.  The viewer is embedded as a
base64 data URI (its text holds sequences such as ``<!--`` that would change how an inline
script is parsed) and the report as a JSON script block, so the page opens from disk with no
network and no server.  The viewer hides killed mutants until their filter is ticked; the
page's script has every file view start with them shown, so that the mutants the fuzzer did
kill (the headline ones, often) are in the source at first sight.
"""
from __future__ import annotations

import base64
import html
import json
from importlib import resources
from typing import Any

from ffcc.fuzzer.reports.label_coverage import LabelResult, count, decision_of, grouped
from ffcc.runtime.abi import INFEASIBLE, TRIVIAL

VIEWER = "mutation-test-elements.js"

STYLE = """
body { margin: 0; font-family: system-ui, sans-serif; }
nav { display: flex; gap: .5em; padding: .5em 1em; border-bottom: 1px solid #ccc; }
nav button { font: inherit; padding: .3em .8em; border: 1px solid #999; border-radius: .3em;
  background: none; cursor: pointer; }
nav button[aria-selected=true] { background: #ddd; font-weight: bold; }
#mcc { padding: 1em; }
#mcc table { border-collapse: collapse; margin: .3em 0 1.2em; }
#mcc td, #mcc th { border: 1px solid #ccc; padding: .2em .5em; text-align: left; }
#mcc code { white-space: pre-wrap; }
.covered { background: #d9f2d9; } .uncovered { background: #f8d7d7; }
""" + f".{INFEASIBLE}, .{TRIVIAL} {{ background: #eee; color: #666; }}\n"  # pruned labels' states

SCRIPT = """
const app = document.querySelector('mutation-test-report-app');
app.report = JSON.parse(document.getElementById('mutation-report').textContent);
for (const button of document.querySelectorAll('nav button')) {
  button.addEventListener('click', () => {
    for (const other of document.querySelectorAll('nav button')) {
      const chosen = other === button;
      other.setAttribute('aria-selected', String(chosen));
      document.getElementById(other.dataset.view).hidden = !chosen;
    }
  });
}
// The viewer ticks its Survived, NoCoverage and Timeout filters in a new file view, and the
// states in the view's selectedMutantStates (empty until its filters first report): starting
// that with Killed shows killed mutants too, in every file view, until the user unticks them.
const fileView = customElements.get('mte-file').prototype;
const willUpdate = fileView.willUpdate;
fileView.willUpdate = function (changes) {
  if (!this.selectedMutantStates.length) this.selectedMutantStates = ['Killed'];
  willUpdate.call(this, changes);
};
"""


def viewer_uri() -> str:
    script = (resources.files("ffcc.fuzzer.reports") / "assets" / VIEWER).read_bytes()
    return "data:text/javascript;base64," + base64.b64encode(script).decode()


def script_json(data: Any) -> str:
    """JSON that cannot end or alter the script element holding it."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def _state_cell(label: LabelResult) -> str:
    if label.pruned:
        text = f"pruned ({label.pruned})"
    elif label.first is not None:
        text = f"covered by {label.hits} input(s), first {label.first.test_id}"
    else:
        text = "not covered"
    return f'<td class="{label.state}">{html.escape(text)}</td>'


def decision_table(labels: list[LabelResult]) -> str:
    file, line, column, original = decision_of(labels[0])
    counts = count(labels)
    rows = "".join(f"<tr><td><code>{html.escape(label.record.predicate)}</code></td>"
                   f"{_state_cell(label)}</tr>" for label in labels)
    return (f"<h3>{html.escape(f'{file}:{line}:{column}')} in "
            f"{html.escape(labels[0].record.function or '?')}: "
            f"{counts.covered}/{counts.goals} combinations</h3>"
            f"<p><code>{html.escape(original)}</code></p>"
            f"<table><tr><th>combination</th><th>state</th></tr>{rows}</table>")


def mcc_view(labels: list[LabelResult]) -> str:
    mcc = [label for label in labels if label.record.criterion == "mcc"]
    if not mcc:
        return "<p>This build has no MCC labels (build it with <code>ffcc --mcc</code>).</p>"
    decisions = grouped(mcc, decision_of)
    counts = count(mcc)
    return (f"<h2>MCC: {counts.covered} of {counts.goals} combinations covered in "
            f"{len(decisions)} decisions</h2>"
            + "".join(decision_table(group) for group in decisions.values()))


def page(title: str, mutation_report: dict[str, Any], labels: list[LabelResult]) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
<script src="{viewer_uri()}"></script>
</head>
<body>
<nav>
<button data-view="mutants" aria-selected="true">Weak mutation</button>
<button data-view="mcc" aria-selected="false">MCC combinations</button>
</nav>
<section id="mutants"><mutation-test-report-app title-postfix="{html.escape(title)}">
</mutation-test-report-app></section>
<section id="mcc" hidden>{mcc_view(labels)}</section>
<script id="mutation-report" type="application/json">{script_json(mutation_report)}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""
