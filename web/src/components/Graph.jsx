// An entity's neighbourhood: the entity in the middle, the entities it is
// mentioned with around it (closer and thicker for more shared facts), and
// the links among the neighbours. A radial layout is deterministic, so the
// same data always draws the same picture.

const kindClass = (k) => 'node-' + (['person', 'place', 'organization', 'org', 'product', 'event'].includes(k) ? k : 'other')

export function EntityGraph({ graph, onOpen }) {
  const W = 760
  const H = 440
  const cx = W / 2
  const cy = H / 2
  const nodes = graph.nodes || []
  if (nodes.length === 0) return <div className="empty">No other entity shares a fact with this one.</div>
  const maxW = Math.max(...nodes.map((n) => n.weight || 1))
  const pos = {}
  nodes.forEach((n, i) => {
    const a = (2 * Math.PI * i) / nodes.length - Math.PI / 2
    // Alternate two rings so neighbouring labels do not collide; the most
    // shared entities sit on the inner one.
    const r = (i % 2 === 0 ? 0.72 : 1) - 0.12 * ((n.weight || 1) / maxW)
    pos[n.id] = { x: cx + r * 330 * Math.cos(a), y: cy + r * 185 * Math.sin(a) }
  })
  pos[graph.entity.id] = { x: cx, y: cy }
  const edges = graph.edges || []
  return (
    <svg className="graph" viewBox={`0 0 ${W} ${H}`} data-testid="entity-graph" role="img" aria-label={'neighbourhood of ' + graph.entity.name}>
      {edges
        .filter((e) => pos[e.from] && pos[e.to] && e.from !== graph.entity.id && e.to !== graph.entity.id)
        .map((e, i) => (
          <line key={'n' + i} x1={pos[e.from].x} y1={pos[e.from].y} x2={pos[e.to].x} y2={pos[e.to].y} className="edge edge-side" />
        ))}
      {nodes.map((n) => (
        <line
          key={'c' + n.id}
          x1={cx}
          y1={cy}
          x2={pos[n.id].x}
          y2={pos[n.id].y}
          className="edge"
          strokeWidth={1 + 4 * ((n.weight || 1) / maxW)}
        />
      ))}
      {nodes.map((n) => (
        <g key={n.id} className={'node ' + kindClass(n.kind)} onClick={() => onOpen && onOpen(n.id)} transform={`translate(${pos[n.id].x},${pos[n.id].y})`}>
          <circle r={7 + 6 * ((n.weight || 1) / maxW)} />
          <text y={-14} textAnchor="middle">{n.name}</text>
          <text y={24} textAnchor="middle" className="small">{n.weight} shared</text>
        </g>
      ))}
      <g className={'node center ' + kindClass(graph.entity.kind)} transform={`translate(${cx},${cy})`}>
        <circle r={20} />
        <text y={-27} textAnchor="middle" className="strong">{graph.entity.name}</text>
      </g>
    </svg>
  )
}
