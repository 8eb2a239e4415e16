"""Who made it: the name written after the asked participle and "by"."""

from __future__ import annotations

from graph.agent_answer import agent_answer, asked_agent
from graph.extractive import extractive_answer
from tools.evidence import Evidence, Provenance
from tools.testing import evidence


def ev(doc: str, title: str, text: str) -> Evidence:
    return evidence(doc, text, title=title)


def test_the_participle_is_read_from_an_agent_noun_or_the_question_itself() -> None:
    assert asked_agent("Who is the writer of Blue Water?") == "writ"
    assert asked_agent("Who was the director of Red Sky?") == "direct"
    assert asked_agent("Ann Lee starred in a movie directed by who?") == "directed"
    assert asked_agent("Who wrote Blue Water?") == "writ"
    assert asked_agent("Who founded Acme?") == "found"
    # a relation that is not a maker, or a cast role: not read this way
    assert asked_agent("Who is the spouse of the director of Red Sky?") is None
    assert asked_agent("Who played the nurse in Red Sky?") is None


def test_the_maker_of_the_work_the_question_reaches() -> None:
    lee = ev("lee", "Ann Lee", "Ann Lee is best known for her role as the nurse in Red Sky.")
    film = ev(
        "sky", "Red Sky", "Red Sky is a 2004 drama film directed by Bo Chen. It stars Ann Lee."
    ).model_copy(
        update={
            "provenance": [Provenance(round=2, tool="get_links", query="Red Sky", parent="lee#0")]
        }
    )
    other = ev("dawn", "Dawn", "Dawn is a 1999 film directed by Cy Park.")
    asked = "Ann Lee is best known for her role as the nurse in a movie directed by who?"
    found = agent_answer(asked, [lee, film, other])
    assert found is not None and found[0] == "Bo Chen" and found[1][0][0] == 2
    answer = extractive_answer(asked, [lee, film, other])
    assert answer.short_answer == "Bo Chen"


def test_two_makers_bound_as_well_are_no_answer() -> None:
    pages = [
        ev("a", "Blue Water (song)", "Blue Water is a song written by Ann Lee."),
        ev("b", "Blue Water (poem)", "Blue Water is a poem written by Bo Chen."),
    ]
    assert agent_answer("Who is the writer of Blue Water?", pages) is None
    # a name the question itself gives is not the one it asks for
    pages = [ev("a", "Blue Water", "Blue Water, written by Ann Lee, was recorded by Bo Chen.")]
    assert agent_answer("Who is the writer of Blue Water, the song Ann Lee made?", pages) is None
