"""The kernel side of the widget's requests (``skyline_nb.live``), without profiling.

Commands go through anywidget's own handler, as the front end's ``experimental.invoke`` sends
them; ``{"kind": ...}`` messages through ``LiveProfile``'s dispatcher. The names served are
exactly those of ``js/shared/protocol.js``, which both front-end bundles import.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skyline_nb.live import LiveProfile, SourceCell
from skyline_nb.request import ProfileRequest

PROTOCOL = Path(__file__).resolve().parents[2] / "js" / "shared" / "protocol.js"
PROVIDER = "def skyline_input_provider(batch_size=32):\n    return (batch_size,)\n"


def protocol_names(group: str) -> set[str]:
    """The string values of ``export const <group> = Object.freeze({...})`` in protocol.js."""
    block = re.search(rf"export const {group} = Object\.freeze\(\{{(.*?)\}}\);",
                      PROTOCOL.read_text(), re.DOTALL)
    assert block is not None, f"no {group} in {PROTOCOL}"
    return set(re.findall(r'^\s*\w+: "([^"]+)",?$', block.group(1), re.MULTILINE))


def failing_profile(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("the profiler was called")


@pytest.fixture
def live() -> Iterator[tuple[LiveProfile, list[dict[str, Any]]]]:
    """A live profile of a cell holding ``PROVIDER``; what its widget sends is recorded."""
    request = ProfileRequest(find=lambda: (print, print, print))
    profile = LiveProfile(request, SourceCell("cell-a", PROVIDER), failing_profile)
    sent: list[dict[str, Any]] = []
    profile.widget.send = lambda content, buffers=None: sent.append(content)
    try:
        yield profile, sent
    finally:
        profile.widget.close()


def invoke(profile: LiveProfile, sent: list[dict[str, Any]], name: str, msg: Any) -> Any:
    """Send a command as anywidget's front end does; return the response paired with it."""
    request_id = f"request-{len(sent)}"
    profile.widget._handle_custom_msg(
        {"kind": "anywidget-command", "id": request_id, "name": name, "msg": msg}, [])
    answers = [m for m in sent if m.get("id") == request_id]
    assert [a["kind"] for a in answers] == ["anywidget-command-response"]
    return answers[0]["response"]


def test_the_kernel_serves_exactly_the_protocol_names(live):
    profile, sent = live
    commands = protocol_names("COMMANDS")
    assert commands == {"ping", "locate"}
    for name in commands:
        assert isinstance(invoke(profile, sent, name, None), dict)
    assert set(profile._handlers) == protocol_names("MESSAGES") == {"reprofile", "measure"}
    assert profile.widget.error == ""  # a command is not mistaken for an unknown message


def test_ping_says_a_kernel_object_serves_the_widget(live):
    assert invoke(*live, "ping", None) == {"ok": True}


def test_locate_answers_the_edit_in_utf16_units_of_the_text_sent(live):
    typed = "# typed since it ran 🚀\n" + PROVIDER
    answer = invoke(*live, "locate", {"code": typed, "batch_size": 64})
    at = typed.index("32") + 1  # the rocket is two UTF-16 code units
    assert answer["ok"] is True
    assert answer["edit"] == {"start": at, "end": at + 2, "expected": "32", "text": "64"}


def test_locate_refusals_are_answers(live):
    twice = PROVIDER + PROVIDER.replace("32", "8")
    answer = invoke(*live, "locate", {"code": twice, "batch_size": 64})
    assert answer == {"ok": False, "reason": "ambiguous: `skyline_input_provider` is defined 2 "
                                             "times (lines 1, 3)"}
    for bad in (None, {"code": PROVIDER}, {"code": PROVIDER, "batch_size": True}):
        assert invoke(*live, "locate", bad)["ok"] is False


def test_kind_messages_start_work_and_show_its_errors(live):
    profile, sent = live
    profile.widget._handle_custom_msg({"kind": "reprofile"}, [])
    assert profile.widget.error.startswith("RuntimeError: the profiler was called")
    profile.widget.error = ""
    profile.widget._handle_custom_msg({"kind": "something else"}, [])
    assert (profile.widget.error, sent) == ("", [])
