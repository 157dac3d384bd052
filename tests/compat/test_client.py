"""Hindsight's published Python client (hindsight-client 1.1.0) against memstream.

One test per client method (or a few methods that only make sense together),
each asserting on the response the client parsed. A method memstream cannot
serve is marked xfail with the reason, and docs/COMPATIBILITY.md says the
same (the Go test checks that the two agree).
"""

import json
import os
import time
import uuid

import pytest
from hindsight_client import Hindsight
from hindsight_client_api import models as M
from hindsight_client_api.exceptions import ApiException

from conftest import covers, fresh_bank, wait_until


# --- monitoring ------------------------------------------------------------


@covers("MonitoringApi.health_endpoint_health_get")
def test_health(client, run):
    body = run(client.monitoring.health_endpoint_health_get())
    assert body["status"] in ("ok", "healthy")


@covers("MonitoringApi.get_readiness")
def test_readiness(client, run):
    body = run(client.monitoring.get_readiness())
    assert body["ready"] is True


@covers("MonitoringApi.get_liveness")
def test_liveness(client, run):
    body = run(client.monitoring.get_liveness())
    assert body.status == "alive" and body.version and body.uptime_seconds >= 0


@covers("MonitoringApi.get_version", "Hindsight.get_version")
def test_version(client, run):
    v = client.get_version()
    assert v.api_version
    assert v.features.bank_config_api is True
    assert isinstance(v.features.observations, bool)
    # The test server serves /mcp, consolidates and records LLM requests.
    assert v.features.mcp is True and v.features.worker is True and v.features.llm_trace is True
    # memstream's audit default stays on (Hindsight's is off); a bank overrides it.
    assert v.features.audit_log is True
    assert run(client.monitoring.get_version()).api_version == v.api_version


@covers("MonitoringApi.metrics_endpoint_metrics_get")
def test_metrics(client, run):
    # The generated method declares a JSON body; Prometheus text is not JSON,
    # so read the raw answer the way a scraper would.
    resp = run(client.monitoring.metrics_endpoint_metrics_get_without_preload_content())
    text = run(resp.read()).decode()
    assert "memstream_api_request_seconds" in text


# --- banks ---------------------------------------------------------------


@covers("BanksApi.create_or_update_bank", "Hindsight.create_bank")
def test_create_bank(client, run):
    bank = fresh_bank()
    prof = client.create_bank(bank, name="Compat", mission="Help Alice.", disposition_skepticism=4,
                              disposition_literalism=2, disposition_empathy=5, background="A test bank.")
    assert prof.bank_id == bank and prof.name == "Compat" and prof.mission == "Help Alice."
    assert (prof.disposition.skepticism, prof.disposition.literalism, prof.disposition.empathy) == (4, 2, 5)
    again = run(client.banks.create_or_update_bank(bank, M.CreateBankRequest(reflect_mission="Answer briefly.")))
    assert again.bank_id == bank and again.mission == "Answer briefly."


@covers("BanksApi.update_bank", "Hindsight.set_mission")
def test_update_bank(client, run):
    bank = fresh_bank()
    client.create_bank(bank)
    prof = run(client.banks.update_bank(bank, M.CreateBankRequest(name="Renamed", disposition=M.DispositionTraits(
        skepticism=1, literalism=5, empathy=3))))
    assert prof.name == "Renamed" and prof.disposition.skepticism == 1
    client.set_mission(bank, "New mission")
    assert run(client.banks.get_bank_config(bank)).config["reflect_mission"] == "New mission"


@covers("BanksApi.list_banks")
def test_list_banks(client, run, seeded):
    out = run(client.banks.list_banks(limit=1000))
    assert out.total >= 1 and out.limit == 1000 and out.offset == 0
    item = next(b for b in out.banks if b.bank_id == seeded)
    assert item.name == "Seeded bank" and item.disposition.skepticism in range(1, 6)
    assert item.fact_count >= 1


@covers("BanksApi.delete_bank", "Hindsight.delete_bank")
def test_delete_bank(client, run):
    bank = fresh_bank()
    client.create_bank(bank)
    out = run(client.banks.delete_bank(bank))
    assert out.success is True
    with pytest.raises(ApiException) as e:
        run(client.banks.get_bank_config(bank))
    assert e.value.status == 404


@covers("BanksApi.get_agent_stats")
def test_stats(client, run, seeded):
    st = run(client.banks.get_agent_stats(seeded))
    assert st.bank_id == seeded
    assert st.total_nodes >= 3 and st.total_documents == 2
    assert st.nodes_by_fact_type.get("world", 0) + st.nodes_by_fact_type.get("experience", 0) >= 3
    assert isinstance(st.links_by_link_type, dict) and isinstance(st.links_breakdown, dict)
    assert st.pending_operations >= 0 and st.failed_operations >= 0


@covers("BanksApi.get_bank_config", "BanksApi.update_bank_config", "BanksApi.reset_bank_config",
        "Hindsight.get_bank_config", "Hindsight.update_bank_config", "Hindsight.reset_bank_config")
def test_bank_config(client, run):
    bank = fresh_bank()
    client.create_bank(bank)
    cfg = client.get_bank_config(bank)
    assert cfg["bank_id"] == bank and "config" in cfg and cfg["overrides"] == {}
    upd = client.update_bank_config(bank, retain_mission="Only facts about work.", disposition_skepticism=5,
                                    enable_observations=True)
    assert upd["overrides"]["retain_mission"] == "Only facts about work."
    assert upd["config"]["disposition_skepticism"] == 5
    with pytest.raises(ApiException) as e:
        run(client.banks.update_bank_config(bank, M.BankConfigUpdate(updates={"disposition_skepticism": 9})))
    assert e.value.status in (400, 422)
    reset = client.reset_bank_config(bank)
    assert reset["overrides"] == {}


