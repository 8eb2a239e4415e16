"""A sentence read in its own scope: the entry it sits under, not the whole passage."""

from __future__ import annotations

import pytest

from graph.claims import check_answer
from graph.extractive import extractive_answer
from graph.measures import quantity
from graph.statements import (
    asked_platform,
    asks_before,
    assigned_value,
    carried_labels,
    change_of,
    counted_noun,
    labels_another,
    release_notes,
    scoped,
    statements,
    table_value,
    value_kind,
    values_in,
)
from graph.text import acronyms, stem
from retrieval.search_models import Locator
from tools.evidence import Evidence, Provenance
from tools.testing import evidence


def ev(doc: str, title: str, text: str) -> Evidence:
    return evidence(doc, text).model_copy(update={"title": title})


# A reference page: one entry per setting, each under its own label line.
SETTINGS = ev(
    "runtime-config",
    "Server Configuration",
    "max_wal_size (integer)\n\n"
    "Maximum size to let the WAL grow during automatic checkpoints. "
    "The default is 1024 megabytes.\n\n"
    "checkpoint_timeout (integer)\n\n"
    "Maximum time between automatic WAL checkpoints. The default is 300 seconds.\n\n"
    "port (integer)\n\n"
    "The TCP port the server listens on; 5432 by default.",
)


def test_a_sentence_belongs_to_the_label_above_it() -> None:
    rows = {sent: label for sent, label, _ in scoped(SETTINGS.text)}
    assert rows["The default is 300 seconds."] == "checkpoint_timeout (integer)"
    assert rows["The default is 1024 megabytes."] == "max_wal_size (integer)"


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("what is the default checkpoint_timeout?", "300 seconds"),
        ("how long is checkpoint_timeout by default?", "300 seconds"),
        ("what port does the server listen on by default?", "5432"),
    ],
)
def test_the_value_stated_under_the_asked_setting(question: str, value: str) -> None:
    answer = extractive_answer(question, [SETTINGS])
    assert answer.answerable
    assert value in answer.text
    # the neighbouring setting's default is not the answer
    assert "1024" not in answer.text


# An attribute's entry: its default is that attribute's, whatever else its words say.
REPR = ev(
    "reprlib",
    "reprlib - Alternate repr() implementation",
    "Repr.maxlevel\n\nDepth limit on the creation of recursive representations. The default is 6.",
)


def test_a_code_entrys_default_answers_only_a_question_about_that_code() -> None:
    # the question describes another thing in words that overlap the entry's description
    unrelated = extractive_answer("what's python's default recursion limit?", [REPR])
    assert "6" not in unrelated.text
    assert not unrelated.answerable
    # words that name a part of the entry's code name ask about it
    asked = extractive_answer("what is the default level limit of repr objects?", [REPR])
    assert asked.answerable
    assert "The default is 6." in asked.text


def test_a_neighbouring_settings_value_is_not_stated_for_another() -> None:
    found = statements("what is the default for max_wal_size?", [SETTINGS])
    assert found
    assert found[0].sentence == "The default is 1024 megabytes."


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("when was tomllib added?", "date"),
        ("which version introduced itertools.pairwise?", "date"),
        ("how many replicas does the ledger run?", "number"),
        ("how long does connect wait before giving up?", "duration"),
        ("how often does the interpreter switch threads?", "duration"),
        ("what is the default for dirs_exist_ok?", "literal"),
        ("who leads the payments team?", None),
        ("is the ledger older than the gateway?", None),
        # a bound asked for is a number; "the most popular" is not a bound
        ("what is the maximum size of a webhook body?", "number"),
        ("what's the most worker processes a pool can have?", "number"),
        ("what is the most popular client library?", None),
        # a search-box query that ends where the date would stand
        ("contextlib.chdir added in", "date"),
        # "how long can X be" asks a length, "how long does X wait" a time
        ("how long can the archive comment be?", "number"),
        ("how long does the client wait before giving up?", "duration"),
        # a superlative of a measure asks a bound; of a thing, a name
        ("what's the smallest nonzero stack size it will accept?", "number"),
        ("who was the longest lived queen?", None),
        # a search-box query names the asked measure last
        ("base64.encodebytes line length", "number"),
        ("base64.encodebytes length of lines", None),
        ("asyncio.timeout new in?", "date"),
        ("which modules were added in the standard library", None),
        # "release" the noun asks a release, the verb does not
        ("which release added mod_brotli?", "date"),
        ("command to release stale slot locks in dock-scheduler", None),
        ("how do i release a lock held by a dead worker?", None),
    ],
)
def test_value_kind(question: str, kind: str | None) -> None:
    assert value_kind(question) == kind


def test_values_of_the_asked_type_only() -> None:
    assert values_in("Default five seconds.", "duration", "how long?") == ("five seconds",)
    assert values_in("New in version 3.10.", "date", "when was it added?") == ("3.10",)
    # a release number is not a quantity; a number the question holds is not an answer
    assert values_in("New in version 3.10.", "number", "how many?") == ()
    assert values_in("Use 2 or 3 workers.", "number", "are 2 workers enough?") == ("3",)
    assert values_in("It is False unless set.", "literal", "what default?") == ("False",)
    # true / false / one in prose are no values; written as a value, they are
    assert values_in("This need not hold true for extensions.", "literal", "what default?") == ()
    assert values_in("Return a true value on success.", "literal", "what default?") == ()
    assert values_in("It is generally one higher.", "literal", "what default?") == ()
    assert values_in("strict defaults to false.", "literal", "what default?") == ("false",)
    assert values_in("enabled: true", "literal", "what default?") == ("true",)


