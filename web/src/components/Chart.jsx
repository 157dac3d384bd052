// A small SVG time-series chart: one or more series over shared time
// buckets, with a y axis that starts at zero and readable time ticks.

function niceMax(v) {
  if (v <= 0) return 1
  const p = Math.pow(10, Math.floor(Math.log10(v)))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

function tickLabel(t, spanMs) {
  const d = new Date(t)
  const hh = String(d.getUTCHours()).padStart(2, '0')
  const mm = String(d.getUTCMinutes()).padStart(2, '0')
  if (spanMs > 2 * 86400e3) return `${d.getUTCMonth() + 1}/${d.getUTCDate()}`
  return `${hh}:${mm}`
}

export function TimeChart({ buckets, series, height = 200, testid }) {
  const W = 1000
  const H = height
  const pad = { l: 44, r: 12, t: 10, b: 26 }
  if (!buckets || buckets.length === 0) return <div className="empty">No data in this window.</div>
  const xs = buckets.map((b) => new Date(b.t).getTime())
  const x0 = xs[0]
  const x1 = xs[xs.length - 1] || x0 + 1
  const maxV = niceMax(Math.max(1, ...series.flatMap((s) => buckets.map((b) => b[s.key] || 0))))
  const sx = (x) => pad.l + ((x - x0) / Math.max(1, x1 - x0)) * (W - pad.l - pad.r)
  const sy = (v) => H - pad.b - (v / maxV) * (H - pad.t - pad.b)
  const yTicks = [0, maxV / 2, maxV]
  const nx = 5
  const xTicks = Array.from({ length: nx }, (_, i) => x0 + ((x1 - x0) * i) / (nx - 1))
  return (
    <figure className="chart" data-testid={testid}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={series.map((s) => s.label).join(', ')}>
        {yTicks.map((v) => (
          <g key={v}>
            <line x1={pad.l} x2={W - pad.r} y1={sy(v)} y2={sy(v)} className="grid" />
            <text x={pad.l - 6} y={sy(v) + 4} className="axis" textAnchor="end">
              {Number.isInteger(v) ? v : v.toFixed(1)}
            </text>
          </g>
        ))}
        {xTicks.map((x, i) => (
          <text key={i} x={sx(x)} y={H - 8} className="axis" textAnchor={i === 0 ? 'start' : i === nx - 1 ? 'end' : 'middle'}>
            {tickLabel(x, x1 - x0)}
          </text>
        ))}
        {series.map((s) => {
          const pts = buckets.map((b, i) => `${sx(xs[i]).toFixed(1)},${sy(b[s.key] || 0).toFixed(1)}`)
          const area = `M${sx(x0)},${sy(0)} L${pts.join(' L')} L${sx(x1)},${sy(0)} Z`
          return (
            <g key={s.key}>
              {s.fill ? <path d={area} className={'area ' + s.cls} /> : null}
              <polyline points={pts.join(' ')} className={'line ' + s.cls} />
            </g>
          )
        })}
      </svg>
      <figcaption>
        {series.map((s) => (
          <span key={s.key} className="legend">
            <i className={'swatch ' + s.cls} /> {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  )
}
