from __future__ import annotations

import pytest

from graph.measures import group_size, length_m, per_year, span_s


@pytest.mark.parametrize(
    ("text", "metres"),
    [
        ("The North Tower is a 650 ft office building.", 198.12),
        ("It stands 8,035 m above sea level.", 8035.0),
        ("a 348-foot tower on Broadway", 106.07),
        ("The canal is 12 kilometres long.", 12000.0),
        ("The app has 5 million users.", None),  # a count, not a size
        ("Version 3 was released in 2020.", None),
    ],
)
def test_length_is_read_with_its_unit(text: str, metres: float | None) -> None:
    got = length_m(text)
    assert got == pytest.approx(metres, abs=0.01) if metres is not None else got is None


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("- Duration: 5 hours 20 minutes of delayed updates", 5 + 20 / 60),
        ("- Duration: 47 minutes (10:05 to 10:52 CET)", 47 / 60),
        ("The strike lasted three days.", 72.0),
        ("fought from 19 September to 16 December 1944", 88 * 24.0),
        ("lasting from August 4 to September 18, 1950.", 45 * 24.0),
        ("from 28 December to 3 January 1945", 6 * 24.0),  # across the new year
        ("He was away for a while.", None),
    ],
)
def test_span_is_read_written_out_or_from_a_dated_range(text: str, hours: float | None) -> None:
    got = span_s(text)
    assert got == pytest.approx(hours * 3600) if hours is not None else got is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("Lanterns are an English rock duo formed in Leeds.", 2),
        ("Tide Pool are a four-piece band from Cork.", 4),
        ("The Owls are a three-person folk group.", 3),
        (
            "# Data team\n\nRuns the lakehouse.\n\n## People\n\n- Kenji: lead\n- Clara\n\n"
            "## Services\n\n- x",
            2,
        ),
        ("The Owls are a folk group from Cork.", None),
        # a line-up written out: each item names someone, roles aside
        (
            "Gulls are a rock band. It consists of singer Ann Lee, guitarist Bo Chen, "
            "and drummer Cy Park.",
            3,
        ),
        ('Gulls were a band consisting of Ann "Lee" Ray (vocals and guitar) and Bo (bass).', 2),
        ("The church consists of a nave and a chancel.", None),
    ],
)
def test_group_size_from_a_group_word_or_a_people_list(text: str, size: int | None) -> None:
    assert group_size(text) == size


@pytest.mark.parametrize(
    ("text", "times"),
    [
        ("Pulse is an American biweekly magazine.", 26.0),
        ("Field Notes is a bi-monthly magazine.", 6.0),
        ("The digest is published twice monthly.", 24.0),
        ("The export job runs nightly.", 365.0),
        # a frequency in another title's name, then what it changed from: neither
        ('Based on "Weekly Pulse", it changed from a weekly to a monthly issue.', 12.0),
        ("Pulse is a magazine.", None),
    ],
)
def test_how_often_per_year(text: str, times: float | None) -> None:
    assert per_year(text) == times