def test_a_signature_assigns_the_default() -> None:
    page = ev(
        "shutil",
        "shutil",
        "shutil.copytree(src, dst, symlinks=False, dirs_exist_ok=False)\n\n"
        "Recursively copy an entire directory tree.",
    )
    found = assigned_value("what's the default for dirs_exist_ok in shutil.copytree?", [page])
    assert found is not None
    assert found[2] == "False"
    answer = extractive_answer("what's the default for dirs_exist_ok in shutil.copytree?", [page])
    assert answer.short_answer == "False"


def test_assignments_that_disagree_decide_nothing() -> None:
    a = ev("a", "a", "open(path, buffering=-1)")
    b = ev("b", "b", "Popen(args, buffering=0)")
    assert assigned_value("what is the default buffering?", [a, b]) is None


def test_a_release_note_under_another_entry_is_not_the_answer() -> None:
    page = ev(
        "itertools",
        "itertools",
        "itertools.pairwise(iterable)\n\nReturn successive overlapping pairs.\n\n"
        "New in version 3.10.\n\n"
        "itertools.permutations(iterable, r=None)\n\nReturn successive permutations.\n\n"
        "New in version 3.1.",
    )
    answer = extractive_answer("which version introduced itertools.pairwise?", [page])
    assert answer.short_answer == "3.10"


def test_a_release_note_about_something_else_or_paragraphs_away_dates_nothing() -> None:
    # the note's clause names what it dates: the fold argument, not the module asked about
    page = ev(
        "tz",
        "zones — time zones",
        "zones.shift(dt)\n\nShifts a datetime.\n\nNew in version 3.6: Added the fold argument.",
    )
    answer = extractive_answer("when was zones added?", [page])
    assert answer.short_answer is None and "3.6" not in answer.text
    # a bare note closes the entry just above it; the asked name three paragraphs up is
    # not that entry
    text = "A Batcher groups calls into one.\n\nThe loop runs them in turn.\n\n"
    far = ev("tasks", "asyncio tasks", text + "Errors are raised together.\n\nNew in version 2.7.")
    assert extractive_answer("when did asyncio get Batcher?", [far]).short_answer is None
    near = ev("tasks", "asyncio tasks", "A Batcher groups calls into one.\n\nNew in version 2.9.")
    assert extractive_answer("when did asyncio get Batcher?", [near]).short_answer == "2.9"


def test_a_count_is_read_with_the_counted_noun_and_a_newer_policy_wins() -> None:
    old = ev(
        "policy-v1", "On-call policy v1", "- SEV1 pages must be acknowledged within 30 minutes."
    )
    new = ev(
        "policy-v2", "On-call policy v2", "- SEV1 pages must be acknowledged within 5 minutes."
    )
    old = old.model_copy(update={"timestamp": old.timestamp.replace(year=2024)})
    new = new.model_copy(update={"timestamp": new.timestamp.replace(year=2026)})
    answer = extractive_answer(
        "Within how many minutes must a SEV1 page be acknowledged?", [old, new]
    )
    assert answer.short_answer == "5 minutes"
    assert "30 minutes" not in answer.text


def test_a_number_that_counts_something_else_is_not_the_count() -> None:
    page = ev("bank", "Bank", "The bank bought its rival for $47 billion in cash and stock.")
    answer = extractive_answer("How many ATMs does the bank that bought its rival have?", [page])
    assert answer.short_answer is None


BANDS = ev(
    "bands",
    "Compensation bands",
    "Annual base salary bands.\n\n"
    "| Level | Title | Band | Midpoint |\n|---|---|---|---|\n"
    "| L3 | Software Engineer | €52,000 to €66,000 | €59,000 |\n"
    "| L4 | Software Engineer II | €68,000 to €86,000 | €77,000 |",
)


def test_a_table_answers_by_the_named_row_and_the_compounds_head_column() -> None:
    found = table_value("What is the salary band midpoint for an L4 engineer?", [BANDS])
    assert found is not None
    n, said, value = found
    assert (n, value) == (1, "€77,000")
    assert "Level: L4" in said
    # "band" alone names the band column
    found = table_value("What is the salary band for L3?", [BANDS])
    assert found is not None and found[2] == "€52,000 to €66,000"


QUESTION_L4 = "What is the salary band midpoint for an L4 engineer?"


def test_a_table_answer_is_cited_and_passes_the_claim_check() -> None:
    answer = extractive_answer(QUESTION_L4, [BANDS])
    assert answer.short_answer == "€77,000"
    checked = check_answer(answer.text, [BANDS], {BANDS.id}, QUESTION_L4)
    assert checked.claims and all(c.supported for c in checked.claims)


def test_a_table_without_the_named_row_decides_nothing() -> None:
    assert table_value("What is the salary band midpoint for an L9 engineer?", [BANDS]) is None


