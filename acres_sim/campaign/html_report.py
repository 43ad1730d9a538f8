"""A campaign's page, DIR/index.html (ROS-free): one static file that any browser reads from disk
(nothing fetched, no server): the summary, the pass rate over each swept key (pass_rate.png), the
runs table (each criterion's value and margin, sortable by any column), and for each failing run a top
view of its drive (each agent's path, the objects, the contacts) with links to its report and logs.

The margins come from each run's report.json, the drives from its episode.mcap; a run whose files
are missing (an error before the run wrote them) keeps its row without them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acres_sim.campaign.run import said, status_counts
from acres_sim.campaign.table import RUNS, saved_report
from acres_sim.rotations import orientation_yaw

PAGE = "index.html"
TOP_VIEWS_MAX = 50  # failing runs drawn (reading a log costs a fraction of a second each)
VIEW_PX = 420
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")

SCRIPT = """
function sortBy(th) {
  const table = th.closest('table'), body = table.tBodies[0], col = th.cellIndex;
  const down = th.dataset.order !== 'up';
  table.querySelectorAll('th').forEach(h => delete h.dataset.order);
  th.dataset.order = down ? 'up' : 'down';
  const key = row => { const t = row.cells[col].dataset.v ?? row.cells[col].textContent;
                       const n = parseFloat(t); return isNaN(n) ? t : n; };
  const rows = Array.from(body.rows).sort((a, b) => {
    const x = key(a), y = key(b);
    const c = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === 'number' ? -1 : 1);
    return down ? c : -c; });
  rows.forEach(r => body.appendChild(r));
}
document.querySelectorAll('#runs th').forEach(th => th.addEventListener('click', () => sortBy(th)));
document.getElementById('shown').textContent = document.querySelectorAll('#runs tbody tr').length;
"""

STYLE = """
body { font: 14px sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #eee; cursor: pointer; position: sticky; top: 0; }
td.text { text-align: left; }
tr.failed td.status { background: #f8c9c4; } tr.passed td.status { background: #c9efc4; }
tr.error td.status, tr.timeout td.status { background: #f3e1a8; }
.negative { color: #b00; font-weight: bold; }
.views { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; border: 1px solid #ccc; padding: 0.5em; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


Points = list[tuple[float, float]]


def _box(x: float, y: float, yaw: float, length: float, width: float, back: float) -> Points:
    """A footprint's corners: `back` of its length behind (x, y), the rest ahead."""
    c, s = math.cos(yaw), math.sin(yaw)
    front, half = length - back, width / 2
    corners = [(front, half), (front, -half), (-back, -half), (-back, half)]
    return [(x + c * u - s * v, y + s * u + c * v) for u, v in corners]


def top_view(log_path: Path) -> str:
    """An SVG of the drive in the log, north up: each agent's path and its footprint at the end, the
    objects' footprints, the contacts (red)."""
    from acres_sim.episode.log_file import OBJECTS, read_episode

    log = read_episode(log_path)
    sizes = {a["name"]: a for a in (log.agents or {}).get("agents", [])}
    paths: dict[str, Points] = {}
    last: dict[str, dict[str, Any]] = {}
    for step in log.steps:
        for name, state in step.agents.items():
            p = state["pose"]["position"]
            paths.setdefault(name, []).append((float(p["x"]), float(p["y"])))
            last[name] = state
    shapes: list[tuple[str, Points, str]] = []  # (kind, corners, tooltip)
    objects = [m for _, topic, m in log.world if topic.name == OBJECTS.name]
    for obj in objects[-1]["objects"] if objects else []:
        pose, size = obj["pose"], obj["size_m"]
        x, y = float(pose["position"]["x"]), float(pose["position"]["y"])
        yaw = orientation_yaw(pose["orientation"])
        shapes.append(("object", _box(x, y, yaw, size["x"], size["y"], size["x"] / 2), obj["name"]))
    for name, state in last.items():
        info = sizes.get(name, {})
        p = state["pose"]["position"]
        yaw = orientation_yaw(state["pose"]["orientation"])
        length, width = float(info.get("length_m", 3.0)), float(info.get("width_m", 1.5))
        back = float(info.get("rear_overhang_m", 0.5))
        footprint = _box(float(p["x"]), float(p["y"]), yaw, length, width, back)
        shapes.append(("agent", footprint, name))
    contacts: dict[tuple[str, str, float, float], tuple[float, float, str]] = {}  # the first at each place
    for ns, message in log.contacts:
        for c in message["contacts"]:
            x, y = float(c["position"]["x"]), float(c["position"]["y"])
            contacts.setdefault((c["agent"], c["other"], round(x, 1), round(y, 1)),
                                (x, y, f"{c['agent']} met {c['other']} at {ns * 1e-9:.2f} s"))
    points = [pt for path in paths.values() for pt in path] + [pt for _, pts, _ in shapes for pt in pts]
    points += [(x, y) for x, y, _ in contacts.values()]
    if not points:
        return "<p>(no states in the log)</p>"
    x0, x1 = min(x for x, _ in points) - 2.0, max(x for x, _ in points) + 2.0
    y0, y1 = min(y for _, y in points) - 2.0, max(y for _, y in points) + 2.0
    scale = VIEW_PX / max(x1 - x0, y1 - y0)
    w, h = (x1 - x0) * scale, (y1 - y0) * scale

    def xy(pts: Iterable[tuple[float, float]]) -> str:
        return " ".join(f"{(x - x0) * scale:.1f},{(y1 - y) * scale:.1f}" for x, y in pts)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.1f} {h:.1f}" style="background:#f4f1e8">']
    grid = 10.0 ** math.floor(math.log10(max(x1 - x0, y1 - y0)))
    out.append(f'<text x="4" y="{h - 4:.0f}" font-size="10" fill="#666">grid {grid:g} m, north up</text>')
    for gx in range(math.ceil(x0 / grid), math.floor(x1 / grid) + 1):
        out.append(f'<line x1="{(gx * grid - x0) * scale:.1f}" y1="0" x2="{(gx * grid - x0) * scale:.1f}" '
                   f'y2="{h:.1f}" stroke="#ddd"/>')
    for gy in range(math.ceil(y0 / grid), math.floor(y1 / grid) + 1):
        out.append(f'<line x1="0" y1="{(y1 - gy * grid) * scale:.1f}" x2="{w:.1f}" '
                   f'y2="{(y1 - gy * grid) * scale:.1f}" stroke="#ddd"/>')
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(paths)}
    for kind, pts, tip in shapes:
        fill = "#c8a560" if kind == "object" else colour.get(tip, "#888")
        out.append(f'<polygon points="{xy(pts)}" fill="{fill}" fill-opacity="0.6" stroke="#333">'
                   f'<title>{_esc(tip)}</title></polygon>')
    for name, path in paths.items():
        out.append(f'<polyline points="{xy(path)}" fill="none" stroke="{colour[name]}" stroke-width="2">'
                   f'<title>{_esc(name)}</title></polyline>')
        out.append(f'<circle cx="{(path[0][0] - x0) * scale:.1f}" cy="{(y1 - path[0][1]) * scale:.1f}" r="4" '
                   f'fill="{colour[name]}"><title>{_esc(name)} starts</title></circle>')
    for x, y, tip in contacts.values():
        out.append(f'<circle cx="{(x - x0) * scale:.1f}" cy="{(y1 - y) * scale:.1f}" r="5" fill="none" '
                   f'stroke="red" stroke-width="2"><title>{_esc(tip)}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def write_index(out_dir: Path, title: str, campaign_file: str, keys: list[str], criteria: dict[str, str],
                rows: list[dict[str, str]], runs_total: int, picture: str | None) -> Path:
    """DIR/index.html from the table's rows (runs.csv's, as strings) and each run's files.
    criteria: each criterion's name and unit, in the scenario's order."""
    rows = sorted(rows, key=lambda r: r["run"])
    counts = status_counts(r["status"] for r in rows)
    reports = {r["run"]: saved_report(out_dir, r["run"]) or {} for r in rows}
    head = ["run", *keys, "status"]
    for name, unit in criteria.items():
        suffix = f" [{unit}]" if unit else ""
        head += [f"{name}{suffix}", f"margin{suffix}"]
    head += ["node", "wall s", "reason", "files"]
    body = []
    for r in rows:
        margins = {c["name"]: c for c in reports[r["run"]].get("criteria", [])}
        cells = [f'<td class="text">{_esc(r["run"])}</td>']
        cells += [f'<td data-v="{_esc(r.get(k, ""))}">{_esc(r.get(k, ""))}</td>' for k in keys]
        cells.append(f'<td class="text status">{_esc(r["status"])}</td>')
        for name in criteria:
            c = margins.get(name, {})
            for value, is_margin in ((c.get("value"), False), (c.get("margin"), True)):
                shown = "" if value is None else f"{value:.4g}"
                style = ' class="negative"' if is_margin and value is not None and value < 0 else ""
                cells.append(f'<td{style} data-v="{"" if value is None else value}">{shown}</td>')
        run_dir = f"{RUNS}/{r['run']}"
        links = [f'<a href="{run_dir}/{f}">{f}</a>' for f in ("report.json", "episode.mcap", "stack.log")
                 if (out_dir / run_dir / f).exists()]
        cells += [f'<td class="text">{_esc(r.get("node", "")[:12])}</td>',
                  f'<td>{_esc(r.get("wall_s", ""))}</td>',
                  f'<td class="text">{_esc(r.get("reason", ""))}</td>',
                  f'<td class="text">{" ".join(links)}</td>']
        body.append(f'<tr class="{_esc(r["status"])}" id="row-{_esc(r["run"])}">{"".join(cells)}</tr>')
    failing = [r for r in rows if r["status"] == "failed"]
    views = []
    for r in failing[:TOP_VIEWS_MAX]:
        log = out_dir / RUNS / r["run"] / "episode.mcap"
        try:
            svg = top_view(log) if log.exists() else "<p>(no episode log)</p>"
        except Exception as exc:  # a damaged log: the page says so and goes on
            svg = f"<p>(the episode log could not be read: {_esc(exc)})</p>"
        failed = [c["name"] for c in reports[r["run"]].get("criteria", []) if c.get("passed") is False]
        values = ", ".join(f"{k} = {r.get(k, '')}" for k in keys)
        views.append(f'<figure id="view-{_esc(r["run"])}">{svg}<figcaption><a href="#row-{_esc(r["run"])}">'
                     f'{_esc(r["run"])}</a>: {_esc(values)}<br>failed: {_esc("; ".join(failed))}<br>'
                     f'<a href="{RUNS}/{_esc(r["run"])}/report.json">report</a> '
                     f'<a href="{RUNS}/{_esc(r["run"])}/episode.mcap">episode log</a></figcaption></figure>')
    more = (f"<p>{len(failing) - TOP_VIEWS_MAX} more failing runs are in the table (drawn: the first "
            f"{TOP_VIEWS_MAX}).</p>" if len(failing) > TOP_VIEWS_MAX else "")
    rate = f"{100.0 * counts['passed'] / len(rows):.1f} %" if rows else "-"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}: campaign</title>
<style>{STYLE}</style></head><body>
<h1>{_esc(title)}</h1>
<p id="summary">{len(rows)} of {runs_total} runs finished: {said(counts)}
(pass rate {rate}).
Campaign file: <code title="{_esc(campaign_file)}">{_esc(Path(campaign_file).name)}</code>;
swept: {_esc(", ".join(keys) or "nothing")}.
Table: <a href="runs.csv">runs.csv</a>.</p>
{f'<h2>Pass rate over each swept key</h2><img src="{_esc(picture)}" alt="pass rate">' if picture else ""}
<h2>Runs (<span id="shown">{len(rows)}</span>; click a heading to sort)</h2>
<table id="runs"><thead><tr>{"".join(f"<th>{_esc(h)}</th>" for h in head)}</tr></thead>
<tbody>{"".join(body)}</tbody></table>
<h2>Failing runs ({len(failing)})</h2>{more}
<div class="views">{"".join(views) or "<p>none</p>"}</div>
<script>{SCRIPT}</script></body></html>
"""
    path = out_dir / PAGE
    partial = path.with_suffix(".html.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return path
