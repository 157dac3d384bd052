import { useState } from 'react'
import { adapt, api, bankPath, query } from '../api.js'
import { TimeChart } from '../components/Chart.jsx'
import { Card, Empty, ErrorBox, fmtNum, fmtTime, href, Loading, PageTitle, useLoad } from '../util.jsx'

function useStats(bank) {
  return useLoad(() => api('GET', bankPath(bank, '/stats')), [bank])
}

function BankRow({ bank }) {
  const { data: s } = useStats(bank.id)
  const c = (k) => (s ? fmtNum(s[k]) : '…')
  return (
    <tr>
      <td><a href={href('b', bank.id, 'overview')} data-testid="bank-link">{bank.id}</a></td>
      <td><span className={'state state-' + bank.consolidation}>{bank.consolidation}</span></td>
      <td className="num">{c('events_ingested')}</td>
      <td className="num">{c('facts')}</td>
      <td className="num">{c('observations')}</td>
      <td className="num">{c('entities')}</td>
      <td className="num">{c('mental_models')}</td>
      <td className="num">{c('pending_consolidation')}</td>
      <td className="num">{c('events_dead_lettered')}</td>
    </tr>
  )
}

export function BanksPage({ banks }) {
  return (
    <>
      <PageTitle title="Banks" sub={`${banks.length} bank${banks.length === 1 ? '' : 's'} visible to this key`} />
      {banks.length === 0 ? (
        <Empty>No banks yet. Produce events to Kafka or retain through the API, and they appear here.</Empty>
      ) : (
        <Card>
          <table className="table" data-testid="banks-table">
            <thead>
              <tr>
                <th>bank</th><th>consolidation</th><th className="num">events</th><th className="num">facts</th>
                <th className="num">observations</th><th className="num">entities</th><th className="num">mental models</th>
                <th className="num">backlog</th><th className="num">dead letters</th>
              </tr>
            </thead>
            <tbody>
              {banks.map((b) => <BankRow key={b.id} bank={b} />)}
            </tbody>
          </table>
        </Card>
      )}
    </>
  )
}

const windows = [
  ['15m', 15, 30],
  ['1h', 60, 60],
  ['24h', 1440, 96],
  ['7d', 10080, 84],
]

function Activity({ bank }) {
  const [w, setW] = useState(0)
  const [, minutes, buckets] = windows[w]
  const act = useLoad(() => api('GET', bankPath(bank, '/activity') + query({ minutes, buckets })), [bank, minutes, buckets])
  const data = act.data
  const bs = data ? data.buckets || [] : []
  const stepMin = data ? data.step_seconds / 60 : 1
  const last = bs.slice(-Math.max(1, Math.round(5 / stepMin)))
  const rate = last.length ? last.reduce((a, b) => a + b.events, 0) / (last.length * stepMin) : 0
  const picker = windows.map(([label], i) => (
    <button key={label} className={'seg' + (i === w ? ' on' : '')} onClick={() => setW(i)}>{label}</button>
  ))
  return (
    <>
      <Card title="Consolidation backlog" actions={picker} testid="backlog-card">
        <ErrorBox error={act.error} />
        {act.loading && !data ? <Loading /> : null}
        {data ? (
          <TimeChart testid="backlog-chart" buckets={bs} series={[
            { key: 'backlog_peak', label: 'peak within the bucket', cls: 's-peak', fill: true },
            { key: 'backlog', label: 'facts waiting for consolidation (end of bucket)', cls: 's-backlog' },
          ]} />
        ) : null}
      </Card>
      <Card title="Ingest" actions={data ? <span className="kpi-inline" data-testid="event-rate">{rate.toFixed(2)} events/min <span className="muted">(last 5 min)</span></span> : null}>
        {data ? (
          <TimeChart
            buckets={bs}
            height={150}
            series={[
              { key: 'events', label: 'events ingested', cls: 's-events' },
              { key: 'facts', label: 'facts stored', cls: 's-facts' },
              { key: 'consolidated', label: 'facts consolidated', cls: 's-cons' },
              { key: 'dead_letters', label: 'dead letters', cls: 's-dlq' },
            ]}
          />
        ) : null}
      </Card>
    </>
  )
}

