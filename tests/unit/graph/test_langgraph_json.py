"""langgraph.json loads with LangGraph's own tooling: the CLI's config validation, then
the graph spec resolved the way the LangGraph server resolves ``./file.py:attr``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from langgraph.graph.state import CompiledStateGraph
from langgraph_cli.config import validate_config_file

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "langgraph.json"


def test_config_validates_with_langgraph_cli() -> None:
    config = validate_config_file(CONFIG)
    assert config["graphs"] == {"research": "./graph/builder.py:make_graph"}
    # Every file the config names must exist (an env file that is not there breaks
    # `langgraph up`, which hands it to docker compose).
    env = config.get("env")
    if isinstance(env, str):
        assert (ROOT / env).is_file(), f"langgraph.json names a missing env file: {env}"
    for dep in config["dependencies"]:
        assert (ROOT / dep).exists()


def test_graph_spec_resolves_to_the_research_graph() -> None:
    spec = validate_config_file(CONFIG)["graphs"]["research"]
    assert isinstance(spec, str)
    file_part, attr = spec.rsplit(":", 1)
    module_spec = importlib.util.spec_from_file_location("lg_research", ROOT / file_part)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    graph = getattr(module, attr)()
    assert isinstance(graph, CompiledStateGraph)
    assert set(graph.get_graph().nodes) >= {"round", "synthesize"}
    inside = {f"round:{n}" for n in ("plan", "execute", "fuse", "rerank", "assess")}
    assert set(graph.get_graph(xray=True).nodes) >= inside | {"synthesize"}
    # what /assistants/{id}/schemas serves: the run's context is plain data
    context = graph.get_context_jsonschema()
    assert context is not None and context["required"] == ["question"]
    assert set(context["properties"]) == {
        "question",
        "caller",
        "options",
        "run_id",
        "services",
        "review",
    }
    assert "result" in graph.get_output_jsonschema()["properties"]
    assert graph.get_input_jsonschema()["type"] == "object"
