"""pi/* params and initializationOptions: msgspec Structs, -32602 naming the field, pydantic never loaded."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_server.server import errors, methods, params, rpc
from pi_server.server.base import ServerOptions
from pi_server.server.options import resolve

METHOD_MODULES = [f"{methods.__name__}.{m.name}" for m in pkgutil.iter_modules(methods.__path__)]
for _name in METHOD_MODULES:
    importlib.import_module(_name)  # importing a method module registers its methods in rpc.PI_METHODS


def refused(model: type[params.Params], raw: Any) -> str:
    with pytest.raises(errors.InvalidParams) as e:
        rpc.parse(model, raw)
    assert e.value.code == -32602 and e.value.data == {"kind": "InvalidParams"}
    return e.value.message


def test_a_bad_param_is_named_with_its_reason() -> None:
    assert refused(params.GetTree, {}) == "invalid params: session: field required"
    assert refused(params.GetTree, {"session": "s", "filter": "nope"}) == (
        "invalid params: filter: invalid enum value 'nope' (one of default, no-tools, user-only, labeled-only, all)"
    )
    assert refused(params.GetTree, {"session": "s", "limit": -1}) == "invalid params: limit: expected int >= 0"
    assert refused(params.GetTree, {"session": "s", "folded": "a"}) == "invalid params: folded: expected array, got str"
    assert refused(params.SwitchBranch, {"session": "s"}) == "invalid params: targetId: field required"
    image = {"text": "t", "images": [{"data": "d"}]}
    assert refused(params.Prompt, image) == "invalid params: images.0.mimeType: field required"
    assert refused(params.GetTree, ["s"]) == "invalid params: expected an object"


def test_omitted_null_and_given_stay_distinct() -> None:
    assert rpc.parse(params.BuildContext, {"session": "s"}).leafId is params.UNSET
    assert rpc.parse(params.BuildContext, {"session": "s", "leafId": None}).leafId is None
    assert rpc.parse(params.BuildContext, {"session": "s", "leafId": "ab12"}).leafId == "ab12"
    assert rpc.parse(params.SummarizeBranch, {"session": "s", "targetId": None}).fromId is params.UNSET
    tree = rpc.parse(params.GetTree, {"session": "s", "somethingNew": 1})  # unknown fields are ignored
    assert (tree.filter, tree.folded, tree.offset, tree.limit, tree.search) == ("default", [], 0, None, None)
    assert rpc.parse(params.ListSessions, None) == params.ListSessions()


def test_numbers_and_booleans_as_strings_are_taken_nothing_else_is_converted() -> None:
    p = rpc.parse(params.GetTree, {"session": "s", "limit": "200", "offset": 3.0})
    assert (p.limit, p.offset) == (200, 3)
    assert rpc.parse(params.SwitchBranch, {"session": "s", "targetId": "x", "summarize": "true"}).summarize is True
    assert "limit" in refused(params.GetTree, {"session": "s", "limit": True})
    assert "session" in refused(params.GetTree, {"session": 5})
    assert "summarize" in refused(params.SwitchBranch, {"session": "s", "targetId": "x", "summarize": "yes"})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def field_values() -> st.SearchStrategy[dict[str, Any]]:
    names = ["session", "leafId", "targetId", "fromId", "filter", "format", "limit", "offset", "folded", "text"]
    names += ["images", "level", "replacement", "summarize", "id", "name", "provider", "modelId", "cwd"]
    return st.dictionaries(st.sampled_from(names), json_values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(sorted(rpc.PI_METHODS)), raw=field_values())
def test_any_json_is_a_struct_or_invalid_params_never_another_error(method: str, raw: dict[str, Any]) -> None:
    model = rpc.PI_METHODS[method][1]
    try:
        assert isinstance(rpc.parse(model, raw), model)
    except errors.InvalidParams as e:
        assert e.message.startswith("invalid params: ")


def test_a_bad_option_names_its_path_and_only_it_falls_back() -> None:
    raw = {
        "compaction": {"reserveTokens": 9, "modelOverrides": {"anthropic/x": {"keepRecentTokens": -1}}},
        "agent": {"maxRetries": "2"},
        "summary": {"model": "m", "timeout": 0},
    }
    opts, problems = resolve(raw, ServerOptions())
    assert problems == [
        "initializationOptions.compaction.modelOverrides.*.keepRecentTokens: expected int >= 0; using the default",
        "initializationOptions.summary.timeout: expected float > 0.0; using the default",
    ]
    assert opts.agent.max_retries == 2 and opts.compaction.reserve_tokens is None and opts.summary.model is None
    good, none = resolve({"compaction": {"modelOverrides": {"anthropic/x": {"reserveTokens": 7}}}}, ServerOptions())
    assert none == [] and good.compaction.for_model("anthropic", "x") == (7, 20000)


def test_serving_pi_methods_loads_neither_pydantic_nor_the_sdk() -> None:
    code = "import importlib, sys, pi_server.server.app, pi_server.server.options\n"
    code += f"for m in {METHOD_MODULES!r}: importlib.import_module(m)\n"
    code += "print(sorted(m for m in ('pydantic', 'anthropic', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
