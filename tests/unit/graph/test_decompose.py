"""Rule-based decomposition: the innermost description of a composed question, its bridge
entity read off the passages found for it, and the shorter question that results."""

from __future__ import annotations

from pathlib import Path

from graph.models import Caller, RunOptions
from graph.policies.decompose import candidates, innermost
from graph.runner import Researcher
from tools.testing import MemoryStore, evidence, memory_search, passage
from tools.titles import TitleIndex


def test_a_relative_clause_is_the_first_hop_and_its_answer_shortens_the_question() -> None:
    sub = innermost("What is the seat of the county where Van Hook Township is located?", None)
    assert sub is not None
    assert sub.query == "county where Van Hook Township is located"
    assert sub.head == "county"
    assert sub.substitute("Mountrail County") == "What is the seat of Mountrail County?"


def test_the_innermost_of_nested_descriptions_comes_first() -> None:
    q = "Who is the sibling of the actress who played Susan Walker in Miracle on 34th Street?"
    sub = innermost(q, None)
    assert sub is not None
    assert sub.query == "actress who played Susan Walker in Miracle on 34th Street"
    assert sub.wants_person
    assert sub.substitute("Natalie Wood") == "Who is the sibling of Natalie Wood?"


def test_a_possessive_is_a_description() -> None:
    sub = innermost("Who is the father of Empress Wang's husband?", None)
    assert sub is not None
    assert sub.text == "Empress Wang's husband"
    assert sub.substitute("Yang Pu") == "Who is the father of Yang Pu?"


def test_the_outer_verb_stays_outside_the_description() -> None:
    sub = innermost("What recognition did the actor of Truman Capote from Capote receive?", None)
    assert sub is not None
    assert sub.substitute("Philip Seymour Hoffman") == (
        "What recognition did Philip Seymour Hoffman receive?"
    )


def test_a_chain_of_descriptions_unwinds_one_hop_at_a_time() -> None:
    q = (
        "What is the capital of the province that borders the province whose capital is "
        "the birthplace of Ana Lind?"
    )
    first = innermost(q, None)
    assert first is not None and first.query == "birthplace of Ana Lind"
    second = innermost(first.substitute("Harbourton"), None)
    assert second is not None and second.query == "province whose capital is Harbourton"
    third = innermost(second.substitute("North Province"), None)
    assert third is not None
    assert third.substitute("East Province") == "What is the capital of East Province?"


def test_a_one_hop_question_has_no_sub_question() -> None:
    assert innermost("Who is the author of Hamlet?", None) is None
    assert innermost("How many replicas does the ledger-service cluster have?", None) is None


def test_the_bridge_is_the_name_of_the_kind_asked_for_next_to_the_descriptions_words() -> None:
    sub = innermost("What is the seat of the county where Van Hook Township is located?", None)
    assert sub is not None
    page = evidence(
        "Van Hook Township",
        "Van Hook Township is a township in Mountrail County, North Dakota, United States.",
    )
    assert candidates(sub, [page], None, 1)[0][0] == "Mountrail County"


def test_a_person_is_read_off_for_a_description_of_a_person() -> None:
    sub = innermost("Who is the employer of the physicist who Mach number is named after?", None)
    assert sub is not None
    page = evidence(
        "Mach number",
        "The Mach number is named after Austrian physicist and philosopher Ernst Mach, and is "
        "a designation proposed by aeronautical engineer Jakob Ackeret.",
    )
    names = [n for n, _ in candidates(sub, [page], None, 2)]
    assert names[0] == "Ernst Mach"


def test_field_labels_and_the_questions_own_names_are_not_bridges() -> None:
    sub = innermost("Who leads the team that owns the repository defining the FLAG_X flag?", None)
    assert sub is not None
    page = evidence(
        "eta-predictor",
        "| Variable | Default | Meaning |\n|---|---|---|\n| FLAG_X | v13 | the model served |",
    )
    names = [n for n, _ in candidates(sub, [page], TitleIndex(["eta-predictor"]), 3)]
    assert names and names[0] == "eta-predictor"
    assert "Meaning" not in names and "Default" not in names and "FLAG_X" not in names


async def test_the_rule_policy_searches_the_question_rewritten_with_the_bridge(
    tmp_path: Path,
) -> None:
    store = MemoryStore(
        [
            passage("lake", "Copake Lake", "Copake Lake is a lake in Columbia County, New York."),
            passage(
                "columbia",
                "Columbia County, New York",
                "Columbia County is a county in the state of New York. Its seat is Hudson.",
            ),
            passage("noise", "Cafeteria", "The cafeteria opens at eight."),
        ]
    )
    r = Researcher(store, checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search)
    try:
        result = await r.run(
            "What is the seat of the county where Copake Lake is located?",
            Caller(),
            RunOptions(mode="iterative"),
        )
        trace = r.get_trace(result.run_id)
    finally:
        r.close()
    searches = [q for kind, q in store.calls if kind == "search"]
    assert "county where Copake Lake is located" in searches
    # The rewritten question's dense leg starts from what the question asks of the
    # description's answer (embedded in the first round's batch), moved toward the
    # passage the bridge entity was read off: the second round embeds nothing.
    rewritten = [
        e.data["args"]
        for e in trace
        if e.type == "tool_call"
        and e.data["tool"] == "search_knowledge"
        and e.data["args"]["query"].startswith("What is the seat of Columbia")
    ]
    assert rewritten and rewritten[0]["dense_query"] == "What is the seat of ?"
    # Round one's question search looks near the question's two parts (embedded for the
    # first hop's search and the next hop anyway), not near the whole question.
    question_call = next(e.data["args"] for e in trace if e.type == "tool_call" and e.round == 1)
    assert question_call["query"].startswith("What is the seat of the county")
    assert question_call["dense_parts"] == [
        "county where Copake Lake is located",
        "What is the seat of ?",
    ]
    assert rewritten[0]["feedback"] == ["wiki:lake#0"]
    assert any(q.startswith("What is the seat of Columbia County") for q in searches)
    assert {"wiki:lake", "wiki:columbia"} <= {e.doc_id for e in result.evidence}
    # Provenance tells the rewritten question's hits from the sub-question's (ranking
    # scores the former as direct hits for the question).
    provenance = [p for e in result.evidence for p in e.provenance]
    assert any(p.rewrite and p.query.startswith("What is the seat of Columbia") for p in provenance)
    assert not any(p.rewrite for p in provenance if p.parent is None)


def test_a_passage_about_something_else_is_a_weaker_lead() -> None:
    sub = innermost("Which team does the incident commander of INC-31 belong to?", None)
    assert sub is not None
    other = evidence(
        "Postmortem INC-44", "Incident commander: Gideon Mensah. Root cause: a backlog."
    )
    right = evidence("Postmortem INC-31", "INC-31 was led by incident commander Nora Lindgren.")
    names = [n for n, _ in candidates(sub, [other, right], None, 2)]
    assert names[0] == "Nora Lindgren"
