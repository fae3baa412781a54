"""Property tests: a batch-size rewrite changes exactly one integer literal, or is refused.

Cells are assembled from blocks: the target (a provider signature, or a module-level variable the
provider reads) among noise that must never match: comments and strings holding
``batch_size = 3``, decorators, line and cell magics, shell lines, nested and class-level
providers, unicode identifiers and strings, mixed CRLF/CR/LF line endings. Every cell carries its
expected answer (the marked literal, or a refusal), so a finder that refused everything would
fail. A second property mutates cells with random text and checks only the invariant.

CI runs ``SKYLINE_FUZZ_EXAMPLES`` (default 300) examples; ``make fuzz`` runs 10,000.
"""

from __future__ import annotations

import ast
import io
import os
import tokenize
import warnings
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skyline_nb.ipython_lines import as_python
from skyline_nb.source import (
    SourceEditRefused,
    find_batch_size_literal,
    locate_for_edit,
    rewrite_batch_size,
)

FUZZ = settings(
    max_examples=int(os.environ.get("SKYLINE_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Text for comments and strings: any character but line breaks, NUL, surrogates and the markers.
free_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00⟨⟩"), max_size=30
)
ws = st.sampled_from(["", " ", "  ", "\t"])


@dataclass
class Cell:
    """A generated cell: ``marked`` holds ``⟨N⟩`` around the target literal unless refused."""

    marked: str
    target: str  # "signature_default", "module_variable", or "refuse"
    kwargs: dict[str, str]


@st.composite
def noise_block(draw: st.DrawFn) -> str:
    text = draw(free_text)
    return draw(
        st.sampled_from(
            [
                f"# batch_size = 3 {text}",
                f"s = {text + ' batch_size = 3'!r}",
                f"t = {'def skyline_input_provider(batch_size=3):' + text!r}  # {text}",
                'DOC = """\nbatch_size = 3\n%time not a magic\n!nor this\n"""',
                f"δ_λ = {text!r}\n変数 = 'batch_size = 3 😀'",
                "%time x = 1",
                "!echo batch_size = 3",
                "%matplotlib inline",
                "out = !ls",
                "for i in range(3):\n    %time pass",
                "def outer():\n    def skyline_input_provider(batch_size=7):\n"
                "        return batch_size\n    return skyline_input_provider",
                "class C:\n    batch_size = 5\n\n"
                "    def skyline_input_provider(self, batch_size=9):\n"
                "        return batch_size",
                "@decorator(batch_size=4)\ndef train(model, batch_size=5, *, lr=0.1):\n"
                "    batch_size = 6\n    return model",
                "lr = 3e-4\nepochs = 3\nbatch_size_other = 3",
                "sizes = [batch_size for batch_size in range(3)]",
                "total = (17\n% modulus  # a continuation line: Python, not a magic\n)",
            ]
        )
    )


@st.composite
def provider_block(
    draw: st.DrawFn, default: str | None, name: str, reads: str, bare: bool = False
) -> str:
    """A provider def whose ``batch_size`` default is ``default``; if None, ``batch_size`` is a
    parameter without default when ``bare``, else no parameter at all."""
    ann = draw(st.sampled_from(["", ": int", ":int", " : 'int'"]))
    param = "" if default is None else f"batch_size{ann}{draw(ws)}={draw(ws)}{default}"
    before = draw(st.sampled_from(["", "model=None, ", "device='cpu', "]))
    layout = draw(st.sampled_from(["plain", "posonly", "kwonly", "multiline"]))
    if default is None:
        params = ("batch_size, " if bare else "") + before
    elif layout == "posonly":
        params = f"{before}{param}, /"
    elif layout == "kwonly":
        params = f"{before}*, {param}"
    elif layout == "multiline":
        params = f"\n    {before}\n    {param},\n"
    else:
        params = before + param
    decorators = draw(
        st.lists(st.sampled_from(["@torch.no_grad()", "@register(batch_size=3)", "@cache"]))
    )
    returns = draw(st.sampled_from(["", " -> tuple", "->'tuple'"]))
    body = draw(
        st.sampled_from(
            [
                f"    return (torch.randn({reads}, 3),)",
                f'    """batch_size = 3"""\n    x = {reads}  # batch_size = 3\n    return (x,)',
                f"    %time y = 1\n    return ({reads},)",
            ]
        )
    )
    return "\n".join([*decorators, f"def {name}({params}){returns}:", body])


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    name = draw(st.sampled_from(["skyline_input_provider", "deepview_input_provider"]))
    value = draw(st.integers(1, 4096))
    literal = f"⟨{value}⟩" if draw(st.booleans()) else f"(⟨{value}⟩)"
    scenario = draw(st.sampled_from(["signature", "default_name", "body_reads", "bad"]))
    kwargs: dict[str, str] = {}
    target = "module_variable"
    var = draw(st.sampled_from(["batch_size", "bs", "BATCH"]))
    assign = draw(
        st.sampled_from(
            ["{v} = {n}", "{v}: int = {n}", "{v} = {n}  # batch_size = 3", "if 1:\n  {v} = {n}"]
        )
    )
    if var == "batch_size" and draw(st.booleans()):
        assign = assign.replace("{v}", "ｂatch_size")  # NFKC-equal to batch_size: the same name
    targets = []
    if scenario == "signature":
        target = "signature_default"
        targets.append(draw(provider_block(literal, name, "batch_size")))
        if draw(st.booleans()):
            targets.append("batch_size = 16")  # shadowed by the parameter: not the target
    elif scenario == "default_name":
        targets.append(draw(provider_block(var, name, "batch_size")))
        targets.append(assign.format(v=var, n=literal))
        if draw(st.booleans()):
            kwargs["variable"] = var
    elif scenario == "body_reads":
        targets.append(draw(provider_block(None, name, var, bare=draw(st.booleans()))))
        targets.append(assign.format(v=var, n=literal))
        if var != "batch_size" or draw(st.booleans()):
            kwargs["variable"] = var
    else:
        target = "refuse"
        bad = draw(
            st.sampled_from(["2 ** 5", "True", "-8", "0x20", "3_2", "0", "BATCH * 2", "32.0"])
        )
        how = draw(st.sampled_from(["literal", "twice", "async", "nested", "missing", "dup_var"]))
        provider = draw(provider_block(bad if how == "literal" else literal, name, "batch_size"))
        if how == "twice":
            targets += [provider, provider]
        elif how == "async":
            targets.append(provider.replace(f"def {name}", f"async def {name}"))
        elif how == "nested":
            targets.append(
                "def wrapper():\n" + "\n".join("    " + ln for ln in provider.split("\n"))
            )
        elif how == "dup_var":
            targets.append(draw(provider_block(var, name, "batch_size")))
            targets += [assign.format(v=var, n=literal), f"{var} = 64"]
        elif how == "missing":
            targets.append("def make_model():\n    return None")
        else:
            targets.append(provider)
        targets.append(f"# batch_size = {value}")
    blocks = draw(st.lists(noise_block(), max_size=6)) + targets
    order = draw(st.permutations(range(len(blocks))))
    header = draw(
        st.sampled_from(["", "", "%%skyline\n", "\n%%skyline --no-watch\n", "%%time\n", "%%bash\n"])
    )
    target = "refuse" if header == "%%bash\n" else target
    separators = draw(
        st.lists(st.sampled_from(["\n", "\n\n"]), min_size=len(blocks), max_size=len(blocks))
    )
    text = header + "".join(blocks[i] + sep for i, sep in zip(order, separators, strict=True))
    return Cell(text, target, kwargs)


@st.composite
def with_line_endings(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    uniform = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    eols = [
        draw(st.sampled_from(["\n", "\r\n", "\r"])) if uniform == "mixed" else uniform
        for _ in lines[1:]
    ]
    return lines[0] + "".join(eol + line for eol, line in zip(eols, lines[1:], strict=True))


def tokens(code: str) -> list[tuple[int, str]]:
    readline = io.StringIO(as_python(code), newline=None).readline  # universal newlines
    return [(tok.type, tok.string) for tok in tokenize.generate_tokens(readline)]


def parse(code: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(as_python(code))


def check_edit_is_exactly_the_literal(code: str, new_value: int, **kwargs: str) -> None:
    """The invariant for any accepted rewrite, whatever the cell."""
    loc = find_batch_size_literal(code, **kwargs)
    new = rewrite_batch_size(code, new_value, **kwargs)
    assert new == code[: loc.start] + str(new_value) + code[loc.end :]
    assert code[loc.start : loc.end] == loc.text == str(loc.value)
    assert len(as_python(code)) == len(code)
    units = code.encode("utf-16-le")
    assert units[2 * loc.start_utf16 : 2 * loc.end_utf16].decode("utf-16-le") == loc.text
    assert len(code[: loc.start].encode("utf-16-le")) == 2 * loc.start_utf16
    # Token streams equal but for one NUMBER token.
    before, after = tokens(code), tokens(new)
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    if new_value == loc.value:
        assert changed == []
    else:
        assert changed == [((tokenize.NUMBER, loc.text), (tokenize.NUMBER, str(new_value)))]
    # ASTs equal but for one Constant.
    old_tree, new_tree = parse(code), parse(new)
    pairs = zip(ast.walk(old_tree), ast.walk(new_tree), strict=True)
    constants = [a for a, b in pairs if isinstance(a, ast.Constant) and a.value != b.value]
    assert len(constants) == (new_value != loc.value)
    for node in constants:
        assert node.value == loc.value
        node.value = new_value
    assert ast.dump(old_tree) == ast.dump(new_tree)
    # The rewritten cell still locates the same literal, now holding the new value.
    again = find_batch_size_literal(new, **kwargs)
    assert (again.start, again.value, again.target) == (loc.start, new_value, loc.target)


@FUZZ
@given(data=st.data(), new_value=st.integers(1, 10**6))
def test_rewrite_changes_exactly_the_marked_literal_or_refuses(
    data: st.DataObject, new_value: int
) -> None:
    cell = data.draw(cells())
    marked = data.draw(with_line_endings(cell.marked))
    code = marked.replace("⟨", "").replace("⟩", "")
    if cell.target == "refuse":
        with pytest.raises(SourceEditRefused):
            rewrite_batch_size(code, new_value, **cell.kwargs)
        assert locate_for_edit(code, new_value, **cell.kwargs)["ok"] is False
        return
    loc = find_batch_size_literal(code, **cell.kwargs)
    assert (loc.start, loc.target) == (marked.index("⟨"), cell.target)
    check_edit_is_exactly_the_literal(code, new_value, **cell.kwargs)
    assert locate_for_edit(code, new_value, **cell.kwargs)["start"] == loc.start


@FUZZ
@given(data=st.data(), new_value=st.integers(1, 10**6))
def test_mutated_cells_are_rewritten_exactly_or_refused(
    data: st.DataObject, new_value: int
) -> None:
    cell = data.draw(cells())
    code = data.draw(with_line_endings(cell.marked.replace("⟨", "").replace("⟩", "")))
    junk = data.draw(
        st.text(
            st.characters(blacklist_categories=("Cs",)) | st.sampled_from("%!#'\"()\\\n\r "),
            max_size=8,
        )
    )
    at = data.draw(st.integers(0, len(code)))
    code = code[:at] + junk + code[at:]
    try:
        find_batch_size_literal(code, **cell.kwargs)
    except SourceEditRefused:
        assert locate_for_edit(code, new_value, **cell.kwargs)["ok"] is False
        return
    check_edit_is_exactly_the_literal(code, new_value, **cell.kwargs)
