"""The resolve tool: the description is searched, the names its evidence writes become the only choices of
one JSON-constrained model call, and the sentence holding the pick is cited. (The real 0.5B model:
test_tools_capability.)"""

from __future__ import annotations

from agent_doubles import MemoryBackend, ScriptedChatModel

from agent.focus import sentences_of
from agent.llm import LLMError
from agent.state import RunState
from agent.tools import build_registry
from agent.tools.context import ToolContext
from agent.tools.resolve import candidate_names
from eventfold.run_options import RunOptions

DOCS = {
    "recall": ("The recall", "On 9 January 2015 the board ordered the recall. The order was signed by senior inspector "
                             "Dagny Solberg of the Nordic Marine Board."),
    "later": ("Succession", "On 1 April 2022 Solberg became head of Brandt Meridian Tidewater."),
}  # fmt: skip
DESCRIBED = "the inspector who signed the recall order"


def _call(model: ScriptedChatModel, description: str = DESCRIBED):
    ctx = ToolContext(run=RunState(question="q"), backend=MemoryBackend(DOCS), model=model, options=RunOptions())
    return build_registry(ctx).call("resolve", {"description": description}), ctx


def test_the_model_picks_among_the_names_the_evidence_writes_and_the_sentence_is_cited():
    model = ScriptedChatModel([], json_replies=[{"name": "Dagny Solberg"}])
    result, ctx = _call(model)
    enum = model.calls[0]["json_schema"]["properties"]["name"]["enum"]
    assert "Dagny Solberg" in enum and "Solberg" not in enum and enum[-1] == "none"  # the full name only
    assert "Nordic Marine Board" in enum and "inspector" not in " ".join(enum).lower()
    assert result.data | {"candidates": []} == {
        "description": DESCRIBED, "name": "Dagny Solberg", "chunk_id": "recall#0", "candidates": [],
        "sentence": "The order was signed by senior inspector Dagny Solberg of the Nordic Marine Board.",
    }  # fmt: skip
    assert result.content.splitlines()[1].startswith('name: Dagny Solberg — "The order was signed')
    assert [ev.chunk_id for ev in result.evidence] == ["recall#0"]
    assert ctx.run.counters.llm_calls == 1  # the call is counted as the run's


def test_none_or_a_name_outside_the_choices_resolves_nothing():
    for reply in ({"name": "none"}, {"name": "Ingrid Halvorsen"}):
        result, _ = _call(ScriptedChatModel([], json_replies=[reply]))
        assert not result.error and result.data["name"] is None and "No name found" in result.content


def test_a_failed_model_call_is_an_error_the_agent_sees_not_a_guess():
    class Failing(ScriptedChatModel):
        def chat(self, *args, **kwargs):
            raise LLMError("server down")

    result, _ = _call(Failing([]))
    assert result.error and "try again" in result.content


def test_names_the_description_already_says_are_not_candidates():
    sents = sentences_of(MemoryBackend(DOCS).chunks)
    assert "Nordic Marine Board" not in candidate_names("the inspector of the Nordic Marine Board", sents)
