import { useCallback, useEffect, useRef, useState } from 'react'

// useLoad runs fn when deps change and keeps the latest result; a reply to
// an older call never overwrites a newer one.
export function useLoad(fn, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true })
  const seq = useRef(0)
  const run = useCallback(() => {
    const n = ++seq.current
    setState((s) => ({ ...s, loading: true }))
    Promise.resolve()
      .then(fn)
      .then(
        (data) => n === seq.current && setState({ data, error: null, loading: false }),
        (error) => n === seq.current && setState({ data: null, error, loading: false }),
      )
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps)
  useEffect(run, [run])
  return { ...state, reload: run }
}

export function useHashRoute() {
  const [hash, setHash] = useState(window.location.hash)
  useEffect(() => {
    const on = () => setHash(window.location.hash)
    window.addEventListener('hashchange', on)
    return () => window.removeEventListener('hashchange', on)
  }, [])
  const raw = hash.replace(/^#\/?/, '')
  const [pathPart, qs = ''] = raw.split('?')
  const parts = pathPart.split('/').filter(Boolean).map(decodeURIComponent)
  return { parts, params: new URLSearchParams(qs) }
}

export function href(...parts) {
  return '#/' + parts.filter((p) => p !== undefined && p !== '').map(encodeURIComponent).join('/')
}

export function fmtTime(t) {
  if (!t) return '—'
  const d = new Date(t)
  if (isNaN(d)) return String(t)
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace(/:00Z$/, 'Z')
}

export function fmtDate(t) {
  if (!t) return '—'
  const d = new Date(t)
  return isNaN(d) ? String(t) : d.toISOString().slice(0, 10)
}

export function fmtNum(n, digits = 3) {
  if (n === undefined || n === null || Number.isNaN(n)) return '—'
  if (Number.isInteger(n)) return n.toLocaleString('en-US')
  return Number(n).toFixed(digits)
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : ''
}

export function ErrorBox({ error }) {
  if (!error) return null
  const status = error.status ? `${error.status} ` : ''
  return (
    <div className="error" role="alert" data-testid="error">
      <strong>{status}{error.code || 'error'}</strong> {error.message}
      {error.field ? <span className="muted"> (field {error.field})</span> : null}
    </div>
  )
}

export function Loading({ what = '' }) {
  return <div className="loading">Loading {what}…</div>
}

export function Empty({ children }) {
  return <div className="empty">{children}</div>
}

const typeClass = { world: 'b-world', experience: 'b-exp', observation: 'b-obs' }
export function TypeBadge({ type }) {
  return <span className={'badge ' + (typeClass[type] || '')}>{type}</span>
}

export function TrendBadge({ trend }) {
  if (!trend) return null
  return <span className={'badge trend trend-' + trend.toLowerCase()} data-testid="trend">{trend}</span>
}

export function Tags({ tags }) {
  if (!tags || tags.length === 0) return null
  return (
    <span className="tags">
      {tags.map((t) => (
        <span key={t} className="tag">{t}</span>
      ))}
    </span>
  )
}

export function Card({ title, children, actions, testid }) {
  return (
    <section className="card" data-testid={testid}>
      {(title || actions) && (
        <header className="card-h">
          <h2>{title}</h2>
          <div className="actions">{actions}</div>
        </header>
      )}
      {children}
    </section>
  )
}

export function PageTitle({ title, sub, children }) {
  return (
    <div className="page-title">
      <div>
        <h1>{title}</h1>
        {sub ? <p className="muted">{sub}</p> : null}
      </div>
      <div className="actions">{children}</div>
    </div>
  )
}
