"""Text that leaves tracekit, escaped for where it goes.

A log line, a file name or an environment value is whatever bytes the run wrote: a newline in a file
name would start a line of the summary of its own (``verdict   HEALTHY`` from a file's name), a
``<script>`` in a log line would run in a report, a ``</details>`` would close the report's section.
Each destination has one function here, and every renderer calls it on every text it did not write
itself:

- ``name`` / ``line``: the terminal, and any one-line record (a launch record, a store's column): control
  characters, newlines and bytes that are not UTF-8 shown as ``\\n``, ``\\x1b``, ``\\xff``;
- ``text``: valid UTF-8 only (JSON, parquet): undecodable bytes of a file name shown as ``\\xff``;
- ``html``: HTML text and attribute values;
- ``markdown`` (inline), ``markdown_code`` (a fenced block) and ``markdown_span`` (inline code);
- ``shell``: a command a user can paste back (``shlex`` quoting, ``$'...'`` for control characters).
"""

from __future__ import annotations

import html as _html
import re
import shlex

# C0 and C1 controls, DEL, lone surrogates (a name's undecodable bytes under surrogateescape),
# and the Unicode line and paragraph separators (a terminal or an editor breaks lines there)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_CONTROL_NO_TAB = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _one(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def name(s: str) -> str:
    """A file name or any one-line field for a terminal: every control character escaped."""
    return _CONTROL.sub(_one, s) if _CONTROL.search(s) else s


def line(s: str) -> str:
    """A log line quoted on a terminal: as ``name``, tabs kept."""
    return _CONTROL_NO_TAB.sub(_one, s) if _CONTROL_NO_TAB.search(s) else s


def text(s: str) -> str:
    """``s`` as valid UTF-8 (for JSON and parquet): a name's undecodable bytes as ``\\xff``."""
    return _SURROGATE.sub(_one, s) if _SURROGATE.search(s) else s


def html(s: str) -> str:
    """HTML text or a quoted attribute value: ``& < > " '`` as entities, control characters escaped."""
    return _html.escape(line(s), quote=True)


# inline markdown syntax anywhere (emphasis, code, links, tables, strikethrough, escapes), and what
# starts a block at the start of a line (a heading, a quote, a list, a rule)
_MD_INLINE = re.compile(r"([\\`*\[\]|~]|(?<![^\W_])_|_(?![^\W_]))")
_MD_START = re.compile(r"^(\s*)(\d+(?=[.)])|)([#>+=.)-])")


def markdown(s: str, start: bool = False) -> str:
    """Inline markdown text: no HTML (``&`` and ``<`` as entities, so ``</details>`` or ``<script>``
    stay text on a forge), markdown's inline punctuation backslashed (an ``_`` between letters or
    digits cannot start emphasis: ``zero3_slow_2x2`` stays), on one line. ``start``: the text begins
    a line, where a heading's, a quote's or a list's mark would start a block: backslashed too."""
    s = _MD_INLINE.sub(r"\\\1", line(s).replace("&", "&amp;").replace("<", "&lt;"))
    return _MD_START.sub(r"\1\2\\\3", s) if start else s


def markdown_span(s: str) -> str:
    """Inline code: fenced by more backticks than any run in ``s`` (inside, nothing is markup)."""
    s = line(s)
    run = max((len(m) for m in re.findall("`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def markdown_code(body: str, info: str = "") -> str:
    """A fenced code block holding ``body`` (lines kept, each line's controls escaped): the fence is
    longer than any run of backticks in it, so no line of ``body`` can close it."""
    lines = [line(x) for x in body.split("\n")]
    run = max((len(m) for x in lines for m in re.findall("`{3,}", x)), default=0)
    fence = "`" * max(3, run + 1)
    return "\n".join([fence + info, *lines, fence])


def shell(argv: list[str]) -> str:
    """A command to paste into a shell: each word quoted (``shlex``), a word with control characters
    as ``$'...'`` so the command stays on one line and means the same."""
    return " ".join(_shell_word(a) for a in argv)


def _shell_word(a: str) -> str:
    if not _CONTROL.search(a):
        return shlex.quote(a)
    body = _CONTROL.sub(_one, a.replace("\\", "\\\\").replace("'", "\\'"))
    return f"$'{body}'"