@covers("BanksApi.get_memories_timeseries")
def test_memories_timeseries(client, run, seeded):
    ts = run(client.banks.get_memories_timeseries(seeded, period="30d"))
    assert ts.bank_id == seeded and ts.period == "30d" and ts.trunc in ("hour", "day", "week", "month")
    assert sum(b.world + b.experience + b.observation for b in ts.buckets) >= 3


@covers("BanksApi.trigger_consolidation", "BanksApi.recover_consolidation")
def test_consolidate_and_recover(client, run, seeded):
    out = run(client.banks.trigger_consolidation(seeded))
    assert out.operation_id
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(seeded, out.operation_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed"
    rec = run(client.banks.recover_consolidation(seeded))
    assert rec.retried_count >= 0


@covers("BanksApi.clear_observations")
def test_clear_observations(client, run):
    bank = fresh_bank()
    client.retain(bank, "Carol runs the Berlin office and likes hiking.")
    out = run(client.banks.clear_observations(bank))
    assert out.success is True and (out.deleted_count or 0) >= 0
    lst = run(client.memory.list_memories(bank, type="observation"))
    assert lst.total == 0


@covers("BanksApi.test_bank_llm")
def test_bank_llm_health(client, run, seeded):
    out = run(client.banks.test_bank_llm(seeded))
    assert out.bank_id == seeded
    assert {o.operation for o in out.operations} == {"retain", "consolidation", "reflect"}
    assert all(o.status in ("connected", "not_configured") for o in out.operations)


@covers("BanksApi.preview_prompt")
def test_preview_prompt(client, run, seeded):
    out = run(client.banks.preview_prompt(seeded, M.PromptPreviewRequest(operation="reflect")))
    assert out.messages and out.messages[0].blocks
    assert all(b.text for m in out.messages for b in m.blocks)


@covers("BanksApi.list_bank_aliases", "BanksApi.create_bank_alias", "BanksApi.set_bank_alias_primary",
        "BanksApi.delete_bank_alias")
def test_bank_aliases(client, run):
    bank = fresh_bank()
    client.create_bank(bank)
    alias = "alias-" + uuid.uuid4().hex[:8]
    out = run(client.banks.create_bank_alias(bank, M.CreateBankAliasRequest(alias=alias)))
    assert out.bank_id == bank and [a.alias for a in out.aliases] == [alias]
    out = run(client.banks.set_bank_alias_primary(bank, alias, M.SetBankAliasPrimaryRequest(primary=True)))
    assert out.aliases[0].primary is True
    assert run(client.banks.list_bank_aliases(bank)).aliases[0].alias == alias
    # The alias reaches the bank.
    assert client.get_bank_config(alias)["bank_id"] == bank
    out = run(client.banks.delete_bank_alias(bank, alias))
    assert out.aliases == []


# --- retain ------------------------------------------------------------------


@covers("MemoryApi.retain_memories", "Hindsight.retain")
def test_retain_sync(client, run):
    bank = fresh_bank()
    r = client.retain(bank, "Dana adopted a cat named Miso in June.", context="pets",
                      timestamp="2024-06-10T12:00:00Z", document_id="doc-dana", metadata={"k": "v"},
                      tags=["user:dana"], entities=[{"text": "Dana", "type": "PERSON"}])
    assert r.success is True and r.bank_id == bank and r.items_count == 1 and r.var_async is False
    # A success means stored: the fact is listed right away.
    lst = run(client.memory.list_memories(bank))
    assert lst.total >= 1 and any("Miso" in m.text for m in lst.items)


@covers("MemoryApi.retain_memories", "Hindsight.retain")
def test_retain_timestamps(client, run):
    bank = fresh_bank()
    for ts in ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05", "2024-01-02T03:04:05.123+02:00", "unset", None):
        r = client.retain(bank, f"Timestamp form {ts} works for Erin.", timestamp=ts)
        assert r.success is True
    with pytest.raises(ApiException) as e:
        client.retain(bank, "bad time", timestamp="next tuesday-ish")
    assert e.value.status in (400, 422) and "timestamp" in e.value.body


@covers("MemoryApi.retain_memories", "Hindsight.retain_batch")
def test_retain_batch_and_async(client, run):
    bank = fresh_bank()
    r = client.retain_batch(bank, [{"content": f"Fact number {i} about Frank's garden."} for i in range(5)],
                            document_id="garden", document_tags=["home"], retain_async=True)
    assert r.success and r.var_async is True and r.items_count == 5 and r.operation_id
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(bank, r.operation_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed", op
    docs = run(client.documents.list_documents(bank))
    assert [d.id for d in docs.items] == ["garden"] and "home" in docs.items[0].tags


@covers("MemoryApi.retain_memories")
def test_retain_validation_names_field(client, run):
    bank = fresh_bank()
    with pytest.raises(ApiException) as e:
        run(client.memory.retain_memories(bank, M.RetainRequest(items=[])))
    assert e.value.status in (400, 422) and "items" in e.value.body


# --- recall ----------------------------------------------------------------------


@covers("MemoryApi.recall_memories", "Hindsight.recall")
def test_recall_defaults(client, seeded):
    r = client.recall(seeded, "Where does Alice live?")
    assert r.results, "no results"
    top = r.results[0]
    assert top.id and top.text and top.type in ("world", "experience", "observation")
    assert any("Lisbon" in x.text for x in r.results)
    assert isinstance(top.entities or [], list)
    assert r.entities is None  # not asked for


@covers("MemoryApi.recall_memories", "Hindsight.recall")
def test_recall_every_option(client, seeded):
    r = client.recall(seeded, "What does Alice drink?", types=["world", "experience"], max_tokens=2000,
                      budget="high", trace=True, query_timestamp="2024-04-01T00:00:00", include_entities=True,
                      max_entity_tokens=300, include_chunks=True, include_source_facts=True,
                      tags=["user:alice"], tags_match="any_strict", prefer_observations=False,
                      min_scores={"final": 0.0}, temporal_window={"start": "2024-01-01T00:00:00Z",
                                                                  "end": "2024-12-31T00:00:00Z"})
    assert r.results and all("user:alice" in (x.tags or []) for x in r.results)
    assert any("tea" in x.text for x in r.results)
    assert r.trace is not None
    assert r.entities and all(v.canonical_name and v.entity_id for v in r.entities.values())
    assert all(k == v.canonical_name for k, v in r.entities.items())
    assert r.chunks and all(c.text for c in r.chunks.values())
    assert all(x.scores is None or x.scores.final >= 0 for x in r.results)


@covers("MemoryApi.recall_memories", "Hindsight.recall")
def test_recall_tag_groups(client, seeded):
    r = client.recall(seeded, "ticket outage", tag_groups=[{"tags": ["team:ops"], "match": "any_strict"}])
    assert r.results and all("team:ops" in (x.tags or []) for x in r.results)
    r = client.recall(seeded, "ticket outage", tag_groups=[{"not": {"tags": ["team:ops"], "match": "any_strict"}}])
    assert all("team:ops" not in (x.tags or []) for x in r.results)


@covers("MemoryApi.recall_memories")
def test_recall_raw_body_with_nulls(client, run, seeded):
    # Every optional field as an explicit null, as the generated models send them.
    req = M.RecallRequest(query="Alice", types=None, tags=None, tag_groups=None, min_scores=None,
                          temporal_window=None, query_timestamp=None, prefer_observations=None,
                          include=M.IncludeOptions(entities=None, chunks=None, source_facts=None))
    r = run(client.memory.recall_memories(seeded, req))
    assert r.results and r.entities is None


# --- reflect ------------------------------------------------------------------------------


@covers("MemoryApi.reflect", "Hindsight.reflect")
def test_reflect(client, seeded):
    r = client.reflect(seeded, "Where does Alice live and what does she drink?", budget="mid", context="a quiz",
                       max_tokens=800, tags=["user:alice"], include_facts=True, include_tool_calls=True)
    assert r.text
    assert r.based_on is not None and r.based_on.memories
    assert all(m.text for m in r.based_on.memories)
    assert r.trace is not None and isinstance(r.trace.tool_calls, list)
    plain = client.reflect(seeded, "Where does Alice live?")
    assert plain.text and plain.based_on is None


@covers("MemoryApi.reflect", "Hindsight.reflect")
def test_reflect_response_schema(client, seeded):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    r = client.reflect(seeded, "Which city does Alice live in?", response_schema=schema)
    assert r.text
    assert r.structured_output is not None and isinstance(r.structured_output.get("city"), str)


@covers("MemoryApi.reflect", "DirectivesApi.create_directive")
def test_reflect_applies_directives(client, run, seeded):
    # Directives go into the reflect agent's instructions (a Go test with a
    # fake LLM checks the prompt); the offline provider cannot follow free
    # text, so here the answer's based_on shows the directive was applied.
    d = client.create_directive(seeded, name="Sign-off", content="Always end the answer with the word OVER.")
    tagged = client.create_directive(seeded, name="Ops only", content="Mention the ticket.", tags=["team:ops"])
    r = client.reflect(seeded, "What does Alice drink?", include_facts=True, tags=["user:alice"])
    applied = {x.id for x in r.based_on.directives}
    assert d.id in applied and tagged.id not in applied
    r = client.reflect(seeded, "What does Alice drink?", include_facts=True, apply_all_directives=True)
    assert {d.id, tagged.id} <= {x.id for x in r.based_on.directives}
    client.delete_directive(seeded, d.id)
    client.delete_directive(seeded, tagged.id)


# --- memories -------------------------------------------------------------------------------


@covers("MemoryApi.list_memories", "Hindsight.list_memories")
def test_list_memories(client, seeded):
    out = client.list_memories(seeded, limit=2)
    assert out.total >= 3 and out.limit == 2 and out.offset == 0 and len(out.items) == 2
    m = out.items[0]
    assert m.id and m.text and m.fact_type in ("world", "experience", "observation")
    assert isinstance(m.entities, str) and isinstance(m.tags, list)
    q = client.list_memories(seeded, search_query="inc-48213")
    assert q.total >= 1 and all("INC-48213" in m.text for m in q.items)
    tagged = client.list_memories(seeded, tags=["team:ops"], tags_match="any_strict")
    assert tagged.total >= 1 and all("team:ops" in m.tags for m in tagged.items)
    doc = client.list_memories(seeded, document_id="doc-alice")
    assert doc.total >= 2 and all(m.document_id == "doc-alice" for m in doc.items)
    win = client.list_memories(seeded, time_field="mentioned_at", start_date="2024-03-01", end_date="2024-03-04")
    assert win.total >= 1


@covers("MemoryApi.get_memory")
def test_get_memory(client, run, seeded):
    m = run(client.memory.list_memories(seeded, limit=1)).items[0]
    got = run(client.memory.get_memory(seeded, m.id))
    assert got["id"] == m.id and got["text"] == m.text


@covers("MemoryApi.update_memory", "MemoryApi.get_observation_history")
def test_update_memory_and_history(client, run):
    bank = fresh_bank()
    client.retain(bank, "Gina's favourite colour is teal.")
    m = run(client.memory.list_memories(bank)).items[0]
    got = run(client.memory.update_memory(bank, m.id, M.UpdateMemoryRequest(text="Gina's favourite colour is navy.",
                                                                           context="corrected")))
    assert got["text"] == "Gina's favourite colour is navy." and got["context"] == "corrected"
    hist = run(client.memory.get_observation_history(bank, m.id))
    assert isinstance(hist, list) and hist and hist[0]["new_text"] == "Gina's favourite colour is navy."
    inv = run(client.memory.update_memory(bank, m.id, M.UpdateMemoryRequest(state="invalidated", reason="wrong")))
    assert inv["state"] == "invalidated"


@covers("MemoryApi.clear_bank_memories")
def test_clear_bank_memories(client, run):
    bank = fresh_bank()
    client.retain(bank, "Hugo plays the cello on Sundays.")
    out = run(client.memory.clear_bank_memories(bank))
    assert out.success is True
    assert run(client.memory.list_memories(bank)).total == 0


@covers("MemoryApi.clear_memory_observations")
def test_clear_memory_observations(client, run, seeded):
    m = run(client.memory.list_memories(seeded, limit=1)).items[0]
    out = run(client.memory.clear_memory_observations(seeded, m.id))
    assert out.deleted_count >= 0


@covers("MemoryApi.list_tags")
def test_list_tags(client, run, seeded):
    out = run(client.memory.list_tags(seeded))
    tags = {t.tag: t.count for t in out.items}
    # Observations carry their facts' tags, and count too.
    assert tags.get("user:alice", 0) >= 2 and tags.get("team:ops", 0) >= 1 and out.total == len(out.items)
    q = run(client.memory.list_tags(seeded, q="user*"))
    assert [t.tag for t in q.items] == ["user:alice"]


@covers("MemoryApi.get_graph")
def test_graph(client, run, seeded):
    g = run(client.memory.get_graph(seeded, limit=50))
    assert g.total_units >= 3 and g.limit == 50
    assert g.nodes and all(n.data.id for n in g.nodes)
    assert g.table_rows and g.table_rows[0].id


@covers("MemoryApi.list_observation_scopes")
def test_observation_scopes(client, run, seeded):
    out = run(client.memory.list_observation_scopes(seeded))
    assert out.total == len(out.scopes) and out.limit >= 1
    assert all(isinstance(s.tags, list) and s.count >= 0 for s in out.scopes)


@covers("MemoryApi.dry_run_extract_memories")
def test_dry_run_extract(client, run, seeded):
    out = run(client.memory.dry_run_extract_memories(seeded, M.DryRunExtractRequest(
        content=M.Content("Ivan moved to Oslo in 2023. He works at Fjord Labs."))))
    assert out.facts and all(f.text and f.fact_type for f in out.facts)
    assert out.chunks and out.chunks[0].fact_count >= 1
    # Nothing was stored.
    assert run(client.memory.list_memories(seeded, q="Fjord")).total == 0


@covers("MemoryApi.preview_consolidation_strategies")
def test_preview_consolidation_strategies(client, run, seeded):
    out = run(client.memory.preview_consolidation_strategies(seeded, M.ConsolidationStrategiesPreviewRequest(
        strategies=[M.ConsolidationStrategySpec(scopes=[M.ConsolidationScopePattern(tags=["user:alice"])])])))
    assert len(out.strategies) == 1 and out.scopes_scanned >= 1
    assert out.strategies[0].rules[0].match_count >= 1


@covers("MemoryApi.get_bank_attachment", "FilesApi.file_retain", "Hindsight.retain_files")
def test_files_and_attachments(client, run, tmp_path):
    bank = fresh_bank()
    p = tmp_path / "notes.md"
    p.write_text("# Notes\n\nJulia's passport expires in 2031.\n")
    out = client.retain_files(bank, [p], context="uploads")
    assert len(out.operation_ids) == 1
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(bank, out.operation_ids[0])))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed"
    docs = run(client.documents.list_documents(bank)).items
    assert len(docs) == 1
    doc = run(client.documents.get_document(bank, docs[0].id))
    assert doc.attachments and doc.attachments[0].filename == "notes.md"
    data = run(client.memory.get_bank_attachment(bank, doc.attachments[0].id))
    assert bytes(data).startswith(b"# Notes")


