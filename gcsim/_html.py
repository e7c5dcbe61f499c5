"""Rich HTML representations for Jupyter (the ``_repr_html_`` of gcsim's objects and results).

Evaluating a design, scheme, CERAR design, decoder table or result record in a notebook cell
shows a small card: the kind, the parameters (the ``params`` named tuple), how the object was
built, its verification status and a picture of its incidence or encoder matrix.

Design choices
--------------
* **Never raises.**  A repr that raises hides the object it should show; :func:`safe_html`
  turns any failure of the card itself into the plain ``repr`` and the failure text, and
  :func:`verdict` turns a failing ``verify()`` into "verification failed: ...".
* **Verified once.**  The objects are immutable, so the outcome of ``verify()`` cannot change:
  :func:`verdict` caches it per object (keyed by identity, dropped when the object is freed).
  ``verify()`` itself stays uncached.
* **Bounded size.**  The picture is an inline SVG (no matplotlib, no images to encode) of at
  most :data:`MAX_CELLS` x :data:`MAX_CELLS` cells: a larger matrix is shown block by block
  (each cell shades the density of ones of a 0/1 block, or the largest ``|entry|`` of a real
  block relative to the whole matrix).  Cells of one shade form one ``<path>`` of horizontal
  runs, so a 1000 x 1000 design draws in a few kilobytes.  Every text is escaped and cut at
  :data:`MAX_TEXT` characters.

Examples
--------
>>> import numpy as np
>>> from gcsim._html import matrix_svg
>>> svg = matrix_svg(np.eye(3, dtype=int), binary=True)
>>> svg.startswith("<svg") and svg.count("<path") == 1
True
>>> len(matrix_svg(np.ones((1000, 1000)), binary=True)) < 2000
True
"""

from __future__ import annotations

import html
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "MAX_CELLS",
    "MAX_ROWS",
    "MAX_TEXT",
    "check_table",
    "escape",
    "fmt",
    "html_list",
    "matrix_svg",
    "object_html",
    "params_rows",
    "repr_items",
    "repr_line",
    "safe_html",
    "scalar_items",
    "verdict",
]

#: Most cells per side of a matrix picture (a larger matrix is shown block by block).
MAX_CELLS = 64
#: Most characters of one shown text (parameter value, failure message).
MAX_TEXT = 240
#: Most rows of a table (the rest is counted, not shown).
MAX_ROWS = 24
#: Side of the picture's longer edge in pixels (smaller for a small matrix: cells of at most 16 px).
_PIXELS = 240
#: Shades of a picture cell (0 = exactly zero, drawn blank).
_LEVELS = 8
_INK = "#1f4e79"
_BAD = "#c62828"
_GOOD = "#2e7d32"
_STYLE = "font-family:sans-serif;font-size:12px;line-height:1.35"
_CELL = "text-align:left;padding:1px 8px 1px 0;vertical-align:top"


def escape(value: Any, limit: int = MAX_TEXT) -> str:
    """``str(value)`` cut to ``limit`` characters and HTML-escaped (quotes included).

    >>> escape("<b>" + "x" * 300, limit=8)
    '&lt;b&gt;xxxxx … (303 characters)'
    """
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception as exc:  # a value whose str() fails is shown, not raised
        text = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    if len(text) > limit:
        text = f"{text[:limit]} … ({len(text)} characters)"
    return html.escape(text, quote=True)