function Disposition({ bank, onSaved }) {
  const [d, setD] = useState({ ...bank.disposition })
  const [msg, setMsg] = useState(null)
  const traits = [
    ['skepticism', 'trusting', 'skeptical'],
    ['literalism', 'flexible', 'literal'],
    ['empathy', 'detached', 'empathetic'],
  ]
  const save = () =>
    api('PATCH', bankPath(bank.id), { disposition: d }).then(
      () => { setMsg({ ok: 'saved' }); onSaved() },
      (e) => setMsg({ error: e }),
    )
  return (
    <Card title="Disposition" actions={<button onClick={save} data-testid="save-disposition">Save</button>}>
      <p className="muted small">Shapes reflect: how much evidence it asks for, how literally it reads questions, how much it weighs feelings.</p>
      {traits.map(([t, lo, hi]) => (
        <label key={t} className="slider">
          <span className="trait">{t}</span>
          <span className="muted small">{lo}</span>
          <input type="range" min="1" max="5" step="1" value={d[t] ?? 3} onChange={(e) => setD({ ...d, [t]: Number(e.target.value) })} />
          <span className="muted small">{hi}</span>
          <b>{d[t] ?? 3}</b>
        </label>
      ))}
      {msg && msg.ok ? <div className="ok">Saved.</div> : null}
      <ErrorBox error={msg && msg.error} />
    </Card>
  )
}

function Policy({ bank, onSaved }) {
  const [text, setText] = useState(JSON.stringify(bank.defensePolicy || {}, null, 2))
  const [msg, setMsg] = useState(null)
  const save = () => {
    let p
    try {
      p = JSON.parse(text)
    } catch (e) {
      setMsg({ error: { code: 'invalid_json', message: e.message } })
      return
    }
    api('PATCH', bankPath(bank.id), { defense_policy: p }).then(
      () => { setMsg({ ok: true }); onSaved() },
      (e) => setMsg({ error: e }),
    )
  }
  return (
    <Card title="Defense policy" actions={<button onClick={save}>Save</button>}>
      <p className="muted small">
        What happens to secrets and personal data found in this bank's events: <code>{'{"default":"redact","labels":{"credit_card":"block"}}'}</code>. Empty means the server default.
      </p>
      <textarea className="code" rows={7} value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} data-testid="policy" />
      {msg && msg.ok ? <div className="ok">Saved.</div> : null}
      <ErrorBox error={msg && msg.error} />
    </Card>
  )
}

export function BankPage({ bank: id, onChange }) {
  const b = useLoad(() => api('GET', bankPath(id)).then(adapt.bank), [id])
  const s = useStats(id)
  const [err, setErr] = useState(null)
  if (b.error) return <ErrorBox error={b.error} />
  if (!b.data) return <Loading what="bank" />
  const bank = b.data
  const paused = bank.consolidation === 'paused'
  const toggle = () =>
    api('PATCH', bankPath(id), { consolidation: paused ? 'running' : 'paused' }).then(
      () => { b.reload(); onChange(); setErr(null) },
      setErr,
    )
  const st = s.data || {}
  const kpis = [
    ['events ingested', 'events_ingested'],
    ['facts', 'facts'],
    ['observations', 'observations'],
    ['entities', 'entities'],
    ['links', 'links'],
    ['documents', 'documents'],
    ['mental models', 'mental_models'],
    ['consolidation backlog', 'pending_consolidation'],
    ['dead letters', 'events_dead_lettered'],
  ]
  return (
    <>
      <PageTitle title={bank.name || id} sub={bank.mission || `bank ${id} · updated ${fmtTime(bank.updatedAt)}`}>
        <span className={'state state-' + bank.consolidation} data-testid="consolidation-state">consolidation {bank.consolidation}</span>
        <button onClick={toggle} className={paused ? 'primary' : ''} data-testid="toggle-consolidation">
          {paused ? 'Resume consolidation' : 'Pause consolidation'}
        </button>
      </PageTitle>
      <ErrorBox error={err} />
      <div className="kpis" data-testid="bank-counts">
        {kpis.map(([label, k]) => (
          <div key={k} className={'kpi' + (k === 'pending_consolidation' && st[k] > 0 ? ' warn' : '') + (k === 'events_dead_lettered' && st[k] > 0 ? ' bad' : '')}>
            <div className="kpi-v">{s.data ? fmtNum(st[k]) : '…'}</div>
            <div className="kpi-l">{label}</div>
          </div>
        ))}
      </div>
      <Activity bank={id} />
      <div className="grid2">
        <Disposition bank={bank} onSaved={b.reload} />
        <Policy bank={bank} onSaved={b.reload} />
      </div>
    </>
  )
}