# --- entities ---------------------------------------------------------------------------


@covers("EntitiesApi.list_entities", "EntitiesApi.get_entity")
def test_entities(client, run, seeded):
    out = run(client.entities.list_entities(seeded))
    assert out.total >= 1 and out.limit == 100 and out.offset == 0
    alice = next(e for e in out.items if e.canonical_name == "Alice")
    assert alice.mention_count >= 1 and alice.id
    det = run(client.entities.get_entity(seeded, alice.id))
    assert det.canonical_name == "Alice" and isinstance(det.observations, list)


@covers("EntitiesApi.get_entity_graph")
def test_entity_graph(client, run, seeded):
    g = run(client.entities.get_entity_graph(seeded, limit=100))
    assert g.total_entities >= 1 and g.limit == 100
    assert all(n.data.id and n.data.label for n in g.nodes)
    assert all(e.data.source and e.data.target for e in g.edges)


# --- documents and chunks ---------------------------------------------------------------


@covers("DocumentsApi.list_documents", "DocumentsApi.get_document", "DocumentsApi.list_document_chunks",
        "DocumentsApi.get_chunk", "DocumentsApi.get_document_history")
def test_documents(client, run, seeded):
    out = run(client.documents.list_documents(seeded))
    assert out.total == 2 and {d.id for d in out.items} == {"doc-alice", "doc-bob"}
    d = run(client.documents.get_document(seeded, "doc-alice"))
    assert d.id == "doc-alice" and d.bank_id == seeded and d.memory_unit_count >= 2
    ch = run(client.documents.list_document_chunks(seeded, "doc-alice"))
    assert ch.total >= 1 and ch.items[0].chunk_text and ch.items[0].document_id == "doc-alice"
    one = run(client.documents.get_chunk(ch.items[0].chunk_id))
    assert one.chunk_id == ch.items[0].chunk_id and one.bank_id == seeded
    h = run(client.documents.get_document_history(seeded, "doc-alice"))
    assert h.document_id == "doc-alice" and h.total >= 1 and h.items[0].kind


