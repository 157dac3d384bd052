import { useMemo, useState } from 'react'
import MarkdownIt from 'markdown-it'
import { api, bankPath } from '../api.js'
import { Card, Empty, ErrorBox, fmtTime, href, Loading, PageTitle, Tags, useLoad } from '../util.jsx'

// html:false escapes any HTML in the content: a mental model is generated
// from memory text, which anyone who can publish an event controls.
const md = new MarkdownIt({ html: false, linkify: false, typographer: false })

function renderModel(content, bank) {
  // [obs:uuid] references become links to the observation.
  const withLinks = content.replace(/\[(obs|mem):([0-9a-f-]{36})\]/g, (_, kind, id) =>
    `[${kind === 'obs' ? 'observation' : 'fact'} ${id.slice(0, 8)}](${href('b', bank, kind === 'obs' ? 'observations' : 'memories', id)})`)
  return md.render(withLinks)
}

export function ModelsPage({ bank }) {
  const list = useLoad(() => api('GET', bankPath(bank, '/mental-models?detail=content')), [bank])
  const [name, setName] = useState('')
  const [q, setQ] = useState('')
  const [err, setErr] = useState(null)
  const items = list.data ? list.data.items || list.data.mental_models || [] : []
  const create = (e) => {
    e.preventDefault()
    api('POST', bankPath(bank, '/mental-models'), { name, source_query: q }).then((m) => {
      window.location.hash = href('b', bank, 'models', m.id)
    }, setErr)
  }
  return (
    <>
      <PageTitle title="Mental models" sub="Standing answers to questions asked often, refreshed from observations" />
      <ErrorBox error={list.error} />
      {list.loading && !list.data ? <Loading what="mental models" /> : null}
      {list.data && items.length === 0 ? <Empty>No mental model yet: create one below.</Empty> : null}
      {items.length > 0 ? (
        <Card>
          <table className="table" data-testid="models-table">
            <thead><tr><th>name</th><th>question</th><th>refreshed</th></tr></thead>
            <tbody>
              {items.map((m) => (
                <tr key={m.id} data-testid="model-row">
                  <td><a href={href('b', bank, 'models', m.id)}>{m.name}</a></td>
                  <td>{m.source_query}</td>
                  <td className="nowrap muted small">{fmtTime(m.last_refreshed_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      ) : null}
      <Card title="New mental model">
        <form className="form-row" onSubmit={create}>
          <input placeholder="name, e.g. preferences" value={name} onChange={(e) => setName(e.target.value)} required />
          <input className="grow" placeholder="question, e.g. What does Alice prefer?" value={q} onChange={(e) => setQ(e.target.value)} required />
          <button type="submit">Create</button>
        </form>
        <ErrorBox error={err} />
      </Card>
    </>
  )
}

export function ModelPage({ bank, id }) {
  const m = useLoad(() => api('GET', bankPath(bank, `/mental-models/${id}`)), [bank, id])
  const page = useLoad(() => api('GET', bankPath(bank, `/mental-models/${id}/page`)), [bank, id])
  const [view, setView] = useState('rendered')
  const [busy, setBusy] = useState(false)
  const [err, setErr] = useState(null)
  const html = useMemo(() => (m.data ? renderModel(m.data.content || '', bank) : ''), [m.data, bank])
  if (m.error) return <ErrorBox error={m.error} />
  if (!m.data) return <Loading what="mental model" />
  const model = m.data
  const refresh = () => {
    setBusy(true)
    api('POST', bankPath(bank, `/mental-models/${id}/refresh`), {}).then(
      () => { setBusy(false); setErr(null); m.reload(); page.reload() },
      (e) => { setBusy(false); setErr(e) },
    )
  }
  const pageText = page.data ? (typeof page.data === 'string' ? page.data : page.data.markdown) : ''
  return (
    <>
      <PageTitle title={model.name} sub={model.source_query}>
        <span className="muted small" data-testid="refreshed-at">refreshed {fmtTime(model.last_refreshed_at)}</span>
        <button onClick={refresh} disabled={busy} className="primary" data-testid="refresh-model">{busy ? 'Refreshing…' : 'Refresh'}</button>
      </PageTitle>
      <ErrorBox error={err} />
      <Card
        title="Content"
        testid="model-content"
        actions={[
          <button key="r" className={'seg' + (view === 'rendered' ? ' on' : '')} onClick={() => setView('rendered')}>rendered</button>,
          <button key="p" className={'seg' + (view === 'page' ? ' on' : '')} onClick={() => setView('page')} data-testid="view-page">page (.md)</button>,
        ]}
      >
        {view === 'rendered' ? (
          model.content ? <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} /> : <Empty>Not refreshed yet.</Empty>
        ) : (
          <>
            <ErrorBox error={page.error} />
            <pre className="chunk" data-testid="model-page">{pageText}</pre>
            <p className="muted small">The same page <code>memstream export pages --bank {bank}</code> writes.</p>
          </>
        )}
      </Card>
      <p className="muted small">max tokens {model.max_tokens} · <Tags tags={model.tags} /> created {fmtTime(model.created_at)}</p>
    </>
  )
}
