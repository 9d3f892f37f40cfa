// Draws the timeline as SVG: one row per client (lease bars, pauses), a row for
// forged requests, one row per resource; writes as arrows from sender to
// resource, green when they land (advance/accept), red when they bounce
// (reject, with the code in the band below), grey dashed while in flight.

const W = 800;
const LEFT = 84;
const RIGHT = 12;
const ROW = 30;
const TOP = 8;
const BAND = 172;

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** Span of the picture in ms: at least 30 s, growing in 10 s steps past the clock. */
export function spanOf(now) {
  return Math.max(30_000, Math.ceil((now + 5_000) / 10_000) * 10_000);
}

/** `marks`: resource → its current mark as text. */
export function renderTimeline(svg, sim, resources, marks) {
  const senders = ['issuer', ...Object.keys(sim.clients), 'forged'];
  const rowY = new Map();
  const LANES = 24; // room above the issuer row for its labels, staggered in three lanes
  senders.forEach((s, i) => rowY.set(s, TOP + LANES + ROW * i + ROW / 2));
  const resTop = TOP + LANES + ROW * senders.length + 10;
  resources.forEach((r, i) => rowY.set('res:' + r, resTop + ROW * i + ROW / 2));
  const axisY = resTop + ROW * resources.length + 4;
  const bandY = axisY + 26;
  const H = bandY + BAND;
  const span = spanOf(sim.now);
  const x = (t) => LEFT + (Math.min(t, span) / span) * (W - LEFT - RIGHT);
  const out = [];

  out.push(
    '<defs>',
    '<marker id="head-ok" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#1a7f37"/></marker>',
    '<marker id="head-pending" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#6e7781"/></marker>',
    '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff8c5"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9a6700" stroke-width="2"/></pattern>',
    '</defs>',
  );

  // Rows and labels.
  for (const [name, y] of rowY) {
    const label = name === 'forged' || name === 'issuer' ? name : name.startsWith('res:') ? name.slice(4) : `client ${name}`;
    const cls = name.startsWith('res:') ? 'row res' : 'row';
    out.push(`<line class="${cls}" x1="${LEFT}" x2="${W - RIGHT}" y1="${y}" y2="${y}"/>`);
    out.push(`<text class="label" x="4" y="${y + 4}">${esc(label)}</text>`);
  }

  // Axis: ticks every 5 s.
  out.push(`<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${axisY}" y2="${axisY}"/>`);
  for (let t = 0; t <= span; t += 5_000) {
    out.push(`<line class="axis" x1="${x(t)}" x2="${x(t)}" y1="${axisY}" y2="${axisY + 4}"/>`);
    out.push(`<text class="tick" x="${x(t)}" y="${axisY + 16}" text-anchor="middle">${t / 1000} s</text>`);
  }

  // Leases and pauses.
  for (const e of sim.events) {
    const y = rowY.get(e.client);
    if (e.type === 'lease') {
      const w = Math.max(2, x(e.to) - x(e.from));
      out.push(`<rect class="lease" x="${x(e.from)}" y="${y - 10}" width="${w}" height="20" rx="3"/>`);
      out.push(`<text class="lease-label" x="${x(e.from) + 4}" y="${y + 4}">epoch ${esc(e.epoch)}</text>`);
    } else if (e.type === 'pause') {
      const to = e.to ?? sim.now;
      const w = Math.max(2, x(to) - x(e.from));
      out.push(`<rect class="pause" x="${x(e.from)}" y="${y - 5}" width="${w}" height="10" fill="url(#hatch)"/>`);
      out.push(`<text class="pause-label" x="${x(e.from) + w / 2}" y="${y - 12}" text-anchor="middle">paused</text>`);
    }
  }

  // The issuer: each epoch handed out (epoch → holder), backups, restores, repairs.
  let lane = 0;
  for (const e of sim.events) {
    if (e.type !== 'issuer') continue;
    const y = rowY.get('issuer');
    const ly = y - 4 - 11 * (lane++ % 3);
    const cls = e.label === 'restore' ? 'issue restore' : 'issue';
    if (ly < y - 4) out.push(`<line class="issue-tie" x1="${x(e.at)}" x2="${x(e.at)}" y1="${y}" y2="${ly + 2}"/>`);
    out.push(`<circle class="${cls}" cx="${x(e.at)}" cy="${y}" r="4"/>`);
    out.push(`<text class="${cls}-label" x="${x(e.at) + 4}" y="${ly}">${esc(e.label)}</text>`);
  }

  // Operations.
  for (const e of sim.events) {
    if (e.type !== 'op') continue;
    const x1 = x(e.sentAt);
    const y1 = rowY.get(e.from) + 6;
    const x2 = x(e.arriveAt);
    const y2 = rowY.get('res:' + e.resource);
    let label;
    if (e.outcome === null) {
      out.push(`<line class="op pending" x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2 - 4}" marker-end="url(#head-pending)"/>`);
      label = `… ${e.tokenShort} in flight`;
    } else if (e.outcome === 'reject') {
      const yb = y2 - 9;
      out.push(`<line class="op reject" x1="${x1}" y1="${y1}" x2="${x2}" y2="${yb}"/>`);
      out.push(`<path class="op reject" d="M${x2},${yb} l7,-12"/>`);
      out.push(`<path class="op reject cross" d="M${x2 - 4},${yb - 4} l8,8 M${x2 + 4},${yb - 4} l-8,8"/>`);
      label = `✕ ${e.tokenShort} ${e.code}`;
    } else {
      out.push(`<line class="op ok" x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2 - 2}" marker-end="url(#head-ok)"/>`);
      label = e.kind === 'establish' ? `✓ ${e.tokenShort} establish: ${e.outcome}` : `✓ ${e.tokenShort} ${e.outcome}`;
    }
    const cls = e.outcome === null ? 'pending' : e.outcome === 'reject' ? 'reject' : 'ok';
    out.push(`<text class="band ${cls}" transform="translate(${x2 + 4},${bandY}) rotate(90)">${esc(label)}</text>`);
  }

  // Each resource's current mark at the right end of its row.
  for (const r of resources) {
    const m = marks.get(r);
    if (m !== undefined) out.push(`<text class="mark-label" x="${W - RIGHT}" y="${rowY.get('res:' + r) - 6}" text-anchor="end">mark ${esc(m)}</text>`);
  }

  // The clock.
  const xn = x(sim.now);
  out.push(`<line class="now" x1="${xn}" x2="${xn}" y1="${TOP - 4}" y2="${axisY}"/>`);

  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.innerHTML = out.join('');
}