def test_a_value_question_without_a_stated_value_is_refused_naming_what_is_missing() -> None:
    page = ev(
        "scheduler",
        "Scheduler",
        "sync-scheduler (service)\n\nThe sync-scheduler switches between workers by default "
        "and returns the current switch interval on request.",
    )
    answer = extractive_answer("how often does sync-scheduler switch workers by default?", [page])
    assert not answer.answerable
    assert "the duration asked for (sync-scheduler)" in answer.text
    stated = page.model_copy(
        update={"text": page.text + " It switches every 5 milliseconds by default."}
    )
    answer = extractive_answer("how often does sync-scheduler switch workers by default?", [stated])
    assert answer.answerable
    assert "5 milliseconds" in answer.text


def test_an_acronym_in_the_question_meets_the_name_it_abbreviates() -> None:
    assert "cto" in acronyms("- Chief Technology Officer: Sofia Marchetti")
    assert acronyms("The Site Reliability Engineering group") == {"sre"}
    page = ev(
        "overview",
        "Northwind company overview",
        "Leadership\n\n- Chief Executive Officer: Ann Lee\n- Chief Technology Officer: Bo Chen",
    )
    answer = extractive_answer("Who is the CTO of Northwind?", [page])
    assert answer.answerable and "Bo Chen" in answer.text and "Ann Lee" not in answer.text


def test_a_bound_a_value_must_keep_is_not_the_value() -> None:
    from graph.statements import values_in

    sentence = "The size must be 0 (use the default) or at least 32,768 (32 KiB); up to 8 threads."
    # asked for the value: the bounds are not it, nor what a caller must pass
    assert values_in(sentence, "number", "how much stack does a thread get by default?") == ()
    assert values_in("It is 4 unless set.", "number", "how many threads by default?") == ("4",)
    # asked for a bound: they are
    got = values_in(sentence, "number", "what is the minimum stack size?")
    assert "32,768" in got and "8" in got
    most = "what's the most workers a pool can have?"
    assert values_in("It must be less than or equal to 61.", "number", most) == ("61",)
    # a bound written as a symbol or a comparison, a few words after the bound's noun
    for bound in (
        "requiring a minimum stack size > 32 KiB",
        "with more than 64 threads",
        "it must be less than or equal to 61",
    ):
        assert values_in(bound, "number", "how much stack does a thread get by default?") == ()


def test_a_code_name_of_the_asked_thing_is_not_its_value() -> None:
    from graph.statements import values_in

    question = "what's python's default recursion limit?"
    sentence = "The maxlevels parameter defaults to sys.getrecursionlimit()."
    assert values_in(sentence, "literal", question) == ()
    protocol = "what pickle protocol is used by default?"
    assert values_in("pickle.DEFAULT_PROTOCOL is now used.", "literal", protocol) == ()
    # another code name is a value
    assert values_in(
        "It defaults to QUOTE_MINIMAL.", "literal", "what quoting is the default?"
    ) == ("QUOTE_MINIMAL",)


def test_a_number_counting_another_noun_is_no_count_of_the_asked_one() -> None:
    from graph.statements import counted_noun, counts_another

    assert counted_noun("how many bytes does token_hex use?") == "byte"
    sentence = "The string has nbytes random bytes, each byte converted to two hex digits."
    assert counts_another("two", sentence, "byte")
    # a bare number, or one before the counted noun, may be the count
    assert not counts_another("128", "It keeps its default value of 128.", "call")
    assert not counts_another("32", "It returns 32 bytes by default.", "byte")
    assert not counts_another("8", "The pool starts 8 and stops.", "worker")  # a stopword after


def test_a_number_after_the_word_the_question_numbers_is_a_qualifier() -> None:
    from graph.statements import values_in

    sentence = "Currently the default protocol is 4, first introduced in python 3.4."
    question = "what pickle protocol does python 3.11 use by default?"
    assert values_in(sentence, "literal", question) == ("4",)
    assert values_in(sentence, "literal", "what protocol is the default?") == ("4", "3.4")


def test_a_release_note_answers_only_the_event_it_notes() -> None:
    from graph.statements import release_notes, values_in

    arrival = "New in version 3.2."
    assert release_notes(arrival, "when was it added?") == ["3.2"]
    assert release_notes(arrival, "which release removes the gil?") == []
    deprecated = "Deprecated since version 3.4, will be removed in version 3.12: use spec."
    assert release_notes(deprecated, "when was imp added?") == []
    assert release_notes(deprecated, "when was imp deprecated?") == ["3.4"]
    assert values_in(deprecated, "date", "which python release removes imp?") == ("3.12",)


def test_a_number_right_after_a_name_designates_a_release() -> None:
    from graph.statements import values_in

    sentence = "It requires both Linux 3.17 or newer and 8 threads."
    assert values_in(sentence, "number", "how much stack does a thread get on linux?") == ("8",)


def test_a_value_in_an_unless_clause_is_the_exception_not_the_default() -> None:
    from graph.statements import values_in

    question = "what quoting does the writer use unless told otherwise?"
    unless = "No conversion is performed unless the QUOTE_NONNUMERIC option is specified."
    assert values_in(unless, "literal", question) == ()
    after = "Unless told otherwise, it quotes with QUOTE_MINIMAL."
    assert values_in(after, "literal", question) == ("QUOTE_MINIMAL",)
    # a condition that opens after a comma is one too
    late = "It quotes with QUOTE_MINIMAL, unless QUOTE_NONNUMERIC is given."
    assert values_in(late, "literal", question) == ("QUOTE_MINIMAL",)