@covers("DocumentsApi.update_document")
def test_update_document(client, run):
    bank = fresh_bank()
    client.retain(bank, "Kai's bike is red.", document_id="kai")
    out = run(client.documents.update_document(bank, "kai", M.UpdateDocumentRequest(tags=["people"])))
    assert out.success is True
    assert run(client.documents.get_document(bank, "kai")).tags == ["people"]


@covers("DocumentsApi.delete_document")
def test_delete_document(client, run):
    bank = fresh_bank()
    client.retain(bank, "Lena owns two kayaks.", document_id="lena")
    out = run(client.documents.delete_document(bank, "lena"))
    assert out.success is True and out.document_id == "lena" and out.memory_units_deleted >= 1 and out.message
    with pytest.raises(ApiException) as e:
        run(client.documents.get_document(bank, "lena"))
    assert e.value.status == 404


@covers("DocumentsApi.reprocess_document")
def test_reprocess_document(client, run):
    bank = fresh_bank()
    client.retain(bank, "Milo teaches chemistry.", document_id="milo")
    out = run(client.documents.reprocess_document(bank, "milo"))
    assert out.success is True and out.operation_id and out.items_count >= 1
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(bank, out.operation_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed"


# --- mental models ---------------------------------------------------------------------


@covers("MentalModelsApi.create_mental_model", "MentalModelsApi.get_mental_model",
        "MentalModelsApi.list_mental_models", "MentalModelsApi.refresh_mental_model",
        "MentalModelsApi.get_mental_model_history", "Hindsight.create_mental_model", "Hindsight.get_mental_model",
        "Hindsight.list_mental_models", "Hindsight.refresh_mental_model", "Hindsight.get_mental_model_history")
def test_mental_models(client, run, seeded):
    created = client.create_mental_model(seeded, name="Alice profile " + uuid.uuid4().hex[:6],
                                         source_query="Where does Alice live?", tags=["user:alice"])
    assert created.operation_id and created.mental_model_id
    mm_id = created.mental_model_id
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(seeded, created.operation_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed"
    mm = client.get_mental_model(seeded, mm_id)
    assert mm.id == mm_id and mm.bank_id == seeded and mm.source_query == "Where does Alice live?"
    assert mm.content and mm.tags == ["user:alice"]
    lst = client.list_mental_models(seeded)
    assert lst.total >= 1 and any(x.id == mm_id for x in lst.items)
    ref = client.refresh_mental_model(seeded, mm_id)
    assert ref.operation_id and ref.status
    wait_until(lambda: run(client.operations.get_operation_status(seeded, ref.operation_id)).status == "completed",
               timeout=60)
    hist = client.get_mental_model_history(seeded, mm_id)
    assert isinstance(hist, list) and len(hist) >= 1


@covers("MentalModelsApi.update_mental_model", "MentalModelsApi.clear_mental_model",
        "MentalModelsApi.delete_mental_model", "Hindsight.update_mental_model", "Hindsight.clear_mental_model",
        "Hindsight.delete_mental_model")
def test_mental_model_edit_clear_delete(client, run, seeded):
    created = client.create_mental_model(seeded, name="Edit me " + uuid.uuid4().hex[:6], source_query="What about Bob?")
    mm_id = created.mental_model_id
    upd = client.update_mental_model(seeded, mm_id, name="Edited " + uuid.uuid4().hex[:6], tags=["team:ops"])
    assert upd.name.startswith("Edited") and upd.tags == ["team:ops"]
    cleared = client.clear_mental_model(seeded, mm_id)
    assert cleared.id == mm_id and not cleared.content
    client.delete_mental_model(seeded, mm_id)
    with pytest.raises(ApiException) as e:
        client.get_mental_model(seeded, mm_id)
    assert e.value.status == 404


@covers("MentalModelsApi.dry_run_refresh_mental_model", "Hindsight.dry_run_refresh_mental_model")
def test_mental_model_dry_run(client, run, seeded):
    created = client.create_mental_model(seeded, name="Dry " + uuid.uuid4().hex[:6], source_query="What does Alice drink?")
    out = client.dry_run_refresh_mental_model(seeded, created.mental_model_id)
    assert out.mental_model_id == created.mental_model_id and out.candidate_content
    assert out.would_persist in (True, False)


# --- directives -----------------------------------------------------------------------------


@covers("DirectivesApi.create_directive", "DirectivesApi.get_directive", "DirectivesApi.list_directives",
        "DirectivesApi.update_directive", "DirectivesApi.delete_directive", "Hindsight.create_directive",
        "Hindsight.get_directive", "Hindsight.list_directives", "Hindsight.update_directive",
        "Hindsight.delete_directive")
def test_directives(client, run):
    bank = fresh_bank()
    client.create_bank(bank)
    d = client.create_directive(bank, name="Tone", content="Be brief.", priority=3, tags=["style"])
    assert d.id and d.bank_id == bank and d.priority == 3 and d.is_active is True and d.tags == ["style"]
    assert client.get_directive(bank, d.id).content == "Be brief."
    lst = client.list_directives(bank)
    assert lst.total == 1 and lst.items[0].id == d.id
    upd = client.update_directive(bank, d.id, content="Be very brief.", is_active=False)
    assert upd.content == "Be very brief." and upd.is_active is False
    assert run(client.directives.list_directives(bank, active_only=True)).total == 0
    client.delete_directive(bank, d.id)
    with pytest.raises(ApiException) as e:
        client.get_directive(bank, d.id)
    assert e.value.status == 404


# --- operations -------------------------------------------------------------------------


@covers("OperationsApi.list_operations", "OperationsApi.get_operation_status")
def test_operations_list_and_get(client, run):
    bank = fresh_bank()
    r = client.retain(bank, "Nora sails on Lake Geneva.", retain_async=True)
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(bank, r.operation_id)))
                    .status == "completed" and s, timeout=60)
    assert op and op.operation_id == r.operation_id and op.operation_type == "retain"
    lst = run(client.operations.list_operations(bank))
    assert lst.bank_id == bank and lst.total >= 1
    item = next(o for o in lst.operations if o.id == r.operation_id)
    assert item.task_type == "retain" and item.items_count == 1 and item.status == "completed"
    with pytest.raises(ApiException) as e:
        run(client.operations.get_operation_status(bank, "not-a-uuid"))
    assert e.value.status == 400


