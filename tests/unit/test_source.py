"""Explicit cases for locating and rewriting the batch-size literal (skyline_nb.source).

Each accepted case checks the exact span: the rewrite must differ from the cell only there.
Each refusal checks that the reason names the problem, since the widget shows it verbatim.
"""

from __future__ import annotations

import pytest

from skyline_nb.ipython_lines import as_python
from skyline_nb.source import (
    LiteralLocation,
    SourceEditRefused,
    find_batch_size_literal,
    locate_for_edit,
    plan_edit,
    rewrite_batch_size,
)

PROVIDER = "def skyline_input_provider(batch_size=32):\n    return (batch_size,)\n"


def marked(cell: str) -> tuple[str, int]:
    """``cell`` with its one ``⟨…⟩`` marker removed, and the str index where it began."""
    start = cell.index("⟨")
    return cell.replace("⟨", "").replace("⟩", ""), start


def assert_edits_only_literal(cell: str, new_value: int = 64, **kwargs: object) -> LiteralLocation:
    """The marked literal is found, and rewriting it changes exactly its characters."""
    code, start = marked(cell)
    loc = find_batch_size_literal(code, **kwargs)
    assert loc.start == start
    assert code[loc.start : loc.end] == loc.text
    assert int(loc.text) == loc.value
    expected = code[: loc.start] + str(new_value) + code[loc.end :]
    assert rewrite_batch_size(code, new_value, **kwargs) == expected
    return loc


# -- targets: the provider's signature -------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    [
        "def skyline_input_provider(batch_size=⟨32⟩):\n    pass\n",
        "def skyline_input_provider(batch_size: int = ⟨32⟩) -> tuple:\n    pass\n",
        "def skyline_input_provider(\n    batch_size: int = ⟨32⟩,\n    device='cpu',\n"
        "):\n    pass\n",
        "def skyline_input_provider(batch_size=⟨32⟩, /):\n    pass\n",
        "def skyline_input_provider(x=1, /, batch_size=⟨32⟩, *args, **kw):\n    pass\n",
        "def skyline_input_provider(*, batch_size=⟨32⟩, other=4):\n    pass\n",
        "def skyline_input_provider(model, *, other, batch_size=⟨32⟩):\n    pass\n",
        "def skyline_input_provider(batch_size=(⟨32⟩)):\n    pass\n",
        "def skyline_input_provider(batch_size = ⟨ 32⟩):\n    pass\n".replace("⟨ ", " ⟨"),
        "@functools.cache\n@other(batch_size=3)\n"
        "def skyline_input_provider(batch_size=⟨8⟩):\n  pass\n",
        "def deepview_input_provider(batch_size=⟨32⟩):\n    pass\n",
        "skyline_input_provider = lambda batch_size=⟨32⟩: (batch_size,)\n",
        "import functools\ndef make(batch_size, seq=3):\n    pass\n"
        "skyline_input_provider = functools.partial(make, seq=4, batch_size=⟨32⟩)\n",
        "from functools import partial\nskyline_input_provider = partial(f, batch_size=⟨32⟩)\n",
    ],
)
def test_signature_default_in_any_layout(cell: str) -> None:
    loc = assert_edits_only_literal(cell)
    assert loc.target == "signature_default"
    assert loc.name.endswith("_input_provider")


def test_comments_strings_and_other_functions_do_not_match() -> None:
    cell = (
        "# batch_size = 3\n"
        "NOTE = 'batch_size = 3'\n"
        'DOC = """\nbatch_size = 3\ndef skyline_input_provider(batch_size=3):\n"""\n'
        "def train(batch_size=5):\n    pass\n"
        "def outer():\n    def skyline_input_provider(batch_size=7):\n        pass\n"
        "class Holder:\n    def skyline_input_provider(self, batch_size=9):\n        pass\n"
        "def skyline_input_provider(batch_size=⟨32⟩):  # batch_size=3\n    pass\n"
    )
    loc = assert_edits_only_literal(cell)
    assert loc.line == 15