def test_a_number_in_a_condition_is_not_what_the_sentence_states() -> None:
    from graph.statements import values_in

    most = "what's the most worker processes a pool can have?"
    raised = "If max_workers is less than or equal to 0, then a ValueError will be raised."
    assert values_in(raised, "number", most) == ()
    chosen = "If max_workers is None, then the default chosen will be at most 61."
    assert values_in(chosen, "number", most) == ("61",)


def test_a_value_the_text_marks_as_the_default_is_the_default() -> None:
    page = ev(
        "worker-config",
        "Worker Settings",
        "idle_timeout (integer)\n\n"
        "Close a worker that has been idle longer than this. If this value is specified "
        "without units, it is taken as seconds. A value of zero (the default) disables the "
        "timeout.\n\n"
        "retry_limit (integer)\n\n"
        "How often a failed job is retried. The default is 5 retries.",
    )
    for question in ("what is the default idle_timeout?", "how long is idle_timeout by default?"):
        answer = extractive_answer(question, [page])
        assert answer.short_answer == "zero"
        assert "(the default) disables the timeout" in answer.text
    # an unmarked number word in prose is still no value
    assert values_in("It retries two or three times.", "literal", "what is the default?") == ()


def test_a_preposition_is_phrasing_not_a_term_the_answer_must_hold() -> None:
    page = ev(
        "dice",
        "dice - Generate pseudo-random rolls",
        "This module implements rolls for board games.\n\n"
        "Python uses the Wichmann-Hill method as the core generator.",
    )
    intro = ev(
        "intro",
        "Introduction",
        "Behind each Python module in this manual stands a tutorial.",
    )
    # "behind" is how the question asks, not a word the stating sentence must repeat: the
    # tutorial line that happens to say "behind" binds less than the one that states it
    answer = extractive_answer("what algorithm is behind python's dice module?", [intro, page])
    assert answer.text == "Python uses the Wichmann-Hill method as the core generator. [2]"


def test_a_default_in_brackets_is_the_default_of_the_name_before_it() -> None:
    page = ev(
        "difflib",
        "difflib - Helpers for computing deltas",
        "close_matches(word, options)\n\n"
        "Optional argument n (default 3) is the maximum number of close matches to "
        "return.\n\n"
        "Optional argument cutoff (default 0.6) is a float in the range [0, 1].",
    )
    answer = extractive_answer("what's the default similarity cutoff for close_matches?", [page])
    assert answer.short_answer == "0.6"
    assert values_in("Optional argument n (default 3) is the most.", "literal", "cutoff?") == ()
    # a bracketed "(default)" after a word that is no number is no duration
    assert values_in('Can be "DEFERRED" (default) or None.', "duration", "how long?") == ()


def _chunk(n: int, start: int, text: str) -> Evidence:
    doc = "pydocs:library/digests.html"
    return ev(doc, "digests - Message digests", text).model_copy(
        update={
            "id": f"{doc}#{n}",
            "locator": Locator(
                doc_id=doc, chunk_id=f"{doc}#{n}", char_start=start, char_end=start + len(text)
            ),
        }
    )


def test_a_passage_cut_mid_entry_sits_under_the_entry_it_continues() -> None:
    head = _chunk(
        10,
        0,
        "File hashing\n\ndigests.file_digest(fileobj, digest, /)\n\n"
        "Return a digest object updated with the contents of the file object.",
    )
    rest = _chunk(
        11,
        len(head.text) - 10,  # chunks overlap a little
        "Example:\n\n>>> digest = compute(f, 'sha256')\n\nNew in version 3.11.",
    )
    assert carried_labels([rest, head]) == ["digests.file_digest(fileobj, digest, /)", ""]
    answer = extractive_answer("which python version added digests.file_digest?", [rest, head])
    assert answer.short_answer == "3.11"
    # without the passage before it, the bare note dates nothing it can be sure of
    alone = extractive_answer("which python version added digests.file_digest?", [rest])
    assert alone.short_answer is None


def test_how_long_a_thing_may_be_is_answered_by_its_limit() -> None:
    page = ev(
        "archives",
        "archives - Work with archives",
        "Archive.comment\n\nThe comment of the archive. It should be no longer than 65535 bytes.",
    )
    answer = extractive_answer("how long can the archive comment be?", [page])
    assert answer.short_answer == "65535 bytes"
    # a limit is no default: a question about the default is not answered by it
    assert values_in("It should be no longer than 65535 bytes.", "number", "how many bytes?") == ()


def test_the_exception_the_best_bound_sentence_says_is_raised() -> None:
    page = ev(
        "rings",
        "rings - Bounded ring buffers",
        "insert(i, x)\n\n"
        "Insert x into the ring at position i. If the insertion would cause a bounded ring "
        "to grow beyond maxlen, an OverflowError is raised.\n\n"
        "pop()\n\n"
        "Remove and return the last element. If the ring is empty, raises a LookupError.",
    )
    for question in (
        "what happens if i insert into a ring that's at its maxlen?",
        "what error do i get when inserting into a full ring beyond maxlen?",
    ):
        assert extractive_answer(question, [page]).short_answer == "OverflowError"
    # a sentence that names an exception without raising it answers nothing
    quiet = ev(
        "rings", "rings", "insert(i, x)\n\nBeyond maxlen an insertion is an OverflowError case."
    )
    assert (
        extractive_answer("what happens if i insert beyond maxlen?", [quiet]).short_answer is None
    )


