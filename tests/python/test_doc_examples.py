# SPDX-License-Identifier: Apache-2.0
"""The Python examples of README.md and docs/PYTHON.md run as written, and every line whose
comment starts with a value (`r.route("user:42")  # 'cache-2'`) gives that value.

The ```python blocks are read from the docs, not copied here. The blocks of one file run in one
namespace, in order (a later block may use an earlier one's `keys`); the only name the test
provides is `client1`, the stand-in a doc uses for "your client object".
"""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks(path):
    text = open(path, encoding="utf-8").read()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S)]


def shown_value(comment):
    """The Python literal a comment starts with ("'cache-2'; keys are ..." -> 'cache-2'), or
    None when it starts with words."""
    text = comment.strip()
    if not text or text[0] not in "'\"[{(0123456789-":
        return None
    for end in range(len(text), 0, -1):
        try:
            return (ast.literal_eval(text[:end]),)
        except (ValueError, SyntaxError):
            continue
    return None


@pytest.mark.parametrize("doc", ["README.md", "docs/PYTHON.md"])
def test_python_examples_run_and_give_the_values_they_show(doc):
    found = blocks(os.path.join(ROOT, doc))
    assert found, f"{doc} has no python example"
    namespace = {"client1": object()}
    checked = 0
    for first_line, code in found:
        for offset, line in enumerate(code.splitlines()):
            where = f"{doc}:{first_line + offset}"
            source, _, comment = line.partition("  #")
            if not source.strip():
                continue
            want = shown_value(comment)
            if want is not None:
                got = eval(compile(source.strip(), where, "eval"), namespace)  # noqa: S307
                assert got == want[0], f"{where}: {source.strip()} gives {got!r}, the doc shows {want[0]!r}"
                checked += 1
            else:
                exec(compile(source.strip(), where, "exec"), namespace)  # noqa: S102
    if doc == "docs/PYTHON.md":
        assert checked >= 5, "the values PYTHON.md shows were not found"