def test_skyline_provider_is_preferred_over_deepview_and_explicit_name_wins() -> None:
    cell = (
        "def deepview_input_provider(batch_size=16):\n    pass\n"
        "def skyline_input_provider(batch_size=⟨32⟩):\n    pass\n"
    )
    assert_edits_only_literal(cell)
    code, _ = marked(cell)
    assert find_batch_size_literal(code, provider_name="deepview_input_provider").value == 16
    named = "def make_inputs(batch_size=⟨48⟩):\n    pass\n" + PROVIDER
    assert assert_edits_only_literal(named, provider_name="make_inputs").name == "make_inputs"


# -- targets: a module-level variable ---------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    [
        "batch_size = ⟨32⟩\ndef skyline_input_provider(batch_size=batch_size):\n    pass\n",
        "batch_size: int = ⟨32⟩\ndef skyline_input_provider(batch_size=batch_size):\n    pass\n",
        "BATCH = ⟨32⟩\ndef skyline_input_provider(batch_size=BATCH):\n    pass\n",
        "batch_size = ⟨32⟩\ndef skyline_input_provider():\n    return (batch_size,)\n",
        "batch_size = ⟨32⟩\ndef skyline_input_provider(batch_size):\n    return (batch_size,)\n",
        "def skyline_input_provider():\n    return (batch_size,)\nbatch_size = ⟨32⟩\n",
        "batch_size: int\nbatch_size = ⟨32⟩\n"
        "def skyline_input_provider():\n    return batch_size\n",
        "if True:\n    batch_size = ⟨32⟩\ndef skyline_input_provider():\n    return batch_size\n",
    ],
)
def test_module_variable_that_the_provider_reads(cell: str) -> None:
    loc = assert_edits_only_literal(cell)
    assert loc.target == "module_variable"


def test_variable_name_is_configurable_and_may_stand_alone() -> None:
    cell = "bs = ⟨32⟩\ndef skyline_input_provider():\n    return (bs,)\n"
    assert assert_edits_only_literal(cell, variable="bs").name == "bs"
    # The magic's --batch-size-var says which cell line holds the batch size even without a
    # provider in the cell.
    assert_edits_only_literal("import torch\nbs = ⟨32⟩\n", variable="bs")