# Two settings whose defaults are quantities written in words and in units.
MEMORY = ev(
    "memory-config",
    "Resource Consumption",
    "sort_mem (integer)\n\n"
    "Sets the memory a sort may use. The default value is four megabytes (4MB).\n\n"
    "build_mem (integer)\n\n"
    "Sets the memory an index build may use. It defaults to 64 megabytes (64MB).\n\n"
    "cache_mem (integer)\n\n"
    "Sets the cache size. The default is 4096kB.",
)


def test_a_quantity_is_read_with_its_unit_and_once_however_often_written() -> None:
    assert quantity("4MB") == quantity("four megabytes") == 4 * 1024**2
    assert quantity("200ms") == 0.2 and quantity("64") is None
    assert extractive_answer("what is the default sort_mem?", [MEMORY]).short_answer == (
        "four megabytes"
    )
    assert extractive_answer("default for build_mem", [MEMORY]).short_answer == "64 megabytes"


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("which has a larger default, sort_mem or build_mem?", "build_mem"),
        ("which is smaller by default, build_mem or sort_mem?", "sort_mem"),
        ("is sort_mem smaller than build_mem by default?", "yes"),
        ("is the default of build_mem smaller than sort_mem?", "no"),
        # equal quantities in other units decide nothing
        ("which has a larger default, sort_mem or cache_mem?", None),
    ],
)
def test_defaults_are_compared_as_quantities(question: str, short: str | None) -> None:
    assert extractive_answer(question, [MEMORY]).short_answer == short


# A reference page whose defaults are words, switches, names and lists.
SERVER = ev(
    "server-config",
    "Server Configuration",
    "log_level (enum)\n\n"
    "Controls which message levels are written to the log. Valid values are DEBUG, INFO, "
    "NOTICE, WARNING and ERROR. The default is WARNING.\n\n"
    "sync_writes (boolean)\n\n"
    "If this parameter is on, the server makes sure that updates reach the disk. "
    "The default is on.\n\n"
    "bind_address (string)\n\n"
    "Specifies the address on which the server listens for clients. The default value is "
    "localhost, which allows only local connections.\n\n"
    "max_clients (integer)\n\n"
    "Determines the maximum number of concurrent clients. The default is typically 100 "
    "clients, but might be less if the kernel cannot support it.\n\n"
    "lookup_path (string)\n\n"
    'The order in which schemas are searched. The default value for this parameter is "$user", '
    "public.\n\n"
    "idle_timeout (integer)\n\n"
    "Time after which an idle client is dropped. The valid range is between 30 seconds and "
    "one day. The default is five minutes (5min).\n\n"
    "source_limit (string)\n\n"
    "How many sources are read. It defaults to sys.getsourcelimit().",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("what is the default log_level?", "WARNING"),
        ("which message level is written to the log by default?", "WARNING"),
        ("default for sync_writes", "on"),
        ("what address does the server listen on by default?", "localhost"),
        ("how many clients are allowed by default?", "100"),
        ("default lookup_path", '"$user", public'),
        ("is sync_writes on by default?", "yes"),
        ("is sync_writes disabled by default?", "no"),
        # a range answers its low end and its high end; the default is no rival to them
        ("what's the shortest idle_timeout allowed?", "30 seconds"),
        ("what is the maximum idle_timeout?", "one day"),
        ("what is the default idle_timeout?", "five minutes"),
        # a named setting's bound is not its default, nor the next entry's label
        ("what is the maximum max_clients?", None),
        # a code name made of the asked words says where the value is kept
        ("what is the default source limit?", None),
    ],
)
def test_a_default_written_as_a_word_a_switch_or_a_list(question: str, short: str | None) -> None:
    assert extractive_answer(question, [SERVER]).short_answer == short


def test_a_sentence_sharing_no_word_with_the_question_states_nothing() -> None:
    tokens = ev(
        "tokens",
        "tokens - Generate secure tokens",
        "tokens.make([nbytes=None])\n\n"
        "Return a random byte string. If nbytes is None or not supplied, a reasonable "
        "default is used.",
    )
    # a page the search reached from the tokens page, about something else
    parser = ev(
        "parser", "parser - Parse arguments", "Action objects read one or more strings."
    ).model_copy(
        update={"provenance": [Provenance(round=2, tool="get_links", query="q", parent="tokens#0")]}
    )
    question = "how many bytes does tokens.make return by default?"
    assert not statements(question, [tokens, parser])
    assert not extractive_answer(question, [tokens, parser]).answerable


# Two entries of an API page: each default and each timeout is its own entry's.
QUEUES = ev(
    "queues",
    "queues - A synchronized queue class",
    "queues.get(block=True, timeout=None)\n\n"
    "Remove and return an item. If block is true and timeout is None (the default), block "
    "if necessary until an item is available. If timeout is a positive number, it blocks "
    "at most timeout seconds and raises the Empty exception if no item arrived.\n\n"
    "Lock.acquire(blocking=True, timeout=-1)\n\n"
    "Acquire a lock. When invoked with the floating-point timeout argument set to a "
    "positive value, block for at most that many seconds.",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        # a default marked inside a condition is still the default
        ("how long does queues.get wait by default?", "None"),
        # the neighbouring entry's words ("-1") are not the asked entry's default, nor is
        # what the condition tests ("block is true")
        ("what is the default timeout of queues.get?", "None"),
        ("what exception does queues.get raise when it times out?", "Empty"),
    ],
)
def test_an_api_entry_is_read_in_its_own_scope(question: str, short: str | None) -> None:
    answer = extractive_answer(question, [QUEUES])
    assert answer.short_answer == short
    assert "floating-point" not in answer.text


