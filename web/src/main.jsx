import { StrictMode, useEffect, useState } from 'react'
import { createRoot } from 'react-dom/client'
import './style.css'
import { adapt, api, ApiError, getKey, setKey } from './api.js'
import { ErrorBox, href, Loading, useHashRoute } from './util.jsx'
import { BanksPage, BankPage } from './pages/Banks.jsx'
import { MemoriesPage, MemoryPage } from './pages/Memories.jsx'
import { ObservationsPage, ObservationPage } from './pages/Observations.jsx'
import { EntitiesPage, EntityPage } from './pages/Entities.jsx'
import { RecallPage } from './pages/Recall.jsx'
import { ReflectPage } from './pages/Reflect.jsx'
import { ModelsPage, ModelPage } from './pages/Models.jsx'
import { DeadLettersPage } from './pages/DeadLetters.jsx'

const sections = [
  ['overview', 'Bank'],
  ['memories', 'Memories'],
  ['observations', 'Observations'],
  ['entities', 'Entities'],
  ['recall', 'Recall playground'],
  ['reflect', 'Reflect'],
  ['models', 'Mental models'],
  ['dead-letters', 'Dead letters'],
]

function Login({ onDone, error }) {
  const [key, setK] = useState('')
  return (
    <div className="login">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          setKey(key.trim())
          onDone()
        }}
      >
        <h1>memstream console</h1>
        <p className="muted">This server requires an API key. The console sees what the key may see: its banks and its scopes.</p>
        <ErrorBox error={error} />
        <label>
          API key
          <input name="key" type="password" autoFocus value={key} onChange={(e) => setK(e.target.value)} autoComplete="off" />
        </label>
        <button type="submit" className="primary">Sign in</button>
        <p className="muted small">The key is kept in this tab's session storage only.</p>
      </form>
    </div>
  )
}

function Page({ bank, section, id, params, banks, reloadBanks }) {
  if (!bank) return <BanksPage banks={banks} />
  if (!banks.some((b) => b.id === bank)) {
    return <ErrorBox error={new ApiError(404, 'not_found', `bank ${bank} does not exist or this key may not read it`)} />
  }
  switch (section) {
    case 'memories':
      return id ? <MemoryPage bank={bank} id={id} /> : <MemoriesPage bank={bank} params={params} />
    case 'observations':
      return id ? <ObservationPage bank={bank} id={id} /> : <ObservationsPage bank={bank} />
    case 'entities':
      return id ? <EntityPage bank={bank} id={id} /> : <EntitiesPage bank={bank} />
    case 'recall':
      return <RecallPage bank={bank} />
    case 'reflect':
      return <ReflectPage bank={bank} />
    case 'models':
      return id ? <ModelPage bank={bank} id={id} /> : <ModelsPage bank={bank} />
    case 'dead-letters':
      return <DeadLettersPage bank={bank} />
    default:
      return <BankPage bank={bank} onChange={reloadBanks} />
  }
}

function App() {
  const { parts, params } = useHashRoute()
  const [state, setState] = useState({ banks: null, error: null, needKey: false })
  const load = () =>
    api('GET', '/v1/default/banks?limit=1000').then(
      (d) => setState({ banks: adapt.banks(d), error: null, needKey: false }),
      (e) => setState({ banks: null, error: e, needKey: e.status === 401 }),
    )
  useEffect(() => {
    load()
  }, [])
  if (state.needKey) return <Login onDone={load} error={getKey() ? state.error : null} />
  if (state.error) return <div className="shell-error"><ErrorBox error={state.error} /></div>
  if (!state.banks) return <Loading what="banks" />
  const [first, bank, section = 'overview', id] = parts
  const currentBank = first === 'b' ? bank : ''
  return (
    <div className="shell">
      <nav className="side">
        <a className="brand" href="#/">memstream<span>console</span></a>
        <label className="bank-select">
          Bank
          <select
            data-testid="bank-select"
            value={currentBank}
            onChange={(e) => (window.location.hash = e.target.value ? href('b', e.target.value, section) : '#/')}
          >
            <option value="">All banks</option>
            {state.banks.map((b) => (
              <option key={b.id} value={b.id}>{b.id}</option>
            ))}
          </select>
        </label>
        <ul>
          <li><a href="#/" className={!currentBank ? 'active' : ''}>Banks</a></li>
          {currentBank &&
            sections.map(([s, label]) => (
              <li key={s}>
                <a href={href('b', currentBank, s)} className={section === s ? 'active' : ''} data-testid={'nav-' + s}>{label}</a>
              </li>
            ))}
        </ul>
        <div className="side-foot">
          {getKey() ? (
            <button className="link" onClick={() => { setKey(''); load() }}>Sign out</button>
          ) : (
            <span className="muted small">no key required (loopback)</span>
          )}
        </div>
      </nav>
      <main className="content" data-testid={'page-' + (currentBank ? section : 'banks')}>
        <Page bank={currentBank} section={section} id={id} params={params} banks={state.banks} reloadBanks={load} />
      </main>
    </div>
  )
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
