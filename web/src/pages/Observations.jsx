import { useState } from 'react'
import { adapt, api, bankPath, query } from '../api.js'
import { Card, Empty, ErrorBox, fmtDate, fmtTime, href, Loading, PageTitle, TrendBadge, useLoad } from '../util.jsx'

export function ObservationsPage({ bank }) {
  const [q, setQ] = useState('')
  const [applied, setApplied] = useState('')
  const list = useLoad(() => api('GET', bankPath(bank, '/observations') + query({ q: applied, limit: 200 })).then(adapt.list), [bank, applied])
  const items = list.data ? list.data.items.map(adapt.observation) : []
  items.sort((a, b) => (b.proof_count || 0) - (a.proof_count || 0))
  return (
    <>
      <PageTitle title="Observations" sub="What consolidation folded the facts into: each rests on evidence, carries a trend, and keeps its history" />
      <form className="filters" onSubmit={(e) => { e.preventDefault(); setApplied(q) }}>
        <input placeholder="text contains…" value={q} onChange={(e) => setQ(e.target.value)} name="q" />
        <button type="submit" className="primary">Search</button>
      </form>
      <ErrorBox error={list.error} />
      {list.loading && !list.data ? <Loading what="observations" /> : null}
      {list.data && items.length === 0 ? <Empty>No observation yet: consolidation may still be running, or be paused.</Empty> : null}
      {items.length > 0 ? (
        <Card>
          <table className="table" data-testid="observations-table">
            <thead><tr><th>observation</th><th>trend</th><th className="num">evidence</th><th>updated</th></tr></thead>
            <tbody>
              {items.map((o) => (
                <tr key={o.id} data-testid="observation-row">
                  <td>
                    <a href={href('b', bank, 'observations', o.id)}>{o.text}</a>
                    <div className="sub">{o.entities.map((e) => <span key={e.id || e.name} className="chip">{e.name}</span>)}</div>
                  </td>
                  <td><TrendBadge trend={o.trend} /></td>
                  <td className="num">{o.proof_count}</td>
                  <td className="nowrap muted small">{fmtTime(o.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      ) : null}
    </>
  )
}

const actionLabel = { create: 'created', update: 'updated', invalidate: 'invalidated', merge: 'merged' }

export function ObservationPage({ bank, id }) {
  const o = useLoad(() => api('GET', bankPath(bank, `/observations/${id}`)).then(adapt.observation), [bank, id])
  if (o.error) return <ErrorBox error={o.error} />
  if (!o.data) return <Loading what="observation" />
  const obs = o.data
  return (
    <>
      <PageTitle title={obs.text} sub={`observation · ${obs.proof_count} piece${obs.proof_count === 1 ? '' : 's'} of evidence · ${obs.state}`}>
        <TrendBadge trend={obs.trend} />
      </PageTitle>
      <div className="chips">
        {obs.entities.map((e) => <a key={e.id} className="chip big" href={href('b', bank, 'entities', e.id)}>{e.name}</a>)}
      </div>
      <div className="grid2 wide-left">
        <Card title="Evidence" testid="evidence-card">
          {obs.evidence.length === 0 ? <Empty>No evidence recorded.</Empty> : (
            <ol className="timeline" data-testid="evidence-timeline">
              {obs.evidence.map((e) => (
                <li key={e.memory_id} data-testid="evidence-item">
                  <time>{fmtDate(e.timestamp)}</time>
                  <blockquote>{e.quote}</blockquote>
                  <div className="muted small">
                    relevance {Number(e.relevance).toFixed(2)} · <a href={href('b', bank, 'memories', e.memory_id)}>source fact</a>
                  </div>
                </li>
              ))}
            </ol>
          )}
        </Card>
        <Card title="History" testid="history-card">
          {obs.history.length === 0 ? <Empty>No change recorded.</Empty> : (
            <ol className="history" data-testid="history">
              {obs.history.map((h, i) => (
                <li key={i} className={'h-' + h.action}>
                  <div className="h-head"><b>{actionLabel[h.action] || h.action}</b> <span className="muted small">{fmtTime(h.changed_at)}</span></div>
                  {h.action === 'update' && h.old_text ? (
                    <div className="change">
                      <del>{h.old_text}</del>
                      <span className="arrow">→</span>
                      <ins>{h.new_text}</ins>
                    </div>
                  ) : h.new_text ? <div className="change"><ins>{h.new_text}</ins></div> : h.old_text ? <div className="change"><del>{h.old_text}</del></div> : null}
                  {h.reason ? <div className="muted small">{h.reason}</div> : null}
                </li>
              ))}
            </ol>
          )}
        </Card>
      </div>
      <p className="muted small">occurred {fmtTime(obs.occurred_start)} → {fmtTime(obs.occurred_end)} · created {fmtTime(obs.created_at)} · updated {fmtTime(obs.updated_at)}</p>
    </>
  )
}
