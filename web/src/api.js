// The console reads the JSON API with the key the user typed in, so it sees
// exactly what that key may see. Responses pass through small adapters:
// recallapi's shapes are being aligned with Hindsight's, and the pages
// should not care which field name a list or a bank id comes under.

const KEY = 'memstream.console.key'

export function getKey() {
  return sessionStorage.getItem(KEY) || ''
}

export function setKey(k) {
  if (k) sessionStorage.setItem(KEY, k)
  else sessionStorage.removeItem(KEY)
}

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message)
    this.status = status
    this.code = code
    this.field = field
  }
}

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' }
  const key = getKey()
  if (key) headers.Authorization = 'Bearer ' + key
  const init = { method, headers }
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch (e) {
    throw new ApiError(0, 'network', 'cannot reach the memstream API: ' + e.message)
  }
  const text = await res.text()
  let data = null
  if (text) {
    try {
      data = JSON.parse(text)
    } catch {
      data = text
    }
  }
  if (!res.ok) {
    const e = (data && data.error) || {}
    const detail = typeof e === 'string' ? e : e.message || (data && data.detail) || res.statusText
    throw new ApiError(res.status, e.code || String(res.status), detail, e.field)
  }
  return data
}

export const bankPath = (bank, p = '') => `/v1/default/banks/${encodeURIComponent(bank)}${p}`

export function query(params) {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue
    q.set(k, String(v))
  }
  const s = q.toString()
  return s ? '?' + s : ''
}

const arr = (v) => (Array.isArray(v) ? v : [])

// Adapters: accept memstream's and Hindsight's field names.
export const adapt = {
  banks(d) {
    const list = Array.isArray(d) ? d : arr(d && (d.banks || d.items))
    return list.map((b) => ({
      id: b.bank_id ?? b.id,
      name: b.name || b.bank_id || b.id,
      mission: b.mission ?? '',
      disposition: b.disposition || {},
      defensePolicy: b.defense_policy ?? {},
      consolidation: b.consolidation ?? b.consolidation_state ?? 'running',
      updatedAt: b.updated_at,
    }))
  },
  bank(b) {
    return adapt.banks([b])[0]
  },
  list(d) {
    const items = Array.isArray(d) ? d : arr(d && (d.items ?? d.memories ?? d.results ?? d.data))
    return { items, total: (d && (d.total ?? d.total_count)) ?? items.length }
  },
  memory(m) {
    if (!m) return m
    return {
      ...m,
      type: m.type ?? m.fact_type,
      // entities: objects (memstream), names (recall), or one comma-joined
      // string beside entity_refs objects (Hindsight's list shape).
      entities: Array.isArray(m.entity_refs)
        ? m.entity_refs
        : typeof m.entities === 'string'
          ? m.entities.split(',').map((n) => n.trim()).filter(Boolean).map((name) => ({ name }))
          : arr(m.entities).map((e) => (typeof e === 'string' ? { name: e } : e)),
      tags: arr(m.tags),
      metadata: m.metadata || {},
    }
  },
  observation(o) {
    const m = adapt.memory(o)
    return { ...m, evidence: arr(o.evidence), history: arr(o.history), trend: o.trend || '' }
  },
  entity(e) {
    return {
      ...e,
      name: e.name ?? e.canonical_name,
      aliases: arr(e.aliases).map((a) => (typeof a === 'string' ? a : a.alias)),
      memories: arr(e.memories).map(adapt.memory),
    }
  },
  recall(d) {
    const t = d.trace || {}
    const arms = arr(t.arms).map((a) => ({
      arm: a.arm ?? a.name,
      durationMs: a.duration_ms,
      candidates: arr(a.candidates ?? a.results).map((c) => ({ id: c.id, score: c.score })),
      error: a.error,
    }))
    return { results: arr(d.results ?? d.memories).map(adapt.memory), trace: d.trace ? { ...t, arms } : null }
  },
  reflect(d) {
    const t = d.trace || {}
    const b = d.based_on || {}
    // based_on lists ids (memstream) or objects with id and text (Hindsight).
    const known = {}
    const ids = (xs) =>
      arr(xs)
        .map((x) => {
          if (x && typeof x === 'object' && x.id) {
            known[x.id] = adapt.memory(x)
            return x.id
          }
          return x
        })
        .filter(Boolean)
    return {
      text: d.text ?? d.answer ?? '',
      basedOn: { memories: ids(b.memories), observations: ids(b.observations), mental_models: ids(b.mental_models) },
      known,
      toolCalls: arr(t.tool_calls),
      llmCalls: arr(t.llm_calls),
      iterations: t.iterations,
      stopReason: t.stop_reason,
      usage: d.usage || {},
    }
  },
}