def test_signature_literal_wins_over_an_unread_module_variable() -> None:
    cell = "batch_size = 16\ndef skyline_input_provider(batch_size=⟨32⟩):\n    return batch_size\n"
    assert_edits_only_literal(cell)


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("x = 1\n", "no top-level `def skyline_input_provider or deepview_input_provider"),
        ("def outer():\n    def skyline_input_provider(batch_size=3): pass\n", "no top-level"),
        (
            "def skyline_input_provider(batch_size=2**5): pass\n",
            "is `2 ** 5`, not a literal such as `32`",
        ),
        ("def skyline_input_provider(batch_size=BATCH): pass\n", "no module-level `BATCH"),
        ("def skyline_input_provider(batch_size=True): pass\n", "`True`, a bool"),
        ("def skyline_input_provider(batch_size=-3): pass\n", "is `-3`, not a literal"),
        ("def skyline_input_provider(batch_size=0): pass\n", "at least 1"),
        ("def skyline_input_provider(batch_size=32.0): pass\n", "a float"),
        ("def skyline_input_provider(batch_size='32'): pass\n", "a str"),
        ("def skyline_input_provider(batch_size=0x20): pass\n", "written `0x20`"),
        ("def skyline_input_provider(batch_size=0o40): pass\n", "written `0o40`"),
        ("def skyline_input_provider(batch_size=3_2): pass\n", "written `3_2`"),
        ("def skyline_input_provider(): return 1\n", "no `batch_size` parameter"),
        ("def skyline_input_provider(batch_size): pass\n", "no module-level `batch_size"),
        ("async def skyline_input_provider(batch_size=3): pass\n", "async def"),
        (PROVIDER + PROVIDER, "defined 2 times (lines 1, 3)"),
        ("def skyline_input_provider(batch_size=32:\n", "does not parse"),
        ("skyline_input_provider = partial(make, 32)\n",
         "a partial without a `batch_size=` keyword (write it as one: "
         "`partial(…, batch_size=32)`)"),
        (PROVIDER + "skyline_input_provider = lambda batch_size=4: 1\n",
         "defined 2 times (lines 1, 3)"),
        ("skyline_input_provider = make_inputs\n", "no top-level `def skyline_input_provider"),
        ("%%bash\ndef skyline_input_provider(batch_size=32): pass\n", "`%%bash`"),
        ("x = 1\0\n" + PROVIDER, "does not parse"),
        ("s = '\ud800'\n" + PROVIDER, "does not parse"),
    ],
)
def test_refusals_say_why(code: str, reason: str) -> None:
    with pytest.raises(SourceEditRefused) as info:
        find_batch_size_literal(code)
    assert reason in str(info.value)
    with pytest.raises(SourceEditRefused):
        rewrite_batch_size(code, 64)
    answer = locate_for_edit(code, 64)
    assert answer == {"ok": False, "reason": str(info.value)}


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("batch_size = 32\nbatch_size = 64\n", "assigned 2 times at module level (lines 1, 2)"),
        ("batch_size = 32\nbatch_size += 1\n", "assigned 2 times"),
        ("batch_size = 32\nfor batch_size in range(3): pass\n", "assigned 2 times"),
        ("batch_size = 32\nimport batch_size\n", "assigned 2 times"),
        ("batch_size = 32\ndef f():\n    global batch_size\n    batch_size = 1\n", "2 times"),
        ("if x:\n    batch_size = 32\nelse:\n    batch_size = 64\n", "assigned 2 times"),
        ("batch_size, lr = 32, 0.1\n", "not a plain `batch_size = <int>`"),
        ("batch_size = 2 * 16\n", "`2 * 16`, not a literal"),
        ("batch_size = len(data)\n", "`len(data)`, not a literal"),
        ("batch_size = !echo 32\n", "not a literal"),
    ],
)
def test_module_variable_refusals(code: str, reason: str) -> None:
    provider = "def skyline_input_provider():\n    return batch_size\n"
    with pytest.raises(SourceEditRefused) as info:
        find_batch_size_literal(code + provider)
    assert reason in str(info.value)


@pytest.mark.parametrize(
    "binding",
    [
        "del batch_size",
        "(batch_size := 3)",
        "sizes = [(batch_size := n) for n in range(3)]",
        "def batch_size():\n    pass",
        "class batch_size:\n    pass",
        "from config import batch_size",
        "import config as batch_size",
        "with open('f') as batch_size:\n    pass",
        "try:\n    pass\nexcept Exception as batch_size:\n    pass",
        "match x:\n    case [*batch_size]:\n        pass",
        "match x:\n    case {**batch_size}:\n        pass",
        "class C:\n    def m(self):\n        global batch_size\n        batch_size = 1",
        "batch_size: int = 64",
    ],
)
def test_every_module_level_binding_counts(binding: str) -> None:
    code = f"batch_size = 32\n{binding}\ndef skyline_input_provider():\n    return batch_size\n"
    with pytest.raises(SourceEditRefused, match="assigned 2 times"):
        find_batch_size_literal(code)


def test_identifiers_are_compared_after_nfkc_normalization() -> None:
    # Python reads the fullwidth `ｂ` as `b`: this line assigns the variable the provider reads.
    cell = "ｂatch_size = ⟨32⟩\ndef skyline_input_provider(batch_size=batch_size):\n    pass\n"
    loc = assert_edits_only_literal(cell)
    assert (loc.name, loc.start_utf16) == ("batch_size", loc.start)


def test_module_scope_is_not_confused_by_other_scopes() -> None:
    cell = (
        "batch_size = ⟨32⟩\n"
        "def helper(batch_size=4):\n    batch_size = 5\n    return batch_size\n"
        "class Config:\n    batch_size = 6\n"
        "sizes = [batch_size for batch_size in range(3)]\n"
        "key = lambda batch_size=2: batch_size\n"
        "class Meta(Base, size=4):\n    def m(self, batch_size=3):\n        batch_size = 1\n"
        "def skyline_input_provider():\n    return batch_size\n"
    )
    assert_edits_only_literal(cell)


