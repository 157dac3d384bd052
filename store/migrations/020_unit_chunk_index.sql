-- A chunk's facts by the chunk: the LLM trace names the chunks a retain
-- extraction call carried (llm_requests.metadata.chunk_ids) because the
-- facts' ids only exist once the pipeline has stored them, and reads the
-- call's memories (metadata.memory_ids, the memory_id filter) through
-- this index. Observations have no chunk and stay out of it. IF NOT EXISTS:
-- a large deployment builds it CONCURRENTLY before upgrading
-- (docs/OPERATIONS.md, Upgrades), and the migration then finds it.
CREATE INDEX IF NOT EXISTS memory_units_chunk_idx ON memory_units (chunk_id) WHERE chunk_id IS NOT NULL;