def test_a_measure_written_as_its_absence_answers_how_long() -> None:
    page = ev(
        "sockets",
        "Sockets and Layers",
        "By default the socket module has no timeout and can hang.",
    )
    answer = extractive_answer("how long does a socket wait by default?", [page])
    assert answer.short_answer == "no timeout"
    # a number of something else is no such answer
    assert values_in("It keeps no record of the 3 retries.", "duration", "how long?") == ()


STRINGS = ev(
    "strings",
    "Built-in Types",
    "str.find(sub[, start[, end]])\n\n"
    "Return the lowest index where substring sub is found. Return -1 if sub is not found.\n\n"
    "str.index(sub[, start[, end]])\n\n"
    "Like find(), but raise ValueError when the substring is not found.",
)


def test_a_question_naming_code_is_answered_from_that_codes_entry() -> None:
    # "call" is how one uses code, not a word its entry writes: no refusal over it
    index = extractive_answer(
        "what happens if i call str.index with a missing substring?", [STRINGS]
    )
    assert index.short_answer == "ValueError"
    # str.find's question is not answered with str.index's sentence that mentions find()
    found = extractive_answer("what does str.find return if the substring isn't there?", [STRINGS])
    assert found.answerable
    assert "ValueError" not in found.text


def test_a_value_asked_for_one_platform_is_read_only_where_that_platform_is_named() -> None:
    page = ev(
        "threads",
        "threads - Thread-based parallelism",
        "threads.stack_size([size])\n\n"
        "Return the thread stack size used when creating new threads. If size is not "
        "specified, 0 is used.\n\n"
        "threads.start_method\n\n"
        "The default start method is fork. On macOS the default start method is spawn.",
    )
    assert asked_platform("how much stack does a new thread get by default on linux?") == {"linux"}
    unasked = extractive_answer("how much stack does a new thread get by default on linux?", [page])
    assert not unasked.answerable
    mac = extractive_answer("what start method do threads use by default on macos?", [page])
    assert mac.short_answer == "spawn"


def test_what_an_if_clause_tests_is_no_default() -> None:
    # "0" is what the condition tests; the default this sentence speaks of is the OS's
    sentence = (
        "If omitted (or if host or port are '' and/or 0 respectively) the OS default "
        "behavior will be used."
    )
    assert values_in(sentence, "literal", "smtplib SMTP_SSL default port") == ()
    # after the condition's comma, the value is what the sentence states
    stated = "If port is zero, the standard port 465 is used."
    assert values_in(stated, "literal", "smtplib SMTP_SSL default port") == ("465",)


def test_a_members_release_note_does_not_date_its_module() -> None:
    older = ev(
        "meta",
        "Using importlib.metadata",
        "Using importlib.metadata\n\nNew in version 3.8.\n\nimportlib.metadata is a library.",
    )
    # the module's own note is not in the evidence: only its members' and a submodule's
    member = ev(
        "res",
        "importlib.resources – Resources",
        "Loaders that wish to support importlib.resources should implement it.\n\n"
        "importlib.resources.files(package)\n\nReturns a Traversable object.\n\n"
        "New in version 3.9.",
    )
    submodule = ev(
        "abc",
        "importlib.resources.abc – Abstract base classes for resources",
        "importlib.resources.abc – Abstract base classes for resources\n\nNew in version 3.11.",
    )
    asked = "which one landed in the stdlib first, importlib.metadata or importlib.resources?"
    assert extractive_answer(asked, [older, member, submodule]).short_answer is None
    module = ev(
        "res0",
        "importlib.resources – Resources",
        "importlib.resources – Resources\n\nNew in version 3.7.\n\nThis module leverages imports.",
    )
    found = extractive_answer(asked, [older, module, member, submodule])
    assert found.short_answer == "importlib.resources"


def test_a_change_states_the_old_value_for_before_and_the_new_one_otherwise() -> None:
    assert asks_before("before 3.8, what format did tarfile use by default?")
    assert asks_before("what did the default timeout used to be?")
    assert not asks_before("what format does tarfile use by default?")
    changed = "The default format for new archives was changed to PAX_FORMAT from GNU_FORMAT."
    assert change_of(changed) == ("GNU_FORMAT.", "PAX_FORMAT")
    before = "before 3.8, what format did tarfile use by default for new archives?"
    assert values_in(changed, "literal", before) == ("GNU_FORMAT",)
    assert values_in(changed, "literal", "what is tarfile's default format?") == ("PAX_FORMAT",)
    raised = "Changed in version 3.9: the default timeout was raised from 30 seconds to 1 minute."
    assert values_in(raised, "duration", "what was the default timeout before 3.9?") == (
        "30 seconds",
    )
    assert values_in(raised, "duration", "what is the default timeout?") == ("1 minute",)
    # a range is no change: both ends stay
    assert change_of("The valid range is from 30 seconds to one day.") is None
    range_ = "The valid range is from 30 seconds to one day."
    assert values_in(range_, "duration", "the shortest timeout allowed?") == (
        "30 seconds",
        "one day",
    )
    # what is so now does not answer what was before
    assert values_in("This is currently PAX_FORMAT.", "literal", before) == ()


