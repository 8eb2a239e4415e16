"""Answers read off labelled lines: a field whose label is what the question asks."""

from __future__ import annotations

from datetime import UTC, datetime

from graph.extractive import extractive_answer
from tools.evidence import Evidence
from tools.testing import evidence


def ev(doc: str, title: str, text: str, year: int = 2026) -> Evidence:
    return evidence(doc, text).model_copy(
        update={"title": title, "timestamp": datetime(year, 1, 1, tzinfo=UTC)}
    )


def test_a_field_whose_label_the_question_abbreviates() -> None:
    page = ev(
        "overview",
        "Northwind company overview",
        "Leadership\n\n- Chief Executive Officer: Ann Lee\n- Chief Technology Officer: Bo Chen",
    )
    answer = extractive_answer("Who is the CTO of Northwind?", [page])
    assert answer.short_answer == "Bo Chen"
    assert answer.text.endswith("[1]") and "Ann Lee" not in answer.text


def test_one_field_of_a_ticket_line_and_a_name_labelling_its_role() -> None:
    ticket = ev(
        "OPS-9",
        "OPS-9: rotate the relay certificate",
        "OPS-9: rotate the relay certificate\n\n"
        "Status: In Progress | Priority: High | Assignee: Rui Sousa | Reporter: Ann Lee",
    )
    assert extractive_answer("Who is assigned OPS-9?", [ticket]).short_answer == "Rui Sousa"
    team = ev(
        "platform",
        "Platform team",
        "People\n\n- **Marcus Hale**: team lead, Rotterdam\n- Nora Lind: site reliability engineer",
    )
    lead = extractive_answer("Who is the team lead of the Platform team?", [team])
    assert lead.short_answer == "Marcus Hale"


def test_the_newer_document_wins_and_an_open_rival_decides_nothing() -> None:
    old = ev(
        "policy-v1", "On-call policy", "Compensation\n\n- On-call stipend: €150 per week.", 2024
    )
    new = ev(
        "policy-v2", "On-call policy", "Compensation\n\n- On-call stipend: €250 per week.", 2025
    )
    got = extractive_answer("What is the weekly on-call stipend?", [old, new])
    assert got.short_answer == "€250"
    # two pages of one date that disagree: no value is stated as the answer
    rival = ev(
        "policy-v3", "On-call policy", "Compensation\n\n- On-call stipend: €300 per week.", 2025
    )
    assert (
        extractive_answer("What is the weekly on-call stipend?", [new, rival]).short_answer is None
    )


def test_a_field_value_of_another_type_is_not_the_answer() -> None:
    ticket = ev("OPS-9", "OPS-9", "OPS-9\n\nStatus: In Progress | Assignee: unassigned")
    assert extractive_answer("Who is assigned OPS-9?", [ticket]).short_answer is None


def test_which_kind_reads_the_kind_noun_only_and_a_field_naming_one() -> None:
    page = ev(
        "svc",
        "ledger-service",
        "ledger-service\n\n## Ownership\n\n- Owning team: **Payments team**\n- Tier: 1",
    )
    # "owns" governs the service's name: it is the verb, not part of the kind asked for
    got = extractive_answer("Which team owns ledger-service?", [page])
    assert got.short_answer == "Payments team"


def test_the_name_apposed_to_the_asked_kind() -> None:
    pm = ev(
        "pm",
        "Postmortem INC-7: EDI backlog",
        "Root cause\n\nThe carrier Nordlys Cargo rotated the password of the SFTP account "
        "without telling us. The sync service logged failures.",
    )
    got = extractive_answer("Which carrier rotated its SFTP password before INC-7?", [pm])
    assert got.short_answer == "Nordlys Cargo"
    # two sentences as well bound that name different carriers: not determined
    rival = ev(
        "pm2",
        "Postmortem INC-7: EDI backlog",
        "Root cause\n\nThe carrier Baltic Freight rotated the password of the SFTP account "
        "without telling us.",
    )
    assert (
        extractive_answer(
            "Which carrier rotated its SFTP password before INC-7?", [pm, rival]
        ).short_answer
        is None
    )


def test_a_name_described_in_the_questions_words_or_written_before_its_kind() -> None:
    """ "run `nwr-boot`, the laptop setup tool": the name a description in the question's
    own words follows; "request the lake-readers group": the identifier before the kind."""
    page = ev(
        "onboarding",
        "Engineering onboarding",
        "Day one\n\nCollect your laptop from IT and run `nwr-boot`, the laptop setup tool. "
        "It installs the toolchain.",
    )
    got = extractive_answer(
        "What is the name of the laptop setup tool new engineers run on day one?", [page]
    )
    assert got.short_answer == "nwr-boot"
    access = ev(
        "help",
        "eng-help",
        "Open an IT access request for the lake-readers group; Kenji approves those.",
    )
    got = extractive_answer("Which group do I request to get read access to the lake?", [access])
    assert got.short_answer == "lake-readers"
    # a hyphenated adjective before the kind describes it, it does not name it
    season = ev(
        "idol",
        "Idol season three",
        "Idol opened the highest-rated season of the network with its third season run.",
    )
    assert (
        extractive_answer("Which season of the network did Idol open?", [season]).short_answer
        is None
    )
    runner = ev("ci", "CI", "Builds run on the cloud-based runner from the platform team.")
    assert extractive_answer("Which runner do builds run on?", [runner]).short_answer is None


def test_a_field_labelled_with_the_asked_kind_names_its_member() -> None:
    team = ev(
        "platform",
        "Platform team",
        "How to reach us\n\n- Slack: #team-platform\n- PagerDuty schedule: `platform-primary`",
    )
    got = extractive_answer("Which PagerDuty schedule does the Platform team use?", [team])
    assert got.short_answer == "platform-primary"
    # a field that names nothing yet is no answer
    unset = ev("platform", "Platform team", "How to reach us\n\n- PagerDuty schedule: TBD")
    got = extractive_answer("Which PagerDuty schedule does the Platform team use?", [unset])
    assert got.short_answer is None


def test_a_two_column_table_row_is_a_field() -> None:
    # a directive's quick-reference table: a label cell, then its value cell
    entry = ev(
        "setenvif",
        "Apache Module mod_setenvif",
        "SetEnvIfExpr Directive\n\nDescription: | Sets environment variables based on an "
        "expression\nSyntax: | SetEnvIfExpr expr [!]env-variable[=value]\n"
        "Context: | server config, virtual host\nStatus: | Base\nModule: | mod_setenvif",
    )
    got = extractive_answer("SetEnvIfExpr - what module is that in", [entry])
    assert got.short_answer == "mod_setenvif"
