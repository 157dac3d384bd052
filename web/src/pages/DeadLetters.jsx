import { useState } from 'react'
import { api, bankPath, query } from '../api.js'
import { Card, Empty, ErrorBox, fmtTime, Loading, PageTitle, useLoad } from '../util.jsx'

const pos = (d) => `${d.topic}/${d.partition}/${d.offset}`

function Record({ bank, dl, onReplayed }) {
  const r = useLoad(() => api('GET', bankPath(bank, `/dead-letters/${encodeURIComponent(dl.topic)}/${dl.partition}/${dl.offset}`)), [bank, pos(dl)])
  const [msg, setMsg] = useState(null)
  const replay = () =>
    api('POST', bankPath(bank, '/dead-letters/replay'), { records: [{ topic: dl.topic, partition: dl.partition, offset: dl.offset }] }).then(
      (d) => { setMsg({ ok: `replayed ${d.replayed}` + (d.skipped ? `, ${d.skipped} already replayed` : '') }); onReplayed() },
      (e) => setMsg({ error: e }),
    )
  let pretty = ''
  if (r.data && r.data.record) {
    try {
      pretty = JSON.stringify(JSON.parse(r.data.record.value), null, 2)
    } catch {
      pretty = r.data.record.value
    }
  }
  return (
    <Card title={`Record ${pos(dl)}`} testid="dlq-record"
      actions={<button className="primary" onClick={replay} data-testid="dlq-replay-one">{dl.replayed_at ? 'Replay again' : 'Replay'}</button>}>
      {msg && msg.ok ? <div className="ok">{msg.ok}</div> : null}
      <ErrorBox error={msg && msg.error} />
      <ErrorBox error={r.error} />
      {r.loading && !r.data ? <Loading what="record from the dead-letter topic" /> : null}
      {r.data && !r.data.record ? <Empty>{r.data.note || 'The record is no longer in the dead-letter topic (retention).'}</Empty> : null}
      {r.data && r.data.record ? (
        <>
          <div className="muted small">
            dead-letter topic {r.data.record.topic} partition {r.data.record.partition} offset {r.data.record.offset} · {fmtTime(r.data.record.timestamp)} · key <code>{r.data.record.key}</code>
          </div>
          <h3>Headers</h3>
          <table className="table compact" data-testid="dlq-headers">
            <tbody>
              {r.data.record.headers.map((h, i) => (
                <tr key={i}><td><code>{h.key}</code></td><td className="wrap">{h.value}</td></tr>
              ))}
            </tbody>
          </table>
          <h3>Value <span className="muted small">(secrets and personal data redacted)</span></h3>
          <pre className="chunk" data-testid="dlq-value">{pretty}</pre>
        </>
      ) : null}
    </Card>
  )
}

export function DeadLettersPage({ bank }) {
  const [cls, setCls] = useState('')
  const [sel, setSel] = useState(null)
  const [msg, setMsg] = useState(null)
  const list = useLoad(() => api('GET', bankPath(bank, '/dead-letters') + query({ class: cls, limit: 200 })), [bank, cls])
  const d = list.data
  const replayClass = () => {
    if (!window.confirm(`Replay every dead letter of class ${cls} in bank ${bank} to its source topic?`)) return
    api('POST', bankPath(bank, '/dead-letters/replay'), { class: cls }).then(
      (r) => { setMsg({ ok: `replayed ${r.replayed}` + (r.skipped ? `, ${r.skipped} already replayed` : '') }); list.reload() },
      (e) => setMsg({ error: e }),
    )
  }
  return (
    <>
      <PageTitle title="Dead letters" sub="Records that failed validation or processing, kept in the dead-letter topic with their error headers" />
      <ErrorBox error={list.error} />
      {list.loading && !d ? <Loading what="dead letters" /> : null}
      {d ? (
        <div className="chips classes" data-testid="dlq-classes">
          <button className={'chip big' + (cls === '' ? ' on' : '')} onClick={() => { setCls(''); setSel(null) }}>all <b>{d.classes.reduce((a, c) => a + c.count, 0)}</b></button>
          {d.classes.map((c) => (
            <button key={c.class} className={'chip big' + (cls === c.class ? ' on' : '')} onClick={() => { setCls(c.class); setSel(null) }} data-testid="dlq-class">
              {c.class} <b>{c.count}</b>
            </button>
          ))}
          {cls ? <button onClick={replayClass} data-testid="dlq-replay-class">Replay all {cls}</button> : null}
        </div>
      ) : null}
      {msg && msg.ok ? <div className="ok">{msg.ok}</div> : null}
      <ErrorBox error={msg && msg.error} />
      {d && d.items.length === 0 ? <Empty>No dead letter{cls ? ' of class ' + cls : ''} in this bank.</Empty> : null}
      {d && d.items.length > 0 ? (
        <div className="grid2">
          <Card title={`${d.total} record${d.total === 1 ? '' : 's'}`}>
            <table className="table" data-testid="dlq-table">
              <thead><tr><th>source</th><th>class</th><th>stage</th><th>when</th><th>replayed</th></tr></thead>
              <tbody>
                {d.items.map((it) => (
                  <tr key={pos(it)} className={'clickable' + (sel && pos(sel) === pos(it) ? ' selected' : '')} onClick={() => setSel(it)} data-testid="dlq-row">
                    <td><code>{pos(it)}</code></td>
                    <td><span className="badge b-dlq">{it.error_class}</span></td>
                    <td className="muted">{it.error_stage}</td>
                    <td className="nowrap muted small">{fmtTime(it.created_at)}</td>
                    <td className="nowrap muted small">{it.replayed_at ? fmtTime(it.replayed_at) : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Card>
          {sel ? <Record bank={bank} dl={sel} onReplayed={list.reload} /> : <Empty>Choose a record to see its headers and value.</Empty>}
        </div>
      ) : null}
    </>
  )
}