@covers("OperationsApi.cancel_operation", "OperationsApi.retry_operation", "OperationsApi.delete_operation")
def test_operations_cancel_retry_delete(client, run, url, admin_key):
    bank = fresh_bank()
    client.retain(bank, "Uma repairs vintage radios.")
    done = run(client.banks.trigger_consolidation(bank))
    wait_until(lambda: run(client.operations.get_operation_status(bank, done.operation_id)).status == "completed", timeout=60)
    # Cancelling a finished operation is refused as Hindsight refuses it.
    with pytest.raises(ApiException) as e:
        run(client.operations.cancel_operation(bank, done.operation_id))
    assert e.value.status == 409
    # Pause consolidation (memstream's bank field) so the next run stays pending.
    pause(url, admin_key, bank, "paused")
    client.retain(bank, "Uma also collects stamps.")
    pending = run(client.banks.trigger_consolidation(bank))
    c = run(client.operations.cancel_operation(bank, pending.operation_id))
    assert c.success is True and c.operation_id == pending.operation_id
    assert run(client.operations.get_operation_status(bank, pending.operation_id)).status == "cancelled"
    retry = run(client.operations.retry_operation(bank, pending.operation_id))
    assert retry.success is True and retry.operation_id == pending.operation_id
    pause(url, admin_key, bank, "running")
    wait_until(lambda: run(client.operations.get_operation_status(bank, pending.operation_id)).status == "completed", timeout=60)
    d = run(client.operations.delete_operation(bank, pending.operation_id))
    assert d.success is True
    assert run(client.operations.get_operation_status(bank, pending.operation_id)).status == "not_found"


