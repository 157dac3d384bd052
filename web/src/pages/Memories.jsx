import { useState } from 'react'
import { adapt, api, bankPath, query } from '../api.js'
import { Card, Empty, ErrorBox, fmtTime, href, Loading, PageTitle, shortId, Tags, TrendBadge, TypeBadge, useLoad } from '../util.jsx'

const PAGE = 50

export function MemoryRow({ bank, m, showScore }) {
  const section = m.type === 'observation' ? 'observations' : 'memories'
  return (
    <tr data-testid="memory-row">
      <td className="nowrap"><TypeBadge type={m.type} /></td>
      <td>
        <a href={href('b', bank, section, m.id)}>{m.text}</a>
        <div className="sub">
          {m.entities.map((e) => (
            <a key={e.id || e.name} className="chip" href={e.id ? href('b', bank, 'entities', e.id) : undefined}>{e.name}</a>
          ))}
          <Tags tags={m.tags} />
          {m.trend ? <TrendBadge trend={m.trend} /> : null}
        </div>
      </td>
      {showScore ? <td className="num">{showScore(m)}</td> : <td className="nowrap muted small">{fmtTime(m.mentioned_at)}</td>}
    </tr>
  )
}

export function MemoriesPage({ bank, params }) {
  const [f, setF] = useState({ q: '', type: '', tags: '', entity: params.get('entity') || '', from: '', to: '' })
  const [applied, setApplied] = useState(f)
  const [offset, setOffset] = useState(0)
  const toISO = (d) => (d ? new Date(d).toISOString() : '')
  const list = useLoad(
    () =>
      api('GET', bankPath(bank, '/memories/list') + query({
        q: applied.q, type: applied.type, tags: applied.tags, entity: applied.entity,
        from: toISO(applied.from), to: toISO(applied.to), limit: PAGE, offset,
      })).then(adapt.list),
    [bank, applied, offset],
  )
  const ents = useLoad(() => api('GET', bankPath(bank, '/entities') + query({ limit: 200 })).then(adapt.list), [bank])
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value })
  const submit = (e) => {
    e.preventDefault()
    setOffset(0)
    setApplied(f)
  }
  const total = list.data ? list.data.total : 0
  return (
    <>
      <PageTitle title="Memories" sub="Facts (world, experience) and observations, newest mention first" />
      <form className="filters" onSubmit={submit} data-testid="memory-filters">
        <input placeholder="text contains…" value={f.q} onChange={set('q')} name="q" />
        <select value={f.type} onChange={set('type')} name="type">
          <option value="">any type</option>
          <option value="world">world</option>
          <option value="experience">experience</option>
          <option value="observation">observation</option>
        </select>
        <input placeholder="tags (comma separated)" value={f.tags} onChange={set('tags')} name="tags" />
        <select value={f.entity} onChange={set('entity')} name="entity">
          <option value="">any entity</option>
          {(ents.data ? ents.data.items : []).map((e) => (
            <option key={e.id} value={e.id}>{e.name}</option>
          ))}
        </select>
        <label className="inline">from <input type="datetime-local" value={f.from} onChange={set('from')} name="from" /></label>
        <label className="inline">to <input type="datetime-local" value={f.to} onChange={set('to')} name="to" /></label>
        <button type="submit" className="primary">Filter</button>
      </form>
      <ErrorBox error={list.error} />
      {list.loading && !list.data ? <Loading what="memories" /> : null}
      {list.data && list.data.items.length === 0 ? <Empty>No memory matches.</Empty> : null}
      {list.data && list.data.items.length > 0 ? (
        <Card>
          <table className="table" data-testid="memories-table">
            <thead><tr><th>type</th><th>text</th><th>mentioned</th></tr></thead>
            <tbody>
              {list.data.items.map(adapt.memory).map((m) => <MemoryRow key={m.id} bank={bank} m={m} />)}
            </tbody>
          </table>
          <div className="pager">
            <span className="muted">{offset + 1}–{Math.min(offset + PAGE, total)} of {total}</span>
            <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Previous</button>
            <button disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>Next</button>
          </div>
        </Card>
      ) : null}
    </>
  )
}

function KV({ rows }) {
  return (
    <dl className="kv">
      {rows.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => (
        <div key={k}><dt>{k}</dt><dd>{v}</dd></div>
      ))}
    </dl>
  )
}

