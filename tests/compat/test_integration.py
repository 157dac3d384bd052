"""A real Hindsight integration from PyPI, unchanged, against memstream.

hindsight-langgraph gives LangChain/LangGraph agents memory tools. The tools
are invoked the way an agent's tool node invokes them (no LLM is needed to
call a tool), and memory_instructions builds a prompt from recalled memories.
"""

import asyncio

from hindsight_langgraph import create_hindsight_tools, memory_instructions

from conftest import covers, fresh_bank


@covers("Integration.hindsight_langgraph")
def test_langgraph_tools_end_to_end(client, loop):
    bank = fresh_bank("lg")
    tools = {t.name: t for t in create_hindsight_tools(bank_id=bank, client=client, budget="mid",
                                                         tags=["agent:lg"], retain_document_id="lg-session")}
    assert set(tools) == {"hindsight_retain", "hindsight_recall", "hindsight_reflect"}
    cfg = {"configurable": {}}
    stored = loop.run_until_complete(tools["hindsight_retain"].ainvoke(
        {"content": "The user's name is Rosa and she is allergic to peanuts."}, config=cfg))
    assert stored == "Memory stored successfully."
    found = loop.run_until_complete(tools["hindsight_recall"].ainvoke({"query": "What is Rosa allergic to?"}, config=cfg))
    assert "peanut" in found.lower(), found
    answer = loop.run_until_complete(tools["hindsight_reflect"].ainvoke({"query": "What is Rosa allergic to?"},
                                                                        config=cfg))
    assert "peanut" in answer.lower(), answer
    get = memory_instructions(bank_id=bank, client=client, base_instructions="You are helpful.",
                              query="Rosa allergy", max_results=3)
    instructions = loop.run_until_complete(get())
    assert instructions.startswith("You are helpful.") and "peanut" in instructions.lower(), instructions
