"""`rank_causes(chain=N)`: the causes of the best causes themselves, a link deeper (`agent.causal`, point 5),
on hand-written passages: a cause told only beside an intermediate cause is found, with the intermediate
named; an unrelated earlier event, another document's earlier event and the intermediate's own effect are not."""

from __future__ import annotations

from agent_doubles import MemoryBackend

from agent.causal import rank_causes

ORDER = ("Recall order", "On 9 January 2015, the Marine Board ordered the recall of every Tolla gauge fitted with "
                         "the QX-9 element. The Harbour Trust had to refund its customers. Most took the money. "
                         "The gauges were melted down in Brask.")  # fmt: skip
SWITCH = (
    "Switch to QX-9",
    "The Harbour Trust runs the port of Brask and makes tide gauges. The Harbour Trust employs two hundred people. "
    "On 3 March 2009, the Harbour Trust opened a new office in Brask. On 5 May 2012, Lindby opened a test "
    "laboratory in Gothenburg.\n\n"
    "On 2 February 2014, a fire destroyed the Kvell plant in Orsa.\n\n"
    "On 17 February 2014, the Harbour Trust signed a contract with Lindby for the QX-9 element to replace "
    "the element from Kvell.\n\n"
    "On 20 February 2014, Lindby hired forty workers because of the contract with the Harbour Trust.",
)
AGREEMENT = ("Kvell agreement", "On 14 March 2011, the Harbour Trust agreed to buy its elements from Kvell alone.")
SUBJECT = "the 2015 recall of the Tolla gauges"


def _causes(docs: dict[str, tuple[str, str]], chain: int = 4) -> list:
    return rank_causes(SUBJECT, MemoryBackend(docs).chunks, chain=chain).causes


def _find(causes: list, words: str) -> list:
    return [c for c in causes if words in c.text]


def test_a_cause_of_a_cause_told_only_beside_it_is_found_a_link_deeper_through_it():
    causes = _causes({"order": ORDER, "switch": SWITCH, "agreement": AGREEMENT})
    contract = _find(causes, "signed a contract")
    fire = _find(causes, "fire destroyed")
    assert contract and contract[0].depth == 1 and contract[0].link == "BEFORE"
    assert fire and fire[0].depth == 2 and fire[0].via == contract[0].text
    assert fire[0].score < contract[0].score and "via: On 17 February 2014" in fire[0].full_support
    assert not _find(_causes({"order": ORDER, "switch": SWITCH}, chain=0), "fire destroyed")  # only by the chain


def test_an_earlier_event_that_shares_only_a_common_name_or_is_told_elsewhere_is_not_chained():
    causes = _causes({"order": ORDER, "switch": SWITCH, "agreement": AGREEMENT})
    assert not _find(causes, "new office")  # same report, earlier, only "the Harbour Trust" in common
    assert not _find(causes, "agreed to buy")  # names Kvell, but another document: not the event beside it
    assert not _find(causes, "test laboratory")  # names Lindby in the same report, but the fire comes between
    alone = SWITCH[0], SWITCH[1].replace("On 2 February 2014, a fire destroyed the Kvell plant in Orsa.\n\n", "")
    assert not _find(_causes({"order": ORDER, "switch": alone}), "new office")  # the nearest, yet a common name


def test_the_intermediates_own_effect_told_beside_it_is_not_a_cause():
    causes = _causes({"order": ORDER, "switch": SWITCH})
    assert not _find(causes, "hired forty workers")


def test_a_connective_chain_across_documents_puts_the_deeper_cause_below_the_first():
    docs = {
        "ferry": ("Ferry", "On 5 May 2021, the Dorle ferry stopped running because the Kell landing stage had collapsed."),
        "quarry": ("Quarry", "On 1 May 2021, barges from the Tarn quarry were moored at Kell.\n\n"
                             "The Kell landing stage collapsed after the Tarn barges rammed its piles."),
    }  # fmt: skip
    causes = rank_causes("the Dorle ferry stopped running in May 2021", MemoryBackend(docs).chunks, chain=4).causes
    stage = _find(causes, "landing stage had collapsed")
    barges = _find(causes, "rammed its piles")
    assert stage and stage[0].depth == 1 and stage[0].link == "connective"
    assert barges and barges[0].depth == 2 and barges[0].score < stage[0].score
    assert len(_find(causes, "rammed")) == 1  # found by both routes, kept once


def test_a_connective_link_into_an_intermediate_is_followed_when_only_the_chain_names_it():
    docs = {"order": ORDER, "switch": SWITCH,
            "memo": ("Memo", "The Harbour Trust signed the contract with Lindby for the QX-9 element because the "
                             "Orsa plant of Kvell had burned down.")}  # fmt: skip
    causes = _causes(docs)
    burned = _find(causes, "had burned down")
    assert burned and burned[0].link == "connective" and burned[0].depth >= 2 and "signed" in burned[0].via
    assert not _find(_causes(docs, chain=0), "had burned down")


def test_a_name_inside_a_longer_word_is_no_shared_participant():
    from agent.causal import _names

    assert _names("the kvell plant burned", "kvell") and not _names("the kvell plant burned", "vell")
    assert _names("sold to vell ab.", "vell ab") and not _names("sold to vell abc", "vell ab")
