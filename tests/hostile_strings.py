"""A corpus of hostile strings: what untrusted model names, outputs and data texts may contain.

Grouped by what they attack; every string must come out of the project as the same text it went
in as (escaped where it is shown), never as markup, script, a formula, a path or a YAML key.
"""

from __future__ import annotations

SCRIPT_AND_ATTRIBUTES = [
    "<script>alert(1)</script>",
    '"><svg onload=alert(2)>',
    "'><img src=x onerror=alert(3)>",
    "</script><script>alert(4)</script>",
    "<iframe src=javascript:alert(5)>",
    '<a href="javascript:alert(6)">click</a>',
    "<body onload=alert(7)>",
    '" onmouseover="alert(8)',
    "' autofocus onfocus='alert(9)",
    "<style>*{display:none}</style>",
    "<!--",
    "]]><x>",
    "&lt;script&gt;alert(10)&lt;/script&gt;",
    "<math><mi xlink:href=javascript:alert(11)>",
]
URLS = [
    "javascript:alert(12)",
    "data:text/html,<script>alert(13)</script>",
    "http://evil.example/x.png",
    "//evil.example/x.js",
]
TEMPLATES = [
    "{{7*7}}",
    "{% for x in range(9) %}x{% endfor %}",
    "${alert(14)}",
    "`${alert(15)}`",
    '{"signal": "alert(16)"}',
    "{{constructor.constructor('alert(17)')()}}",
    "#{7*7}",
]
SQL = [
    "'; DROP TABLE raw.scores; --",
    "' OR '1'='1",
    '"); DELETE FROM raw.models; --',
]
PATHS = [
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "CON",
    "nul.txt",
    "a/b/c",
    "/absolute/path",
    ".hidden",
]
SPREADSHEET = [
    "=HYPERLINK(\"http://evil.example\",\"x\")",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,2)",
    "\t=1+1",
    "\r=1+1",
]
MARKDOWN_AND_YAML = [
    "---\nlicense: mit\n---",
    "# heading",
    "| a | b |",
    "[link](javascript:alert(18))",
    "![img](http://evil.example/x.png)",
    "key: value\nother: 1",
    "*bold* _it_ `code`",
    "> quote",
]
CONTROL_AND_INVISIBLE = [
    "a\u202eb\u202cc",  # right-to-left override
    "a\u2066b\u2069",  # isolates
    "zero\u200bwidth\u200djoiner\ufeff",
    "null\x00byte",
    "bell\x07and\x1besc",
    "line\nbreak\u2028sep",
]
LONG = [
    "x" * 5000,
    "长" * 2000,
    "<b>" * 300,
]

GROUPS = {
    "script/attribute": SCRIPT_AND_ATTRIBUTES, "url": URLS, "template": TEMPLATES, "sql": SQL,
    "path": PATHS, "spreadsheet": SPREADSHEET, "markdown/yaml": MARKDOWN_AND_YAML,
    "control/bidi/zero-width": CONTROL_AND_INVISIBLE, "long": LONG,
}
ALL = [text for group in GROUPS.values() for text in group]
assert len(ALL) >= 50, len(ALL)
