import { useState } from 'react'
import { adapt, api, bankPath, query } from '../api.js'
import { EntityGraph } from '../components/Graph.jsx'
import { Card, Empty, ErrorBox, fmtDate, fmtTime, href, Loading, PageTitle, TypeBadge, useLoad } from '../util.jsx'

export function EntitiesPage({ bank }) {
  const [q, setQ] = useState('')
  const [applied, setApplied] = useState('')
  const list = useLoad(() => api('GET', bankPath(bank, '/entities') + query({ q: applied, limit: 200 })).then(adapt.list), [bank, applied])
  const items = list.data ? list.data.items.map(adapt.entity) : []
  return (
    <>
      <PageTitle title="Entities" sub="Canonical people, places and things, with every alias they were resolved from" />
      <form className="filters" onSubmit={(e) => { e.preventDefault(); setApplied(q) }}>
        <input placeholder="name or alias…" value={q} onChange={(e) => setQ(e.target.value)} name="q" />
        <button type="submit" className="primary">Search</button>
      </form>
      <ErrorBox error={list.error} />
      {list.loading && !list.data ? <Loading what="entities" /> : null}
      {list.data && items.length === 0 ? <Empty>No entity.</Empty> : null}
      {items.length > 0 ? (
        <Card>
          <table className="table" data-testid="entities-table">
            <thead><tr><th>entity</th><th>kind</th><th>aliases</th><th className="num">mentions</th><th>last seen</th></tr></thead>
            <tbody>
              {items.map((e) => (
                <tr key={e.id} data-testid="entity-row">
                  <td><a href={href('b', bank, 'entities', e.id)}>{e.name}</a></td>
                  <td className="muted">{e.kind}</td>
                  <td>{e.aliases.filter((a) => a !== e.name).map((a) => <span key={a} className="chip">{a}</span>)}</td>
                  <td className="num">{e.mention_count}</td>
                  <td className="nowrap muted small">{fmtDate(e.last_seen)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      ) : null}
    </>
  )
}

function Merge({ bank, entity, onDone }) {
  const [q, setQ] = useState('')
  const [target, setTarget] = useState('')
  const [msg, setMsg] = useState(null)
  const cands = useLoad(
    () => (q.trim() ? api('GET', bankPath(bank, '/entities') + query({ q, limit: 10 })).then(adapt.list) : Promise.resolve({ items: [] })),
    [bank, q],
  )
  const options = (cands.data ? cands.data.items.map(adapt.entity) : []).filter((e) => e.id !== entity.id)
  const merge = () => {
    if (!target) return
    const t = options.find((e) => e.id === target)
    if (!window.confirm(`Merge ${entity.name} into ${t ? t.name : target}? Its facts and aliases move there.`)) return
    api('POST', bankPath(bank, `/entities/${entity.id}/merge`), { into: target }).then(
      () => { window.location.hash = href('b', bank, 'entities', target); onDone() },
      (e) => setMsg(e),
    )
  }
  return (
    <div className="form-row">
      <input placeholder="find the entity to merge into…" value={q} onChange={(e) => setQ(e.target.value)} />
      <select value={target} onChange={(e) => setTarget(e.target.value)}>
        <option value="">choose…</option>
        {options.map((e) => <option key={e.id} value={e.id}>{e.name} ({e.kind}, {e.mention_count} mentions)</option>)}
      </select>
      <button onClick={merge} disabled={!target}>Merge into</button>
      <ErrorBox error={msg} />
    </div>
  )
}

export function EntityPage({ bank, id }) {
  const e = useLoad(() => api('GET', bankPath(bank, `/entities/${id}`)).then(adapt.entity), [bank, id])
  const g = useLoad(() => api('GET', bankPath(bank, `/entities/${id}/graph`) + query({ limit: 12 })), [bank, id])
  const [alias, setAlias] = useState('')
  const [err, setErr] = useState(null)
  if (e.error) return <ErrorBox error={e.error} />
  if (!e.data) return <Loading what="entity" />
  const ent = e.data
  const addAlias = (ev) => {
    ev.preventDefault()
    api('POST', bankPath(bank, `/entities/${id}/aliases`), { alias }).then(() => { setAlias(''); setErr(null); e.reload() }, setErr)
  }
  return (
    <>
      <PageTitle title={ent.name} sub={`${ent.kind} · ${ent.mention_count} mentions · seen ${fmtDate(ent.first_seen)} – ${fmtDate(ent.last_seen)}`}>
        <a className="button" href={href('b', bank, 'memories') + '?entity=' + id}>Memories mentioning it</a>
      </PageTitle>
      <div className="grid2 wide-left">
        <Card title="Neighbourhood" testid="graph-card">
          <ErrorBox error={g.error} />
          {g.data ? <EntityGraph graph={g.data} onOpen={(n) => (window.location.hash = href('b', bank, 'entities', n))} /> : g.loading ? <Loading /> : null}
          <p className="muted small">Entities that share facts with {ent.name}; closer and thicker means more shared facts. Click one to open it.</p>
        </Card>
        <div>
          <Card title="Aliases" testid="aliases">
            <div className="chips">{ent.aliases.map((a) => <span key={a} className="chip big">{a}</span>)}</div>
            <form className="form-row" onSubmit={addAlias}>
              <input placeholder="add an alias (e.g. a nickname)" value={alias} onChange={(ev) => setAlias(ev.target.value)} />
              <button type="submit" disabled={!alias.trim()}>Add</button>
            </form>
            <ErrorBox error={err} />
          </Card>
          <Card title="Merge">
            <p className="muted small">Two entities that are one: merge this one into the other. Its facts and aliases move.</p>
            <Merge bank={bank} entity={ent} onDone={e.reload} />
          </Card>
        </div>
      </div>
      <Card title="Recent memories" actions={<a href={href('b', bank, 'memories') + '?entity=' + id}>all memories mentioning {ent.name}</a>}>
        {ent.memories.length === 0 ? <Empty>None.</Empty> : (
          <table className="table">
            <tbody>
              {ent.memories.slice(0, 12).map((m) => (
                <tr key={m.id}>
                  <td className="nowrap"><TypeBadge type={m.type} /></td>
                  <td><a href={href('b', bank, m.type === 'observation' ? 'observations' : 'memories', m.id)}>{m.text}</a></td>
                  <td className="nowrap muted small">{fmtTime(m.mentioned_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </>
  )
}