def test_ambiguous_when_signature_and_named_variable_both_decide() -> None:
    code = "bs = 8\ndef skyline_input_provider(batch_size=32):\n    return (bs, batch_size)\n"
    with pytest.raises(
        SourceEditRefused, match=r"ambiguous: the default .* and the global `bs` both set it"
    ):
        find_batch_size_literal(code, variable="bs")
    assert find_batch_size_literal(code).value == 32  # no --batch-size-var: the signature


def test_default_naming_another_variable_than_requested_is_refused() -> None:
    code = "A = 1\nB = 2\ndef skyline_input_provider(batch_size=A):\n    pass\n"
    with pytest.raises(SourceEditRefused, match="reads `A`, not `B`"):
        find_batch_size_literal(code, variable="B")


def test_provider_reading_a_local_does_not_count_as_reading_the_global() -> None:
    code = (
        "batch_size = 8\ndef skyline_input_provider():\n    batch_size = 4\n    return batch_size\n"
    )
    with pytest.raises(SourceEditRefused, match="does not read"):
        find_batch_size_literal(code)


# -- IPython syntax, line endings, unicode ------------------------------------------------------


def test_magics_and_shell_lines_keep_offsets() -> None:
    cell = (
        "%%skyline --batch-size-var bs\n"
        "%load_ext autoreload\n"
        "!pip install torch\n"
        "files = !ls\n"
        "%time x = 1\n"
        "if x:\n    %time y = 2\n"
        "def skyline_input_provider(batch_size=⟨32⟩):\n"
        "    y = (10\n%3)\n"
        "    return 10 \\\n% 3\n"
    )
    assert_edits_only_literal(cell)
    code, _ = marked(cell)
    python = as_python(code)
    assert len(python) == len(code)
    assert python.splitlines()[0] == "0#skyline --batch-size-var bs"
    assert python.splitlines()[3] == "files = _#s"
    assert python.splitlines()[-3:] == code.splitlines()[-3:]  # continuation lines: Python


def test_leading_blank_lines_before_cell_magic() -> None:
    assert_edits_only_literal("\n\n%%time\ndef skyline_input_provider(batch_size=⟨32⟩): pass\n")


def test_percent_lines_inside_strings_are_left_alone() -> None:
    cell = (
        's = """\n%not a magic\n!nor this\n"""\ndef skyline_input_provider(batch_size=⟨32⟩): pass\n'
    )
    code, _ = marked(cell)
    assert as_python(code) == code
    assert_edits_only_literal(cell)


@pytest.mark.parametrize("eol", ["\r\n", "\r", "\n"])
def test_line_endings(eol: str) -> None:
    cell = eol.join(
        [
            "%%skyline",
            "import torch",
            "",
            "def skyline_input_provider(",
            "    batch_size=⟨32⟩,",
            "):",
            "    pass",
            "",
        ]
    )
    assert assert_edits_only_literal(cell).line == 5


def test_unicode_offsets_in_str_and_utf16_indices() -> None:
    cell = (
        "δέλτα = 'é 😀 中文'  # 😀😀\n"
        "def skyline_input_provider(batch_size=⟨32⟩):  # 😀\n"
        "    return δέλτα\n"
    )
    loc = assert_edits_only_literal(cell)
    code, _ = marked(cell)
    utf16 = code.encode("utf-16-le")
    assert utf16[2 * loc.start_utf16 : 2 * loc.end_utf16].decode("utf-16-le") == "32"
    assert loc.start_utf16 == loc.start + 3  # three astral characters before the literal


def test_invalid_escape_in_user_string_is_not_an_error() -> None:
    # pytest turns warnings into errors; the parser's SyntaxWarning must not refuse the edit.
    assert_edits_only_literal(
        "import re\nR = '\\d+'\ndef skyline_input_provider(batch_size=⟨32⟩): pass\n"
    )


def test_form_feed_and_tabs_before_the_literal() -> None:
    assert_edits_only_literal("x = 1\n\x0cdef skyline_input_provider(\tbatch_size=\t⟨32⟩): pass\n")


# -- the edit API -------------------------------------------------------------------------------