def test_a_question_asking_the_old_default_is_answered_by_the_change() -> None:
    page = ev(
        "tar",
        "tarfile - Read and write tar archive files",
        "tarfile.DEFAULT_FORMAT\n\nThe default format for creating archives. This is "
        "currently PAX_FORMAT.\n\nChanged in version 3.8: The default format for new "
        "archives was changed to PAX_FORMAT from GNU_FORMAT.",
    )
    asked = "before 3.8, what format did tarfile use by default when creating new archives?"
    assert extractive_answer(asked, [page]).short_answer == "GNU_FORMAT"
    now = "what format does tarfile use by default for new archives?"
    assert extractive_answer(now, [page]).short_answer == "PAX_FORMAT"


def test_an_entry_the_question_describes_is_its_own_though_it_names_a_file() -> None:
    asked = "since which python version can urllib's robots.txt parser return the Sitemap entries?"
    # "Sitemap" describes site_maps(); robots.txt is a file, not the entry's code
    assert not labels_another("site_maps()", asked)
    assert labels_another("request_rate(useragent)", asked)
    # a question naming its entry's code is not answered under another's
    assert labels_another("Lock.acquire(blocking=True, timeout=-1)", "queue.get lock timeout")
    page = ev(
        "robots",
        "urllib.robotparser - Parser for robots.txt",
        "request_rate(useragent)\n\nReturns the Request-rate parameter from robots.txt.\n\n"
        "New in version 3.6.\n\nsite_maps()\n\nReturns the contents of the Sitemap "
        "parameter from robots.txt in the form of a list().\n\nNew in version 3.8.",
    )
    assert extractive_answer(asked, [page]).short_answer == "3.8"


def test_a_number_written_as_a_word_binds_the_one_written_in_digits() -> None:
    page = ev(
        "pop",
        "poplib - POP3 protocol client",
        "class poplib.POP3(host, port=POP3_PORT[, timeout])\n\n"
        "This class implements the actual POP3 protocol. The connection is created when the "
        "instance is initialized.\n\nChanged in version 3.9: If the timeout parameter is set "
        "to be zero, it will raise a ValueError to prevent the creation of a non-blocking "
        "socket.",
    )
    asked = "what exception do i get if i pass timeout=0 to poplib.POP3?"
    assert extractive_answer(asked, [page]).short_answer == "ValueError"


# A directive reference: each entry's field lines first, its description after.
DIRECTIVES = ev(
    "core",
    "Module ngx_http_core_module - nginx",
    "client_max_body_size\n\nSyntax: client_max_body_size size;\n"
    "Default: client_max_body_size 1m;\nContext: http, server, location\n\n"
    "Sets the maximum allowed size of the client request body.\n\n"
    "keepalive_timeout\n\nSyntax: keepalive_timeout timeout;\n"
    "Default: keepalive_timeout 75s;\nContext: http, server, location\n\n"
    "Sets a timeout during which a keep-alive client connection will stay open on the "
    "server side.\n\n"
    "keepalive_requests\n\nSyntax: keepalive_requests number;\n"
    "Default: keepalive_requests 1000;\n\nThis directive appeared in version 0.8.0.\n\n"
    "Sets the maximum number of requests served through one keep-alive connection. "
    "Prior to version 1.19.10, the default value was 100.",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        # a "Default:" field line, the entry's name repeated before its value
        ("what's the default client_max_body_size in nginx?", "1m"),
        # the entry's description below its field lines binds the question's words; a
        # duration as configuration writes it
        ("how long does nginx keep idle keep-alive connections open by default?", "75s"),
        # what was before answers only a question asking what was before
        ("what was the default keepalive_requests before 1.19.10?", "100"),
    ],
)
def test_a_directive_entry_is_read_whole(question: str, short: str | None) -> None:
    assert extractive_answer(question, [DIRECTIVES]).short_answer == short


def test_what_was_so_before_is_not_what_is_so_now() -> None:
    past = "Prior to version 1.19.10, the default value was 100."
    assert values_in(past, "number", "what is the default keepalive_requests?") == ()
    assert values_in(past, "number", "what was the default keepalive_requests before 1.19.10?") == (
        "100",
    )
    assert release_notes("This directive appeared in version 0.8.0.", "when did it appear?") == [
        "0.8.0"
    ]


# A settings table in a wiki page, code cells in backticks.
SETTINGS_TABLE = ev(
    "worker",
    "Job worker",
    "## Configuration\n\nThe worker reads its settings from the environment.\n\n"
    "| Setting | Default | Description |\n|---|---|---|\n"
    "| `RETRY_BACKOFF` | `30s` | Wait between retries. |\n"
    "| `QUEUE_NAME` | `default` | The queue jobs are pushed to. |\n",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("how long does the worker wait between retries by default?", "30s"),
        # the setting made of the asked words is where the value lives, not the value
        ("default queue name for the job worker", "default"),
    ],
)
def test_a_settings_table_row_states_its_default(question: str, short: str) -> None:
    assert extractive_answer(question, [SETTINGS_TABLE]).short_answer == short


