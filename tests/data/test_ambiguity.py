from llmdyn import data as D


def test_own_prompts_are_enough_short_and_in_the_papers_format():
    ambiguous, clear = D.AMBIGUOUS_PROMPTS, D.CLEAR_PROMPTS
    # with the paper's 3 + 2 named prompts: 16 a group, the coverage table's n = 16 row
    assert (len(ambiguous), len(clear)) == (13, 14)
    assert D.AMBIGUOUS_PROMPTS[0].id == "book_ambiguous/food"
    assert D.AMBIGUOUS_PROMPTS[0].text == "What is my favourite food? The answer is"
    assert D.CLEAR_PROMPTS[0].answer == "Rome"
    everything = [*ambiguous, *clear]
    assert len({q.id for q in everything}) == len({q.text for q in everything}) == 27
    assert all(q.text.endswith("? The answer is") and len(q.text) <= 55 for q in everything)
    assert all(q.get("source") == "this book's own prompt, not paper B's" for q in everything)
    assert all(q.answer is None for q in ambiguous) and all(q.answer for q in clear)
    named = {q.text for q in D.NAMED_PROMPTS.values()}
    assert not named & {q.text for q in everything}  # the paper's prompts are added, not copied