def pause(url, key, bank, state):
    import urllib.request

    req = urllib.request.Request(f"{url}/v1/default/banks/{bank}", method="PATCH", data=json.dumps({"consolidation": state}).encode(),
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200


# --- webhooks -------------------------------------------------------------------------


@covers("WebhooksApi.create_webhook", "WebhooksApi.list_webhooks", "WebhooksApi.update_webhook",
        "WebhooksApi.list_webhook_deliveries", "WebhooksApi.delete_webhook")
def test_webhooks(client, run, webhook_sink):
    bank = fresh_bank()
    client.create_bank(bank)
    wh = run(client.webhooks.create_webhook(bank, M.CreateWebhookRequest(
        url=webhook_sink.url, secret="s3cret", event_types=["retain.completed"])))
    assert wh.id and wh.bank_id == bank and wh.enabled is True and wh.event_types == ["retain.completed"]
    lst = run(client.webhooks.list_webhooks(bank))
    assert lst.total == 1 and lst.items[0].id == wh.id
    client.retain(bank, "Oscar's train leaves at 9.")
    got = wait_until(lambda: webhook_sink.received, timeout=30)
    assert got, "no delivery"
    body, sig = got[0]
    assert json.loads(body)["event"] == "retain.completed" and webhook_sink.verify(body, sig, "s3cret")
    # The server marks the delivery once the sink has answered, a moment
    # after the sink has the body.
    def delivered():
        d = run(client.webhooks.list_webhook_deliveries(bank, wh.id))
        return d if d.items and d.items[0].status == "delivered" else None
    dl = wait_until(delivered, timeout=10)
    assert dl and dl.items[0].event_type == "retain.completed", "delivery not marked delivered"
    upd = run(client.webhooks.update_webhook(bank, wh.id, M.UpdateWebhookRequest(enabled=False)))
    assert upd.enabled is False
    assert run(client.webhooks.delete_webhook(bank, wh.id)).success is True


# --- bank templates, transfer, files ------------------------------------------------------


@covers("BankTemplatesApi.export_bank_template", "BankTemplatesApi.import_bank_template",
        "BankTemplatesApi.get_bank_template_schema")
def test_bank_templates(client, run, seeded):
    from hindsight_client_api.api.bank_templates_api import BankTemplatesApi

    api = BankTemplatesApi(client._api_client)
    schema = run(api.get_bank_template_schema())
    assert "properties" in schema
    client.create_directive(seeded, name="Export me", content="Cite sources.")
    man = run(api.export_bank_template(seeded))
    assert man.version and any(d.name == "Export me" for d in (man.directives or []))
    target = fresh_bank("tpl")
    out = run(api.import_bank_template(target, man))
    assert out.bank_id == target and out.config_applied in (True, False) and out.directives_created
    dry = run(api.import_bank_template(fresh_bank("tpl"), man, dry_run=True))
    assert dry.dry_run is True


@covers("BankTransferApi.export_bank_transfer", "BankTransferApi.import_bank_transfer",
        "DocumentTransferApi.download_file", "Hindsight.export_bank", "Hindsight.import_bank")
def test_bank_export_import(client, run, seeded):
    archive = client.export_bank(seeded, timeout=60, poll_interval=0.2)
    assert isinstance(archive, (bytes, bytearray)) and len(archive) > 0
    target = fresh_bank("imp")
    op_id = client.import_bank(seeded, archive, target_bank_id=target)
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(seeded, op_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed", op
    for t in ("world", "experience"):
        assert run(client.memory.list_memories(target, type=t)).total == run(client.memory.list_memories(seeded, type=t)).total
    # A bank that exists is never overwritten.
    with pytest.raises(ApiException) as e:
        client.import_bank(seeded, archive, target_bank_id=target)
    assert e.value.status == 409


@covers("BankTransferApi.clone_bank", "Hindsight.clone_bank")
def test_clone_bank(client, run, seeded):
    target = fresh_bank("clone")
    op_id = client.clone_bank(seeded, target)
    op = wait_until(lambda: (s := run(client.operations.get_operation_status(seeded, op_id)))
                    .status in ("completed", "failed") and s, timeout=60)
    assert op and op.status == "completed", op
    assert run(client.documents.list_documents(target)).total == 2


# --- knowledge base ---------------------------------------------------------------------


@covers("KnowledgeBaseApi.create_knowledge_folder", "KnowledgeBaseApi.create_knowledge_page",
        "KnowledgeBaseApi.get_knowledge_base_tree", "KnowledgeBaseApi.get_knowledge_page",
        "KnowledgeBaseApi.search_knowledge_base", "KnowledgeBaseApi.update_knowledge_node",
        "KnowledgeBaseApi.export_knowledge_base", "KnowledgeBaseApi.delete_knowledge_node",
        "Hindsight.create_knowledge_folder", "Hindsight.create_knowledge_page", "Hindsight.get_knowledge_base_tree",
        "Hindsight.get_knowledge_page", "Hindsight.search_knowledge_base", "Hindsight.update_knowledge_node",
        "Hindsight.export_knowledge_base", "Hindsight.delete_knowledge_node")
def test_knowledge_base(client, run, seeded):
    folder = client.create_knowledge_folder(seeded, "People " + uuid.uuid4().hex[:6])
    assert folder.kind == "folder" and folder.id
    page = client.create_knowledge_page(seeded, "Alice " + uuid.uuid4().hex[:6], "Where does Alice live?",
                                        parent_id=folder.id)
    assert page.page_id and page.mental_model_id
    tree = client.get_knowledge_base_tree(seeded)
    f = next(n for n in tree.roots if n.id == folder.id)
    assert any(c.id == page.page_id and c.kind == "page" for c in f.children)
    wait_until(lambda: client.get_knowledge_page(seeded, page.page_id).body, timeout=60)
    p = client.get_knowledge_page(seeded, page.page_id)
    assert p.id == page.page_id and "Lisbon" in p.markdown
    hits = client.search_knowledge_base(seeded, "Lisbon")
    assert hits.total >= 1 and hits.results[0].snippet
    node = client.update_knowledge_node(seeded, page.page_id, name="Alice renamed " + uuid.uuid4().hex[:6])
    assert node.name.startswith("Alice renamed")
    bundle = client.export_knowledge_base(seeded)
    assert any(fi.path.endswith(".md") for fi in bundle.files)
    client.delete_knowledge_node(seeded, folder.id)
    assert all(n.id != folder.id for n in client.get_knowledge_base_tree(seeded).roots)


# --- audit logs and LLM traces ----------------------------------------------------------


@covers("AuditApi.list_audit_logs", "AuditApi.get_audit_log", "AuditApi.audit_log_stats")
def test_audit_logs(client, run):
    bank = fresh_bank()
    client.retain(bank, "Pia bakes sourdough.")
    lst = run(client.audit.list_audit_logs(bank))
    assert lst.bank_id == bank and lst.total >= 1
    entry = next(e for e in lst.items if e.action == "retain")
    assert entry.transport == "http"
    one = run(client.audit.get_audit_log(bank, entry.id))
    assert one.id == entry.id and one.action == "retain"
    st = run(client.audit.audit_log_stats(bank, period="1d"))
    assert st.bank_id == bank and sum(b.total for b in st.buckets) >= 1

    # A bank that turns its audit log off (Hindsight's per-bank override)
    # gets no rows from its writes; the list still answers, with what is kept.
    quiet = fresh_bank()
    client.create_bank(quiet)
    assert client.update_bank_config(quiet, audit_log_enabled=False)["config"]["audit_log_enabled"] is False
    client.retain(quiet, "Pia bakes rye.")
    client.recall(quiet, "what does Pia bake?")
    lst = run(client.audit.list_audit_logs(quiet))
    assert {e.action for e in lst.items} & {"retain", "recall"} == set(), [e.action for e in lst.items]
    client.update_bank_config(quiet, audit_log_enabled=True)
    client.retain(quiet, "Pia bakes spelt.")
    assert any(e.action == "retain" for e in run(client.audit.list_audit_logs(quiet, action="retain")).items)


@covers("LLMTracesApi.list_llm_requests", "LLMTracesApi.llm_request_stats")
def test_llm_traces(run, admin_key):
    # A server whose LLM is a fake OpenAI-compatible one (MEMSTREAM_LLM_URL):
    # the main server's offline providers make no LLM calls to trace.
    from hindsight_client_api.api.llm_traces_api import LLMTracesApi

    llm = Hindsight(base_url=os.environ["MEMSTREAM_LLM_URL"], api_key=admin_key, timeout=60)
    try:
        bank = fresh_bank("llm")
        assert llm.retain(bank, "Rosa moved to Porto in May. She teaches chemistry.", document_id="doc-rosa").success
        run(llm.banks.test_bank_llm(bank))
        llm.reflect(bank, "Where does Rosa live?")
        api = LLMTracesApi(llm._api_client)
        # Rows are written in batches, within half a second.
        lst = wait_until(lambda: (r := run(api.list_llm_requests(bank))).total >= 5 and r, timeout=20)
        assert lst and lst.bank_id == bank and lst.limit == 50 and lst.offset == 0
        ops = {e.operation for e in lst.items}
        assert {"retain", "health_check", "reflect"} <= ops, ops
        assert all(e.bank_id == bank and e.started_at and e.ended_at and e.duration_ms is not None for e in lst.items)
        assert all(e.status == "success" for e in lst.items if e.operation in ("retain", "health_check"))
        assert all(e.input is None and e.output is None for e in lst.items)  # prompts are not kept
        extract = next(e for e in lst.items if e.operation == "retain")
        assert extract.scope == "retain_extract_facts" and extract.model and extract.input_tokens and extract.total_tokens
        assert extract.metadata.get("document_id") == "doc-rosa" and extract.llm_info.get("finish_reason") == "stop"
        only = run(api.list_llm_requests(bank, operation="retain", call_type="llm", document_id="doc-rosa", limit=1))
        assert only.total >= 1 and len(only.items) == 1 and only.items[0].operation == "retain"
        runs = run(api.list_llm_requests(bank, group=True))
        # Whole runs: the three health probes share one.
        assert len({e.trace_id for e in runs.items}) == runs.total < len(runs.items)
        assert run(api.list_llm_requests(bank, call_type="embedding")).total == 0
        with pytest.raises(ApiException) as e:
            run(api.list_llm_requests(bank, call_type="chat"))
        assert e.value.status == 400 and "call_type" in e.value.body
        st = run(api.llm_request_stats(bank, period="1d"))
        assert st.bank_id == bank and st.period == "1d" and st.trunc and st.start
        # Consolidation may still be adding requests: at least those listed.
        assert sum(b.total for b in st.buckets) >= lst.total
        assert sum(sum(b.statuses.values()) for b in st.buckets) == sum(b.total for b in st.buckets)
        assert sum(b.tokens.input for b in st.buckets) >= extract.input_tokens
        st = run(api.llm_request_stats(bank, operation="reflect", call_type="llm"))
        assert st.period == "7d" and sum(b.total for b in st.buckets) >= 1
    finally:
        run(llm.aclose())


# --- access control through the client ---------------------------------------------------


@covers()
def test_scoped_key_is_held_to_its_bank(url, run):
    import os

    from hindsight_client import Hindsight

    scoped = Hindsight(base_url=url, api_key=os.environ["MEMSTREAM_BANK_KEY"])
    r = scoped.retain("scoped-bank", "Quinn keeps bees.")
    assert r.success
    with pytest.raises(ApiException) as e:
        scoped.retain("other-bank", "not allowed")
    assert e.value.status == 403
    with pytest.raises(ApiException) as e:
        run(scoped.directives.list_directives("other-bank"))
    assert e.value.status == 403
    with pytest.raises(ApiException) as e:
        run(scoped.operations.list_operations("other-bank"))
    assert e.value.status == 403
    with pytest.raises(ApiException) as e:
        run(scoped.webhooks.list_webhooks("other-bank"))
    assert e.value.status == 403
    banks = run(scoped.banks.list_banks())
    assert {b.bank_id for b in banks.banks} <= {"scoped-bank"}
