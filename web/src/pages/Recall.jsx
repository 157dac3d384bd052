import { useState } from 'react'
import { adapt, api, bankPath } from '../api.js'
import { Card, Empty, ErrorBox, fmtNum, fmtTime, href, Loading, PageTitle, Tags, TypeBadge } from '../util.jsx'

const ARMS = ['semantic', 'keyword', 'graph', 'temporal']
const TYPES = ['world', 'experience', 'observation']

function Checks({ all, value, onChange, name }) {
  return (
    <span className="checks">
      {all.map((a) => (
        <label key={a} className="check">
          <input
            type="checkbox"
            name={name + '-' + a}
            checked={value.includes(a)}
            onChange={(e) => onChange(e.target.checked ? [...value, a] : value.filter((x) => x !== a))}
          />
          {a}
        </label>
      ))}
    </span>
  )
}

// lookupTexts fetches the text of candidates that did not make the final
// cut, so every arm's column reads as memories, not ids.
async function lookupTexts(bank, ids) {
  if (ids.length === 0) return {}
  const d = await api('POST', bankPath(bank, '/memories/lookup'), { ids })
  const out = {}
  for (const m of adapt.list(d).items) out[m.id] = adapt.memory(m)
  return out
}

export function RecallPage({ bank }) {
  const [f, setF] = useState({
    query: '', types: [], budget: 'mid', max_tokens: 1024, tags: '', tags_match: 'any', query_timestamp: '', arms: [...ARMS], fusion: 'rrf', rerank: true,
  })
  const [res, setRes] = useState(null)
  const [texts, setTexts] = useState({})
  const [err, setErr] = useState(null)
  const [busy, setBusy] = useState(false)
  const [all, setAll] = useState(false)
  const set = (k) => (v) => setF({ ...f, [k]: v && v.target ? (v.target.type === 'checkbox' ? v.target.checked : v.target.value) : v })
  const run = async (e) => {
    e.preventDefault()
    setBusy(true)
    setErr(null)
    const body = {
      query: f.query, budget: f.budget, max_tokens: Number(f.max_tokens) || undefined, trace: true, fusion: f.fusion, rerank: f.rerank,
      tags_match: f.tags_match,
    }
    if (f.types.length) body.types = f.types
    if (f.arms.length && f.arms.length < ARMS.length) body.arms = f.arms
    const tags = f.tags.split(',').map((t) => t.trim()).filter(Boolean)
    if (tags.length) body.tags = tags
    if (f.query_timestamp) body.query_timestamp = new Date(f.query_timestamp).toISOString()
    try {
      const r = adapt.recall(await api('POST', bankPath(bank, '/memories/recall'), body))
      const known = new Set(r.results.map((m) => m.id))
      const missing = [...new Set((r.trace ? r.trace.arms : []).flatMap((a) => a.candidates.map((c) => c.id)))].filter((id) => !known.has(id))
      let t = {}
      try {
        t = await lookupTexts(bank, missing.slice(0, 1000))
      } catch {
        t = {}
      }
      for (const m of r.results) t[m.id] = m
      setTexts(t)
      setAll(false)
      setRes(r)
    } catch (e2) {
      setErr(e2)
      setRes(null)
    }
    setBusy(false)
  }
  const finalRank = {}
  if (res) res.results.forEach((m, i) => (finalRank[m.id] = i + 1))
  return (
    <>
      <PageTitle title="Recall playground" sub="Run a recall with trace on: the ranked results, and what each retriever proposed before fusion" />
      <form className="card playground" onSubmit={run} data-testid="recall-form">
        <div className="form-row">
          <input className="grow" name="query" placeholder="Ask the memory… e.g. Where does Alice live now?" value={f.query} onChange={set('query')} required />
          <button type="submit" className="primary" disabled={busy} data-testid="recall-run">{busy ? 'Recalling…' : 'Recall'}</button>
        </div>
        <div className="opts">
          <label>types <Checks all={TYPES} value={f.types} onChange={set('types')} name="type" /></label>
          <label>arms <Checks all={ARMS} value={f.arms} onChange={set('arms')} name="arm" /></label>
          <label>budget
            <select value={f.budget} onChange={set('budget')} name="budget"><option>low</option><option>mid</option><option>high</option></select>
          </label>
          <label>max tokens <input type="number" min="1" value={f.max_tokens} onChange={set('max_tokens')} name="max_tokens" className="short" /></label>
          <label>fusion
            <select value={f.fusion} onChange={set('fusion')} name="fusion"><option value="rrf">rrf</option><option value="interleave">interleave</option></select>
          </label>
          <label>tags <input value={f.tags} onChange={set('tags')} placeholder="a, b" name="tags" className="short" /></label>
          <label>match
            <select value={f.tags_match} onChange={set('tags_match')} name="tags_match">
              {['any', 'all', 'any_strict', 'all_strict', 'exact'].map((m) => <option key={m}>{m}</option>)}
            </select>
          </label>
          <label>query time <input type="datetime-local" value={f.query_timestamp} onChange={set('query_timestamp')} name="query_timestamp" /></label>
          <label className="check"><input type="checkbox" checked={f.rerank} onChange={set('rerank')} name="rerank" /> rerank</label>
        </div>
      </form>
      <ErrorBox error={err} />
      {busy && !res ? <Loading what="recall" /> : null}
      {res ? (
        <>
          <Card title={`Results (${res.results.length})`} testid="recall-results"
            actions={res.trace ? <span className="muted small">{fmtNum(res.trace.total_ms, 1)} ms · {res.trace.tokens_used} tokens · {res.trace.fused} fused · {res.trace.dropped_by_budget} dropped by budget</span> : null}>
            {res.results.length === 0 ? <Empty>Nothing recalled.</Empty> : (
              <table className="table">
                <thead><tr><th>#</th><th>type</th><th>memory</th><th className="num">final</th>{ARMS.map((a) => <th key={a} className="num">{a}</th>)}</tr></thead>
                <tbody>
                  {res.results.slice(0, all ? undefined : 10).map((m, i) => (
                    <tr key={m.id} data-testid="recall-result">
                      <td className="muted">{i + 1}</td>
                      <td><TypeBadge type={m.type} /></td>
                      <td>
                        <a href={href('b', bank, m.type === 'observation' ? 'observations' : 'memories', m.id)}>{m.text}</a>
                        <div className="sub muted small">{fmtTime(m.mentioned_at)} <Tags tags={m.tags} /></div>
                      </td>
                      <td className="num strong">{fmtNum((m.scores || {}).final)}</td>
                      {ARMS.map((a) => <td key={a} className="num">{(m.scores || {})[a] ? fmtNum(m.scores[a]) : <span className="muted">·</span>}</td>)}
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {res.results.length > 10 ? (
              <button className="more" onClick={() => setAll(!all)}>{all ? 'Show the top 10' : `Show all ${res.results.length}`}</button>
            ) : null}
          </Card>
          {res.trace ? (
            <Card title="Per-arm candidates (trace)" testid="trace">
              <p className="muted small">
                Each retriever's candidates in its own order with its own score. Highlighted: made the final results (#rank).
                Dots: <i className="dot t-world" /> world <i className="dot t-experience" /> experience <i className="dot t-observation" /> observation.
              </p>
              <div className="arms">
                {res.trace.arms.map((a) => (
                  <div key={a.arm} className="arm" data-testid={'arm-' + a.arm}>
                    <h3><span className="arm-name">{a.arm}</span> <span className="muted small">{a.candidates.length} candidates · {fmtNum(a.durationMs, 1)} ms</span></h3>
                    {a.error ? <div className="error">{a.error}</div> : null}
                    {a.candidates.length === 0 ? <Empty>no candidate</Empty> : (
                      <ol>
                        {a.candidates.slice(0, all ? undefined : 12).map((c, i) => (
                          <li key={c.id + i} className={finalRank[c.id] ? 'hit' : ''} data-testid="arm-candidate">
                            <span className="score">{fmtNum(c.score)}</span>
                            <span className="ctext">
                              {texts[c.id] ? <i className={'dot t-' + texts[c.id].type} title={texts[c.id].type} /> : null}
                              {texts[c.id] ? texts[c.id].text : c.id}
                            </span>
                            {finalRank[c.id] ? <span className="rank">#{finalRank[c.id]}</span> : null}
                          </li>
                        ))}
                      </ol>
                    )}
                    {!all && a.candidates.length > 12 ? <div className="muted small">… {a.candidates.length - 12} more</div> : null}
                  </div>
                ))}
              </div>
            </Card>
          ) : null}
        </>
      ) : null}
    </>
  )
}
