"""SQuAD question stems: the questions alone, each ending in its own last word."""

from llmdyn import data as D


def test_question_stems_end_in_their_own_last_word():
    stems = D.question_stems()
    assert len(stems) == 1000 and stems == D.question_stems(seed=0) != D.question_stems(seed=1)
    assert not any(s.text.endswith(("?", " ")) for s in stems)
    assert len({s.text.split()[-1] for s in stems}) > 500  # many different last words
    assert {s.task for s in stems} == {"squad_stem"} and stems[0].get("title")