def fmt(value: Any) -> str:
    """A short text for a table cell: floats to 6 significant digits, sequences and arrays summarized.

    >>> fmt(0.123456789), fmt((1.0, 2.5)), fmt(np.arange(100)), fmt(None)
    ('0.123457', '(1, 2.5)', 'array int64 (100,): [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...]', '—')
    """
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, np.ndarray):
        if value.ndim == 1 and value.size <= 16:
            return "[" + ", ".join(fmt(x) for x in value) + "]"
        head = ", ".join(fmt(x) for x in value.ravel()[:10])
        more = ", ..." if value.size > 10 else ""
        return f"array {value.dtype} {value.shape}: [{head}{more}]"
    if isinstance(value, tuple) and len(value) <= 16:
        return "(" + ", ".join(fmt(x) for x in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def scalar_items(mapping: Mapping[str, Any], limit: int = 12) -> list[tuple[str, str]]:
    """The first ``limit`` entries of ``mapping`` whose values are scalars or short tuples, formatted."""
    out: list[tuple[str, str]] = []
    for key, value in mapping.items():
        if len(out) >= limit:
            break
        if value is None or isinstance(value, (str, bool, int, float, np.generic)):
            out.append((str(key), fmt(value)))
        elif isinstance(value, tuple) and len(value) <= 8 and all(np.isscalar(x) for x in value):
            out.append((str(key), fmt(value)))
    return out


def repr_items(mapping: Mapping[str, Any], limit: int = 6, width: int = 40) -> str:
    """A short ``{key: value, ...}`` of a mapping's scalar entries for a ``__repr__`` (arrays and long lists left out).

    At most ``limit`` entries, each string cut to ``width`` characters; what is left out is counted,
    so a repr stays a line long whatever the mapping holds.

    >>> repr_items({"eps": 0.01, "seed": 0, "history": list(range(1000)), "solver": "x" * 100}, limit=3)
    "{'eps': 0.01, 'seed': 0, 'solver': 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…', +1 more}"
    """
    shown: list[str] = []
    left = 0
    for key, value in mapping.items():
        if len(shown) >= limit or not (value is None or isinstance(value, (str, bool, int, float, np.generic))):
            left += 1
            continue
        if isinstance(value, str):
            value = _cut(value, width)
        if isinstance(value, np.generic):
            value = value.item()
        shown.append(f"{key!r}: {value!r}")
    return "{" + ", ".join(shown + ([f"+{left} more"] if left else [])) + "}"


def _cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one ``…`` where it was longer."""
    return text if len(text) <= width else text[: width - 1] + "…"


def repr_line(title: str, *fields: str | tuple[Any, ...], digits: int = 6, width: int = 60) -> str:
    """``title(key=value, ...)``: a result's one-line ``__repr__`` (never its arrays).

    A field is ``(key, value)``, ``(key, value, digits)`` (its own significant digits) or a string
    written as it is (``"3 seeds"``).  A float, or each float of a tuple, is shown to ``digits``
    significant digits; a string quoted and cut to ``width`` characters (as :func:`repr_items`
    cuts); anything else as ``str`` shows it.

    >>> repr_line("R", ("mean", 0.123456789), ("ci", (0.1, 0.2)), "3 seeds", ("stderr", 0.0123456, 4))
    'R(mean=0.123457, ci=(0.1, 0.2), 3 seeds, stderr=0.01235)'
    >>> repr_line("R", ("method", "x" * 70), ("n", 7), ("empirical", None), width=8)
    "R(method='xxxxxxx…', n=7, empirical=None)"
    """

    def short(value: Any, places: int) -> str:
        if isinstance(value, (float, np.floating)):
            return f"{value:.{places}g}"
        if isinstance(value, tuple):
            return "(" + ", ".join(short(v, places) for v in value) + ")"
        return repr(_cut(value, width)) if isinstance(value, str) else str(value)

    parts = [f if isinstance(f, str) else f"{f[0]}={short(f[1], f[2] if len(f) > 2 else digits)}" for f in fields]
    return f"{title}({', '.join(parts)})"


def params_rows(params: Any) -> list[tuple[str, str]]:
    """``(field, value)`` of a ``params`` named tuple (positions ``p0, p1, ...`` for a plain tuple)."""
    fields = getattr(type(params), "_fields", None) or [f"p{i}" for i in range(len(params))]
    return [(str(name), fmt(value)) for name, value in zip(fields, params, strict=False)]


# ---------------------------------------------------------------------------------------------
# verification status

#: id(obj) -> (weak reference to obj, ok, text); an entry is dropped when its object is freed
_VERDICTS: dict[int, tuple[Any, bool, str]] = {}


def verdict(obj: Any, check: Callable[[], Any] | None = None) -> tuple[bool, str]:
    """``(ok, text)`` of ``obj.verify()`` (or ``check()``), computed once per object; never raises.

    ``text`` is ``"verified"``, or ``"verification failed: <exception>"`` when the check raises or
    returns anything but True.  The outcome is cached while ``obj`` lives (objects are immutable);
    an object that cannot be weakly referenced is checked at every call.

    >>> class Broken:
    ...     def verify(self):
    ...         raise ValueError("A A^T != (r - lambda) I + lambda J")
    >>> verdict(Broken())
    (False, 'verification failed: ValueError: A A^T != (r - lambda) I + lambda J')
    """
    key = id(obj)
    hit = _VERDICTS.get(key)
    if hit is not None and hit[0]() is obj:
        return hit[1], hit[2]
    try:
        result = (check or obj.verify)()
        outcome = (
            (True, "verified") if result is True else (False, f"verification failed: verify() returned {result!r}")
        )
    except Exception as exc:
        outcome = (False, f"verification failed: {type(exc).__name__}: {exc}")

    def forget(_ref: Any, key: int = key) -> None:
        _VERDICTS.pop(key, None)

    try:
        ref = weakref.ref(obj, forget)
    except TypeError:  # no weak references (slots, builtins): not cached
        return outcome
    _VERDICTS[key] = (ref, *outcome)
    return outcome


# ---------------------------------------------------------------------------------------------
# the picture


def _edges(size: int, cells: int) -> np.ndarray:
    """``cells + 1`` increasing boundaries splitting ``range(size)`` into near-equal blocks."""
    return np.floor(np.linspace(0, size, cells + 1)).astype(np.int64)


def matrix_svg(matrix: Any, *, binary: bool = False, title: str = "") -> str:
    """An inline SVG of a matrix: the 0/1 pattern (``binary``) or a heat map of ``|entry|``.

    At most :data:`MAX_CELLS` cells per side, the aspect ratio kept: a larger matrix is split
    into blocks, each cell shading the fraction of ones of its block (``binary``) or the largest
    ``|entry|`` of its block over the largest of the matrix; a block of exact zeros stays blank and
    a block holding NaN or inf is drawn red.  Returns ``""`` for an empty or non-2-D matrix.
    """
    M = np.asarray(matrix)
    if M.ndim != 2 or M.size == 0 or M.dtype.kind not in "biuf":
        return ""
    M = M.astype(np.float64)
    rows, cols = M.shape
    scale = min(1.0, MAX_CELLS / max(rows, cols))
    nr, nc = max(1, round(rows * scale)), max(1, round(cols * scale))
    re, ce = _edges(rows, nr), _edges(cols, nc)
    bad = ~np.isfinite(M)
    mag = np.where(bad, 0.0, np.abs(M))
    if binary:
        counts = np.outer(np.diff(re), np.diff(ce))
        value = np.add.reduceat(np.add.reduceat(mag, re[:-1], axis=0), ce[:-1], axis=1) / counts
    else:
        peak = float(mag.max())
        block = np.maximum.reduceat(np.maximum.reduceat(mag, re[:-1], axis=0), ce[:-1], axis=1)
        value = block / peak if peak > 0 else block
    level = np.where(value > 0, np.clip(np.ceil(value * _LEVELS), 1, _LEVELS), 0).astype(np.int64)
    broken = np.logical_or.reduceat(np.logical_or.reduceat(bad, re[:-1], axis=0), ce[:-1], axis=1)
    level[broken] = _LEVELS + 1
    px = min(16.0, _PIXELS / max(nr, nc))
    width, height = max(nc * px, 3.0), max(nr * px, 3.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {nc} {nr}" preserveAspectRatio="none" shape-rendering="crispEdges" role="img">',
        f"<title>{escape(title)}</title>" if title else "",
        f'<rect width="{nc}" height="{nr}" fill="#ffffff" stroke="#bbbbbb" vector-effect="non-scaling-stroke"/>',
    ]
    for lv in range(1, _LEVELS + 2):
        runs: list[str] = []
        for y in np.flatnonzero((level == lv).any(axis=1)):
            on = np.concatenate(([0], (level[y] == lv).astype(np.int8), [0]))
            starts = np.flatnonzero(np.diff(on) == 1)
            stops = np.flatnonzero(np.diff(on) == -1)
            runs.extend(f"M{x0} {y}h{x1 - x0}v1h{x0 - x1}z" for x0, x1 in zip(starts, stops, strict=True))
        if runs:
            colour = _BAD if lv > _LEVELS else _INK
            opacity = 1.0 if lv > _LEVELS else lv / _LEVELS
            parts.append(f'<path fill="{colour}" fill-opacity="{opacity:.3g}" d="{"".join(runs)}"/>')
    parts.append("</svg>")
    return "".join(parts)


def _picture_caption(matrix: Any, caption: str, binary: bool) -> str:
    shape = np.shape(matrix)
    what = "0/1 pattern (shade: density of ones)" if binary else "heat map of |entry| (blank: exactly 0)"
    if len(shape) == 2 and max(shape) > MAX_CELLS:
        what += f"; {shape[0]}×{shape[1]} shown in blocks"
    return f"{escape(caption)}<br>{escape(what)}" if caption else escape(what)


# ---------------------------------------------------------------------------------------------
# the card


def _table(rows: Iterable[tuple[str, str]]) -> str:
    body, shown, total = [], 0, 0
    for name, value in rows:
        total += 1
        if shown < MAX_ROWS:
            body.append(f'<tr><th style="{_CELL}">{escape(name)}</th><td style="{_CELL}">{escape(value)}</td></tr>')
            shown += 1
    if total > shown:
        body.append(f'<tr><td colspan="2" style="{_CELL}">… {total - shown} more</td></tr>')
    return "".join(body)


def _status(ok: bool, text: str) -> str:
    colour, mark = (_GOOD, "✓") if ok else (_BAD, "✗")
    return f'<tr><th style="{_CELL}">status</th><td style="{_CELL}; color: {colour}">{mark} {escape(text)}</td></tr>'


def object_html(
    *,
    title: str,
    kind: str,
    params: Any = None,
    rows: Iterable[tuple[str, Any]] = (),
    status: tuple[bool, str] | None = None,
    matrix: Any = None,
    binary: bool = False,
    caption: str = "",
    extra: str = "",
) -> str:
    """The card: a title with the kind, a table (params, then ``rows``, then ``status``) and a picture.

    ``rows`` values are formatted with :func:`fmt`; ``extra`` is HTML placed under the table
    (already escaped by the caller).  Every text is escaped here.
    """
    table_rows = [(name, fmt(value)) for name, value in rows]
    params_html = _table(params_rows(params)) if params is not None else ""
    head = (
        f'<tr><th colspan="2" style="{_CELL}; font-size: 13px">{escape(title)} '
        f'<span style="font-weight: normal; color: #555">kind <code>{escape(kind)}</code></span></th></tr>'
    )
    if params_html:
        params_html = f'<tr><td colspan="2" style="{_CELL}; color: #555">params</td></tr>{params_html}'
    table = f"<table>{head}{params_html}{_table(table_rows)}{_status(*status) if status else ''}</table>"
    picture = ""
    if matrix is not None:
        svg = matrix_svg(matrix, binary=binary, title=caption)
        if svg:
            cap = _picture_caption(matrix, caption, binary)
            picture = (
                f'<figure style="margin: 0 0 0 16px">{svg}'
                f'<figcaption style="color: #555; max-width: 260px">{cap}</figcaption></figure>'
            )
    return (
        f'<div class="gcsim-repr" style="{_STYLE}"><div style="display: flex; align-items: flex-start">'
        f"<div>{table}{extra}</div>{picture}</div></div>"
    )


def safe_html(obj: Any, build: Callable[[], str]) -> str:
    """``build()``, or, if it raises, the object's plain ``repr`` and the failure text (escaped)."""
    try:
        return build()
    except Exception as exc:
        try:
            plain = repr(obj)
        except Exception:
            plain = object.__repr__(obj)
        return (
            f'<div class="gcsim-repr" style="{_STYLE}"><pre>{escape(plain)}</pre>'
            f'<p style="color: {_BAD}">rich display failed: {escape(f"{type(exc).__name__}: {exc}")}</p></div>'
        )


def html_list(items: Iterable[str], limit: int = MAX_ROWS) -> str:
    """Escaped items as an HTML list, at most ``limit`` of them (the rest counted)."""
    items = list(items)
    shown = "".join(f"<li>{escape(x)}</li>" for x in items[:limit])
    more = f"<li>… {len(items) - limit} more</li>" if len(items) > limit else ""
    return f'<ul style="margin: 2px 0 0 16px; padding: 0">{shown}{more}</ul>'


def check_table(header: Iterable[str], rows: Iterable[Iterable[Any]], limit: int = MAX_ROWS) -> str:
    """An escaped table with a header row, at most ``limit`` body rows (the rest counted)."""
    head = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in header)
    body, total = [], 0
    for row in rows:
        total += 1
        if total <= limit:
            body.append("<tr>" + "".join(f'<td style="{_CELL}">{escape(fmt(v))}</td>' for v in row) + "</tr>")
    if total > limit:
        body.append(f'<tr><td style="{_CELL}">… {total - limit} more</td></tr>')
    return f'<table style="margin-top: 4px"><tr>{head}</tr>{"".join(body)}</table>'
