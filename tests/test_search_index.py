"""The keyword-search index: candidates from the vocabulary, kept in step with changes."""

from __future__ import annotations

from gitmem import Memory
from gitmem.strategies.keyword_search import SearchIndex


def _index(*memories: Memory) -> SearchIndex:
    index = SearchIndex()
    index.reset(list(memories), None)
    return index


def _slugs(index: SearchIndex, *keywords: str) -> list[str]:
    return [hit.memory.slug for hit in index.search(list(keywords), 0)]


def test_a_keyword_inside_a_longer_word_matches() -> None:
    """A word keyword finds memories where it is only part of a word, any case."""
    index = _index(Memory("a", "", "the DEPLOYMENT went fine"), Memory("b", "", "nothing"))
    assert _slugs(index, "ploy") == ["a"]


def test_a_keyword_with_spaces_and_punctuation_matches_across_words() -> None:
    """A keyword that is not one word is looked for in the whole text."""
    index = _index(Memory("a", "", "roll out, then drain"), Memory("b", "", "roll-out"))
    assert _slugs(index, "out, then") == ["a"]
    assert _slugs(index, "l-o") == ["b"]


def test_slug_and_description_are_searched_but_fields_do_not_run_together() -> None:
    """Slug and description match; a keyword never spans two fields."""
    index = _index(Memory("csv-tools", "vendor exports", "parse"))
    assert _slugs(index, "csv") == ["csv-tools"]
    assert _slugs(index, "exports") == ["csv-tools"]
    assert _slugs(index, "exportsparse") == []


def test_put_and_remove_keep_the_index_in_step() -> None:
    """A replaced memory stops matching its old words; a removed one matches nothing."""
    index = _index(Memory("a", "", "alpha"), Memory("b", "", "alpha beta"))
    index.put(Memory("a", "", "gamma"))
    assert _slugs(index, "alpha") == ["b"]
    assert _slugs(index, "gamma") == ["a"]
    index.remove("b")
    assert _slugs(index, "alpha", "beta") == []


def test_ranking_distinct_then_frequency_then_slug() -> None:
    """More distinct keywords rank first, then more occurrences, then the slug."""
    index = _index(
        Memory("one", "", "red red red"),
        Memory("two", "", "red blue"),
        Memory("three", "", "red red"),
        Memory("four", "", "red red"),
    )
    hits = index.search(["red", "blue"], 3)
    assert [(h.memory.slug, h.distinct, h.frequency) for h in hits] == [
        ("two", 2, 2),
        ("one", 1, 3),
        ("four", 1, 2),
    ]