# An API reference in the docstring style: a signature, then a parameter list.
CONNECT = ev(
    "pgwire",
    "pgwire - API reference",
    "pgwire.connect(host, port=5432, timeout=None, sslmode='prefer')\n\n"
    "Open a connection to the database server.\n\nParameters:\n\n"
    "host (str) – The server's host name.\n\nport (int) – The TCP port. Defaults to 5432.\n\n"
    "timeout (float) – Seconds to wait for the connection. If None, waits forever.\n\n"
    "Returns: a Connection object.\n\n"
    "pgwire.Connection.close(timeout=-1, force=False)\n\nClose the connection.",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        # a parameter the signature assigns, named in plain words
        ("what's the default sslmode for pgwire.connect?", "prefer"),
        ("what port does pgwire.connect use by default?", "5432"),
        # "Defaults to 5432." is the port item's: host has no default
        ("what's the default host for pgwire.connect?", None),
        # close's signature is not connect's; None, 0 or -1 mean "not given", and what is
        # used then is decided elsewhere
        ("what is the default timeout of Connection.close?", None),
        ("what is the default timeout of pgwire.connect?", None),
        ("is force on by default for Connection.close?", "no"),
    ],
)
def test_a_parameter_list_gives_each_parameter_its_own_default(
    question: str, short: str | None
) -> None:
    assert extractive_answer(question, [CONNECT]).short_answer == short


def test_a_kinds_value_is_read_on_its_own_line_not_the_field_above() -> None:
    # "1m;" ends the Default line; it is no context
    asked = "which context can client_max_body_size be used in?"
    assert extractive_answer(asked, [DIRECTIVES]).short_answer is None


def test_an_overlap_repeating_the_previous_entrys_end_is_not_under_the_next_label() -> None:
    # The chunker cut after "Repr.maxstring" and the next chunk repeats maxlong's
    # description first: that "The default is 40." is maxlong's, not maxstring's.
    head_text = (
        "Repr.maxlong\n\nMaximum characters for an integer. The default is 40.\n\nRepr.maxstring"
    )
    head = _chunk(3, 0, head_text)
    overlap = head_text.index("Maximum")
    rest = _chunk(
        4,
        overlap,
        "Maximum characters for an integer. The default is 40.\n\nRepr.maxstring\n\n"
        "Limit on the characters of a string. The default is 30.",
    )
    assert carried_labels([rest, head]) == ["Repr.maxlong", ""]
    answer = extractive_answer("what is the default Repr.maxstring?", [rest, head])
    assert answer.short_answer == "30"
    which = extractive_answer("which default limit is bigger: maxstring or maxlong?", [head, rest])
    assert which.short_answer == "maxlong"


def test_a_placeholder_assigned_to_a_setting_is_no_value() -> None:
    page = ev(
        "compile",
        "Compile-time Options",
        "SQLITE_MAX_SCHEMA_RETRY=N\n\n"
        "Whenever the schema changes, the statement is retried up to N times. "
        "The default setting is 50 which is more than adequate.",
    )
    assert assigned_value("SQLITE_MAX_SCHEMA_RETRY default", [page]) is None
    assert extractive_answer("SQLITE_MAX_SCHEMA_RETRY default", [page]).short_answer == "50"


def test_a_table_cell_of_words_answers_no_version() -> None:
    page = ev(
        "omitted",
        "Features Not Implemented",
        "| Feature | Note |\n|---|---|\n"
        "| Writing to VIEWs | VIEWs are read-only; the index support differs |",
    )
    question = (
        "the index docs say a where clause gives a special kind of index. "
        "what's the first version that supports that kind of index?"
    )
    assert value_kind(question) == "date"  # the ask is the last sentence, typed lowercase
    assert table_value(question, [page]) is None


def test_a_number_closing_a_sentence_that_names_the_counted_noun_counts_it() -> None:
    page = ev(
        "swarmvtab",
        "The swarmvtab Virtual Table",
        "By default, it attempts to limit the maximum number of simultaneously open "
        "database files to nine. A frame has a value in bytes 4 through 7 of its header.",
    )
    files = "by default how many component database files will swarmvtab keep open at once?"
    assert extractive_answer(files, [page]).short_answer == "nine"
    # the head of the counted compound is its plural noun; "how many of the …" skips "of"
    assert counted_noun("how many component database files will it keep?") == "file"
    assert counted_noun("how many payments fit in a batch?") == "payment"
    assert counted_noun("how many of the lock states does the pager track?") == "state"
    # "bytes 4 through 7" numbers bytes, it does not count them
    bytes_q = "how many bytes is the frame header of swarmvtab?"
    assert extractive_answer(bytes_q, [page]).short_answer is None


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("how many replicas does the ledger run?", "replica"),
        # "the number of" counts as "how many" does
        ("max number of vertices in one geopoly polygon", "vertices"),
        ("what is the number of tables a join may hold?", "tables"),
        ("what is the default port?", None),
        # a noun before "number" names no count: "port number", "version number"
        ("what is the port number of the admin console?", None),
        ("what is the maximum number of the attached databases in sqlite?", "databases"),
    ],
)
def test_the_counted_noun(question: str, noun: str | None) -> None:
    assert counted_noun(question) == (stem(noun) if noun else None)