export function MemoryPage({ bank, id }) {
  const [allLinks, setAllLinks] = useState(false)
  const p = useLoad(() => api('GET', bankPath(bank, `/memories/${id}/provenance`)), [bank, id])
  if (p.error) return <ErrorBox error={p.error} />
  if (!p.data) return <Loading what="memory" />
  const d = p.data
  const m = adapt.memory(d.memory)
  const links = d.links || []
  const byType = {}
  for (const l of links) byType[l.link_type] = (byType[l.link_type] || 0) + 1
  return (
    <>
      <PageTitle title={m.text} sub={`${m.type} · ${m.state}${m.invalid_reason ? ' (' + m.invalid_reason + ')' : ''} · id ${m.id}`}>
        <TypeBadge type={m.type} />
      </PageTitle>
      <div className="grid2">
        <Card title="Memory" testid="memory-detail">
          <KV
            rows={[
              ['mentioned at', fmtTime(m.mentioned_at)],
              ['occurred', m.occurred_start ? `${fmtTime(m.occurred_start)} → ${fmtTime(m.occurred_end)}` : ''],
              ['context', m.context],
              ['tags', m.tags.length ? <Tags tags={m.tags} /> : ''],
              ['metadata', Object.keys(m.metadata).length ? <code>{JSON.stringify(m.metadata)}</code> : ''],
              ['proof count', m.proof_count],
            ]}
          />
        </Card>
        <Card title="Source event" testid="memory-event">
          {d.event ? (
            <KV
              rows={[
                ['event id', <code key="e">{d.event.event_key}</code>],
                ['kafka', d.event.topic ? `${d.event.topic} partition ${d.event.partition} offset ${d.event.offset}` : '(retained through the API)'],
                ['ingested at', fmtTime(d.event.ingested_at)],
                ['facts from it', d.event.facts],
                ['message index', d.source_message_index ?? ''],
              ]}
            />
          ) : (
            <Empty>{m.type === 'observation' ? 'Observations come from consolidation, not from one event.' : 'The source event is not recorded.'}</Empty>
          )}
        </Card>
      </div>
      <div className="grid2">
        <Card title="Document">
          {d.document ? (
            <KV rows={[['document id', <code key="d">{d.document.id}</code>], ['context', d.document.context], ['created', fmtTime(d.document.created_at)], ['tags', d.document.tags && d.document.tags.length ? <Tags key="t" tags={d.document.tags} /> : '']]} />
          ) : <Empty>No document.</Empty>}
        </Card>
        <Card title="Entities">
          {(d.entities || []).length ? (
            <div className="chips">
              {d.entities.map((e) => (
                <a key={e.id} className="chip big" href={href('b', bank, 'entities', e.id)}>{e.name} <span className="muted small">{e.kind}</span></a>
              ))}
            </div>
          ) : <Empty>No entity.</Empty>}
        </Card>
      </div>
      <Card title="Chunk" testid="memory-chunk">
        {d.chunk ? (
          <>
            <div className="muted small">chunk {d.chunk.chunk_index} · {d.chunk.speaker || 'no speaker'} · {fmtTime(d.chunk.started_at)}</div>
            <pre className="chunk">{d.chunk.text}</pre>
          </>
        ) : <Empty>No chunk (observations have evidence instead).</Empty>}
      </Card>
      {(d.observations || []).length > 0 ? (
        <Card title="Observations this supports">
          <ul className="plain">
            {d.observations.map((o) => (
              <li key={o.id}><a href={href('b', bank, 'observations', o.id)}>{o.text}</a> <TrendBadge trend={o.trend} /></li>
            ))}
          </ul>
        </Card>
      ) : null}
      <Card title={`Links (${links.length})`} testid="memory-links"
        actions={Object.entries(byType).map(([t, n]) => <span key={t} className={'badge link-' + t}>{t} {n}</span>)}>
        {links.length === 0 ? <Empty>No link.</Empty> : (
          <table className="table compact">
            <thead><tr><th>type</th><th>dir</th><th>memory</th><th className="num">weight</th></tr></thead>
            <tbody>
              {links.slice(0, allLinks ? undefined : 12).map((l, i) => (
                <tr key={i}>
                  <td><span className={'badge link-' + l.link_type}>{l.link_type}</span></td>
                  <td className="muted">{l.direction === 'out' ? '→' : '←'}</td>
                  <td><a href={href('b', bank, l.memory.type === 'observation' ? 'observations' : 'memories', l.memory.id)}>{l.memory.text}</a></td>
                  <td className="num">{Number(l.weight).toFixed(2)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {links.length > 12 ? <button className="more" onClick={() => setAllLinks(!allLinks)}>{allLinks ? 'Show the first 12' : `Show all ${links.length}`}</button> : null}
      </Card>
      <p className="muted small">id {shortId(m.id)} · created {fmtTime(m.created_at)} · updated {fmtTime(m.updated_at)}</p>
    </>
  )
}
