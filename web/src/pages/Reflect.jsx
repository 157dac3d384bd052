import { useState } from 'react'
import { adapt, api, bankPath } from '../api.js'
import { Card, Empty, ErrorBox, href, Loading, PageTitle, shortId, TypeBadge } from '../util.jsx'

const UUID = /\[(?:(obs|mem|mm):)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\]/g

// withCitations turns "[uuid]" markers in an answer into numbered links.
export function withCitations(text, bank, order, items) {
  const out = []
  let last = 0
  for (const m of text.matchAll(UUID)) {
    out.push(text.slice(last, m.index))
    const id = m[2]
    if (!order.has(id)) order.set(id, order.size + 1)
    const it = items[id]
    const section = it && it.type !== 'observation' ? 'memories' : m[1] === 'mem' ? 'memories' : 'observations'
    out.push(
      <a key={m.index} className="cite" href={href('b', bank, section, id)} title={it ? it.text : id} data-testid="citation">
        {order.get(id)}
      </a>,
    )
    last = m.index + m[0].length
  }
  out.push(text.slice(last))
  return out
}

export function ReflectPage({ bank }) {
  const [q, setQ] = useState('')
  const [budget, setBudget] = useState('mid')
  const [res, setRes] = useState(null)
  const [items, setItems] = useState({})
  const [err, setErr] = useState(null)
  const [busy, setBusy] = useState(false)
  const run = async (e) => {
    e.preventDefault()
    setBusy(true)
    setErr(null)
    try {
      const r = adapt.reflect(await api('POST', bankPath(bank, '/reflect'), { query: q, budget, include: { facts: {}, tool_calls: { output: true } } }))
      const ids = [...(r.basedOn.memories || []), ...(r.basedOn.observations || []), ...[...r.text.matchAll(UUID)].map((m) => m[2])]
      let got = { ...r.known }
      if (ids.some((id) => !got[id])) {
        try {
          const d = await api('POST', bankPath(bank, '/memories/lookup'), { ids: [...new Set(ids)].filter((id) => !got[id]) })
          for (const m of adapt.list(d).items) got[m.id] = adapt.memory(m)
        } catch {
          // Citations then show their ids; the answer stands on its own.
        }
      }
      setItems(got)
      setRes(r)
    } catch (e2) {
      setErr(e2)
      setRes(null)
    }
    setBusy(false)
  }
  const order = new Map()
  const answer = res ? withCitations(res.text, bank, order, items) : null
  const cited = [...order.keys()]
  const based = res ? [...(res.basedOn.observations || []), ...(res.basedOn.memories || [])] : []
  return (
    <>
      <PageTitle title="Reflect" sub="An agent loop over mental models, observations and facts, shaped by the bank's disposition" />
      <form className="card" onSubmit={run} data-testid="reflect-form">
        <div className="form-row">
          <input className="grow" name="query" placeholder="Ask a question… e.g. Where does Alice live now?" value={q} onChange={(e) => setQ(e.target.value)} required />
          <select value={budget} onChange={(e) => setBudget(e.target.value)} name="budget"><option>low</option><option>mid</option><option>high</option></select>
          <button type="submit" className="primary" disabled={busy} data-testid="reflect-run">{busy ? 'Thinking…' : 'Reflect'}</button>
        </div>
      </form>
      <ErrorBox error={err} />
      {busy && !res ? <Loading what="answer" /> : null}
      {res ? (
        <>
          <Card title="Answer" testid="reflect-answer"
            actions={<span className="muted small">{res.iterations} iterations · stop: {res.stopReason || '—'} · {res.usage.total_tokens || 0} LLM tokens</span>}>
            <div className="answer">{answer}</div>
          </Card>
          <div className="grid2">
            <Card title={`Citations (${cited.length})`} testid="reflect-citations">
              {cited.length === 0 ? <Empty>The answer cites nothing.</Empty> : (
                <ol className="plain cites">
                  {cited.map((id) => (
                    <li key={id}>
                      <span className="cite">{order.get(id)}</span>
                      {items[id] ? <TypeBadge type={items[id].type} /> : null}{' '}
                      <a href={href('b', bank, items[id] && items[id].type !== 'observation' ? 'memories' : 'observations', id)}>{items[id] ? items[id].text : 'item ' + shortId(id)}</a>
                    </li>
                  ))}
                </ol>
              )}
              {based.length > cited.length ? <p className="muted small">based on {based.length} items in all ({(res.basedOn.observations || []).length} observations, {(res.basedOn.memories || []).length} facts)</p> : null}
            </Card>
            <Card title={`Tool calls (${res.toolCalls.length})`} testid="reflect-tools">
              {res.toolCalls.length === 0 ? <Empty>No tool call.</Empty> : (
                <table className="table">
                  <thead><tr><th>#</th><th>tool</th><th>input</th><th className="num">output</th><th className="num">ms</th></tr></thead>
                  <tbody>
                    {res.toolCalls.map((c, i) => (
                      <tr key={i} data-testid="tool-call">
                        <td className="muted">{i + 1}</td>
                        <td><code>{c.tool || c.name}</code></td>
                        <td><code className="wrap">{JSON.stringify(c.input ?? c.arguments ?? {})}</code></td>
                        <td className="num">{c.output_size ?? (c.output ? JSON.stringify(c.output).length : '')}</td>
                        <td className="num">{c.duration_ms ?? ''}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {res.llmCalls.length ? <p className="muted small">{res.llmCalls.length} LLM calls</p> : <p className="muted small">No LLM call: the offline extractive reflector answered.</p>}
            </Card>
          </div>
        </>
      ) : null}
    </>
  )
}