def test_rewrite_relocates_in_the_current_text() -> None:
    profiled = PROVIDER
    typed_since = "# a comment the user added\n" + PROVIDER.replace("32", "48")
    rewritten = rewrite_batch_size(typed_since, 64)
    assert rewritten == typed_since.replace("48", "64")
    with pytest.raises(SourceEditRefused, match="is now 48, not 32"):
        rewrite_batch_size(typed_since, 64, expected_value=32)
    assert rewrite_batch_size(profiled, 64, expected_value=32) == PROVIDER.replace("32", "64")


def test_rewrite_is_idempotent_and_reversible() -> None:
    once = rewrite_batch_size(PROVIDER, 1024)
    assert rewrite_batch_size(once, 1024) == once
    assert rewrite_batch_size(once, 32) == PROVIDER


def test_new_value_is_checked() -> None:
    with pytest.raises(SourceEditRefused, match="at least 1"):
        rewrite_batch_size(PROVIDER, 0)
    with pytest.raises(TypeError):
        rewrite_batch_size(PROVIDER, True)
    with pytest.raises(TypeError):
        rewrite_batch_size(PROVIDER, 32.0)  # type: ignore[arg-type]


def test_locate_for_edit_answer_for_the_front_end() -> None:
    code = "s = '😀'\n" + PROVIDER
    answer = locate_for_edit(code, 64)
    start = code.index("32")
    location = {
        "start": start,
        "end": start + 2,
        "start_utf16": start + 1,
        "end_utf16": start + 3,
        "line": 2,
        "value": 32,
        "text": "32",
        "target": "signature_default",
        "name": "skyline_input_provider",
        "description": "the default of `batch_size` in `skyline_input_provider` (line 2)",
    }
    # The edit the front end applies verbatim: UTF-16 offsets (the emoji counts 2), old and new.
    edit = {"start": start + 1, "end": start + 3, "expected": "32", "text": "64"}
    assert answer == {"ok": True, **location, "edit": edit}
    refused = {"ok": False, "reason": "a batch size must be at least 1, not 0"}
    assert locate_for_edit(code, 0) == refused


def test_the_editor_edit_and_the_python_rewrite_are_the_same_edit() -> None:
    code = "# 🚀 é\n" + PROVIDER
    edit = plan_edit(code, 128)
    utf16 = code.encode("utf-16-le")
    js = edit.for_editor()
    assert utf16[2 * js["start"] : 2 * js["end"]].decode("utf-16-le") == js["expected"] == "32"
    as_js = utf16[: 2 * js["start"]] + js["text"].encode("utf-16-le") + utf16[2 * js["end"] :]
    assert as_js.decode("utf-16-le") == edit.apply(code) == rewrite_batch_size(code, 128)


@pytest.mark.parametrize(
    ("literal", "new_value", "written"),
    [("2_000_000", 1_500_000, "1_500_000"), ("2_000_000", 512, "512"), ("10_000", 40_960, "40_960"),
     ("4096", 1_000_000, "1000000")],
)
def test_a_literal_grouped_in_threes_is_edited_in_its_own_spelling(
    literal: str, new_value: int, written: str
) -> None:
    code = PROVIDER.replace("32", literal)
    loc = find_batch_size_literal(code)
    assert (loc.text, loc.value) == (literal, int(literal))
    edit = plan_edit(code, new_value)
    assert edit.for_editor()["expected"] == literal
    assert edit.apply(code) == PROVIDER.replace("32", written)
    # the rewritten cell reads back as the new value, and goes on being edited alike
    assert find_batch_size_literal(edit.apply(code)).value == new_value


@pytest.mark.parametrize(
    ("literal", "reason"),
    [("3_2", "written `3_2`"), ("2_00_000", "written `2_00_000`"), ("1_0000", "written `1_0000`"),
     ("_2", "no module-level `_2"), ("0_000", "at least 1")],
)
def test_other_underscore_spellings_are_refused(literal: str, reason: str) -> None:
    with pytest.raises(SourceEditRefused, match=reason):
        find_batch_size_literal(PROVIDER.replace("32", literal))
