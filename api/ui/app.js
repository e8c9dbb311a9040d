// The dashboard of DESIGN §9: the pools, and a pool live from its watch
// stream (GET /v1/pools/{pool}/watch), drawn on canvases so that a
// snapshot of 1,000 Scales (a pool of any size sends no more) costs one
// pass: one path per colour, Scales that share a pixel column drawn as one
// bar, canvas sizes read only when they change (never while drawing, which
// would force a layout per read). Nothing is fetched but this service's
// API; the token the user types stays in sessionStorage and goes out as
// Authorization: Bearer. docs/operations.md ("The dashboard") has the
// frame times measured with 100,000 Scales and 5,000 orders/s.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'dispatcher.token';
const RATE_WINDOW_MS = 5 * 60 * 1000;
const COLOURS = {};
for (const name of ['active', 'draining', 'down', 'lapsed', 'ejected', 'base', 'max', 'fg', 'muted', 'line', 'accent']) {
  COLOURS[name] = getComputedStyle(document.documentElement).getPropertyValue('--' + name).trim();
}

// ui is the page's state, on window for tests and for curious operators.
const ui = {
  pool: null,       // the pool shown, or null on the list
  snap: null,       // its latest snapshot
  layout: [],       // the bars as last drawn: {compId, x, w, colour}
  picked: -1,       // the index of the Scale picked with the keys
  rates: [],        // {t, dispatched, completed} per snapshot
  changes: [],      // recent state and health changes
  seen: new Map(),  // compId -> "state/health" last seen
  stream: null,     // AbortController of the open watch
  errors: 0,
  timings: [],      // {parse, draw} ms of the last 100 snapshots
  tableAt: -1e9,    // when the Scales' table was last filled (performance.now)
  rowStart: 0,      // the first Scale the table shows
};
window.dispatcherUI = ui;

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

function headers(extra) {
  const h = Object.assign({Accept: 'application/json'}, extra || {});
  if (token()) h.Authorization = 'Bearer ' + token();
  return h;
}

// showMessage shows text in the alert line; '' hides it.
function showMessage(text) {
  const m = $('message');
  m.textContent = text;
  m.hidden = !text;
}

// problemText says in plain words what a failed answer means.
async function problemText(res) {
  let detail = '';
  try {
    const p = await res.json();
    detail = p.detail || p.title || '';
  } catch (e) {
    detail = res.statusText;
  }
  if (res.status === 401) {
    return token()
      ? 'The token was refused (401 Unauthorized): type a valid client or admin token above.'
      : 'This service needs a token (401 Unauthorized): type a client or admin token above.';
  }
  if (res.status === 403) return 'This token may not read this (403 Forbidden): ' + detail;
  if (res.status === 404) return 'Not found (404): ' + detail;
  if (res.status === 503) return 'The service cannot reach its store (503): ' + detail + ' Retrying.';
  return 'The service answered ' + res.status + ': ' + detail;
}

async function getJSON(path) {
  const res = await fetch(path, {headers: headers(), cache: 'no-store'});
  if (!res.ok) throw new Error(await problemText(res));
  return res.json();
}

// fmt formats with one formatter: toLocaleString makes one per call, which
// costs more than the rest of a snapshot's drawing.
const numbers = new Intl.NumberFormat('en-US');
const fmt = (n) => numbers.format(n);
const pad = (n) => String(n).padStart(2, '0');
const clock = (d) => pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());

function cell(tag, text, cls) {
  const c = document.createElement(tag);
  c.textContent = text;
  if (cls) c.className = cls;
  return c;
}

// ---- the pool list

let listTimer = 0;

async function showPools() {
  stopStream();
  ui.pool = null;
  $('pool-view').hidden = true;
  $('pools-view').hidden = false;
  document.title = 'dispatcher: pools';
  clearTimeout(listTimer);
  try {
    const pools = [];
    let cursor = '';
    do {
      const page = await getJSON('/v1/pools?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
      pools.push(...page.pools);
      cursor = page.nextCursor || '';
    } while (cursor && pools.length < 10000);
    if (ui.pool !== null) return;
    showMessage('');
    const body = $('pools');
    body.replaceChildren(...pools.map((p) => {
      const tr = document.createElement('tr');
      const name = document.createElement('td');
      const a = cell('a', p.name);
      a.href = '#/pool/' + encodeURIComponent(p.name);
      name.append(a);
      tr.append(name, cell('td', p.strategy), cell('td', fmt(p.scaleCount), 'num'), cell('td', p.createdAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z')));
      return tr;
    }));
    $('pools-empty').hidden = pools.length > 0;
  } catch (e) {
    if (ui.pool === null) showMessage(e.message);
  }
  if (ui.pool === null) listTimer = setTimeout(showPools, 5000);
}

// ---- a pool, live

let tableTimer = 0;

function showPool(name) {
  clearTimeout(listTimer);
  stopStream();
  Object.assign(ui, {pool: name, snap: null, layout: [], picked: -1, rates: [], changes: [], seen: new Map()});
  $('pools-view').hidden = true;
  $('pool-view').hidden = false;
  $('pool-title').textContent = name;
  $('pool-meta').textContent = '';
  $('counters').replaceChildren();
  $('changes').replaceChildren();
  $('changes-empty').hidden = false;
  $('picked').textContent = '';
  $('scale-rows').replaceChildren();
  ui.tableAt = -1e9;
  ui.rowStart = 0;
  document.title = 'dispatcher: ' + name;
  clearTimeout(tableTimer);
  watch(name);
}

function stopStream() {
  if (ui.stream) ui.stream.abort();
  ui.stream = null;
}

// watch reads the pool's event stream with fetch (EventSource cannot send
// a token) and opens it again 2 s after it ends, until the page leaves
// the pool.
async function watch(name) {
  const ctl = new AbortController();
  ui.stream = ctl;
  const interval = $('interval').value;
  const url = '/v1/pools/' + encodeURIComponent(name) + '/watch?intervalMs=' + interval;
  let again = 2000;
  try {
    const res = await fetch(url, {headers: headers({Accept: 'text/event-stream'}), signal: ctl.signal, cache: 'no-store'});
    if (!res.ok) {
      showMessage(await problemText(res));
      if (res.status === 401 || res.status === 403 || res.status === 404) again = 0;
    } else {
      await readEvents(res.body, ctl.signal);
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
    $('live').textContent = 'connection lost, reconnecting';
  }
  if (ui.stream === ctl && again > 0) {
    setTimeout(() => { if (ui.stream === ctl) watch(name); }, again);
  }
}

async function readEvents(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  while (!signal.aborted) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      if (event === 'snapshot') queueSnapshot(data);
      else if (event === 'problem') onProblem(JSON.parse(data));
    }
  }
}

// queueSnapshot keeps the newest snapshot and draws it at the next frame:
// snapshots that arrive faster than the page draws (a busy machine, a tab
// in the background) are skipped, never queued, and reading the stream
// never holds the frames back.
let pendingSnap = null;
function queueSnapshot(data) {
  const queued = pendingSnap !== null;
  pendingSnap = {data, stream: ui.stream};
  if (queued) return;
  requestAnimationFrame(() => {
    const p = pendingSnap;
    pendingSnap = null;
    if (p.stream !== ui.stream) return; // the page left the pool
    const t0 = performance.now();
    const snap = JSON.parse(p.data);
    const t1 = performance.now();
    onSnapshot(snap);
    ui.timings.push({parse: t1 - t0, draw: performance.now() - t1});
    if (ui.timings.length > 100) ui.timings.shift();
  });
}

function onProblem(p) {
  showMessage(p.status === 404 ? 'The pool was deleted.' : 'The service could not read the pool (' + p.status + '): ' + p.detail);
}

function onSnapshot(s) {
  showMessage('');
  const prev = ui.snap;
  ui.snap = s;
  // The waterfill table waits for the first snapshot, which tells whether
  // the pool is small enough to fetch it.
  if (prev === null) refreshTable(ui.pool);
  const at = new Date(s.at);
  $('live').textContent = 'live, ' + clock(at);
  $('pool-meta').textContent = s.strategy + ', ' + fmt(s.scaleCount) + ' Scales';
  noteChanges(s, at, prev === null);
  ui.rates.push({t: at.getTime(), dispatched: s.counters.dispatched, completed: s.counters.completed});
  while (ui.rates.length > 2 && ui.rates[0].t < at.getTime() - RATE_WINDOW_MS) ui.rates.shift();
  drawCounters(s);
  drawBars();
  drawHistogram();
  drawRate();
  fillScaleTable(s);
}

function healthOf(sc) { return sc.health || 'up'; }

function noteChanges(s, at, first) {
  const items = [];
  for (const sc of s.scales) {
    const now = sc.state + '/' + healthOf(sc);
    const was = ui.seen.get(sc.compId);
    ui.seen.set(sc.compId, now);
    if (first || was === undefined || was === now) continue;
    const [ws, wh] = was.split('/');
    const parts = [];
    if (ws !== sc.state) parts.push(ws + ' → ' + sc.state);
    if (wh !== healthOf(sc)) parts.push(wh + ' → ' + healthOf(sc));
    items.push(clock(at) + '  ' + sc.compId + ': ' + parts.join(', '));
  }
  if (!items.length) return;
  ui.changes = items.concat(ui.changes).slice(0, 100);
  $('changes').replaceChildren(...ui.changes.map((t) => cell('li', t)));
  $('changes-empty').hidden = true;
}

function drawCounters(s) {
  const dl = $('counters');
  const entries = [['dispatched', s.counters.dispatched], ['completed', s.counters.completed],
    ['cancelled', s.counters.cancelled], ['moved', s.counters.moved], ['failed', s.counters.failed],
    ['outstanding', s.scales.reduce((n, sc) => n + sc.outstanding, 0) + (s.histogram ? ' (shown)' : '')]];
  dl.replaceChildren(...entries.map(([k, v]) => {
    const d = document.createElement('div');
    d.append(cell('dt', k), cell('dd', typeof v === 'number' ? fmt(v) : fmt(parseInt(v, 10)) + v.replace(/^\d+/, '')));
    return d;
  }));
}

// SEVERITY lists the bar colours from the least to the most alarming.
const SEVERITY = ['active', 'draining', 'down', 'lapsed', 'ejected'];

// severityOf is the index in SEVERITY of a Scale's bar colour: health
// first (what the service saw), then state (what an operator set).
function severityOf(sc) {
  const h = healthOf(sc);
  if (h === 'ejected') return 4;
  if (h === 'lapsed') return 3;
  if (sc.state === 'down') return 2;
  if (sc.state === 'draining') return 1;
  return 0;
}

// rgbOf reads a colour '#rrggbb' as [r, g, b].
function rgbOf(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

// tintOf is a colour at 40 % over white, opaque: the base load of a bar,
// in its Scale's colour so that the state shows whatever the load.
function tintOf(hex) {
  return 'rgb(' + rgbOf(hex).map((v) => Math.round(v * 0.4 + 255 * 0.6)).join(',') + ')';
}
ui.tintOf = tintOf;
const TINTS = SEVERITY.map((name) => tintOf(COLOURS[name]));

// canvasSizes holds each canvas's CSS size as the ResizeObserver last
// reported it, so that drawing reads no layout.
const canvasSizes = new Map();
const resized = new ResizeObserver((entries) => {
  for (const e of entries) {
    const b = e.borderBoxSize && e.borderBoxSize[0];
    canvasSizes.set(e.target, b ? {width: b.inlineSize, height: b.blockSize} : e.target.getBoundingClientRect());
  }
  drawBars();
  drawHistogram();
  drawRate();
});
for (const id of ['bars', 'histogram', 'rate']) resized.observe($(id));

// sizeCanvas matches a canvas's pixels to its CSS size.
function sizeCanvas(c) {
  let r = canvasSizes.get(c);
  if (!r || !r.width) r = c.getBoundingClientRect(); // not yet observed
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(r.width * dpr));
  const h = Math.max(1, Math.round(r.height * dpr));
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return {ctx, w: r.width, h: r.height};
}

// setText changes an element's text only when it differs.
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// drawBars draws one column per Scale of the snapshot in its colour: base
// load below, lighter, outstanding above, maxOrders as a dark tick. A pool
// beyond 1,000 Scales shows its 500 lowest and 500 highest, with a gap
// between. Columns fall on whole pixels; Scales that share one (more Scales
// than pixels, as on a phone) are drawn as one bar, as high as the highest
// of them and in the most alarming colour among them, so that a down or
// lapsed Scale never hides behind its neighbours. Each colour is one path,
// filled once.
function drawBars() {
  const s = ui.snap;
  const c = $('bars');
  const {ctx, w, h} = sizeCanvas(c);
  ctx.clearRect(0, 0, w, h);
  ui.layout = [];
  if (!s || !s.scales.length) {
    ctx.fillStyle = COLOURS.muted;
    ctx.font = '14px system-ui, sans-serif';
    ctx.fillText(s ? 'No Scales in this pool.' : 'Waiting for the first snapshot…', 12, 24);
    return;
  }
  const n = s.scales.length;
  const split = s.histogram ? n / 2 : -1;
  const gap = split > 0 ? 12 : 0;
  const slot = (w - gap) / n;
  let top = 1;
  for (const sc of s.scales) top = Math.max(top, sc.orderCount, sc.maxOrders || 0);
  const pad = 4;
  const y = (v) => h - pad - (v / top) * (h - 2 * pad);
  const fills = SEVERITY.map(() => new Path2D());
  const tints = SEVERITY.map(() => new Path2D());
  const ticks = new Path2D();
  // The column being gathered: its pixels, its highest Scale, its worst
  // colour.
  let cx = -1, cw = 0, high = null, worst = 0;
  const flush = () => {
    if (!high) return;
    tints[worst].rect(cx, y(high.baseLoad), cw, y(0) - y(high.baseLoad));
    fills[worst].rect(cx, y(high.orderCount), cw, y(high.baseLoad) - y(high.orderCount));
    if (high.maxOrders > 0) ticks.rect(cx, y(high.maxOrders) - 1, cw, 2);
  };
  for (let i = 0; i < n; i++) {
    const sc = s.scales[i];
    const off = split > 0 && i >= split ? gap : 0;
    const x0 = Math.floor(i * slot + off);
    const x1 = Math.max(x0 + 1, Math.floor((i + 1) * slot + off));
    const bw = x1 - x0 > 3 ? x1 - x0 - 1 : x1 - x0;
    const sev = severityOf(sc);
    if (x0 !== cx) {
      flush();
      cx = x0; cw = bw; high = sc; worst = sev;
    } else {
      if (sc.orderCount >= high.orderCount) high = sc;
      worst = Math.max(worst, sev);
    }
    ui.layout.push({compId: sc.compId, x: x0, w: bw, colour: COLOURS[SEVERITY[sev]], tint: TINTS[sev],
      top: y(sc.orderCount), base: y(sc.baseLoad), bottom: y(0)});
  }
  flush();
  SEVERITY.forEach((name, k) => { ctx.fillStyle = TINTS[k]; ctx.fill(tints[k]); });
  SEVERITY.forEach((name, k) => { ctx.fillStyle = COLOURS[name]; ctx.fill(fills[k]); });
  ctx.fillStyle = COLOURS.max;
  ctx.fill(ticks);
  if (split > 0) {
    ctx.fillStyle = COLOURS.muted;
    ctx.fillRect(Math.floor(split * slot + gap / 2) - 1, pad, 2, h - 2 * pad);
  }
  if (ui.picked >= n) ui.picked = n - 1;
  if (ui.picked >= 0) {
    const b = ui.layout[ui.picked];
    ctx.strokeStyle = COLOURS.accent;
    ctx.lineWidth = 2;
    ctx.strokeRect(b.x - 1, pad - 2, b.w + 2, h - 2 * pad + 4);
  }
  ctx.fillStyle = COLOURS.muted;
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillText(fmt(top), 6, 14);
  describePicked();
  $('partial').hidden = !s.histogram;
  setText($('partial'), s.histogram
    ? 'Showing the 500 lowest and the 500 highest of ' + fmt(s.scaleCount) + ' Scales; the histogram below counts all of them.'
    : '');
}

function describePicked() {
  const s = ui.snap;
  if (!s || ui.picked < 0 || ui.picked >= s.scales.length) { setText($('picked'), ''); return; }
  const sc = s.scales[ui.picked];
  setText($('picked'), sc.compId + ': ' + sc.state + ', ' + healthOf(sc) + ', orderCount ' + fmt(sc.orderCount) +
    ' (outstanding ' + fmt(sc.outstanding) + ' + base ' + fmt(sc.baseLoad) + ')' +
    (sc.maxOrders ? ', maxOrders ' + fmt(sc.maxOrders) : '') + ', weight ' + fmt(sc.weight));
}

function drawHistogram() {
  const s = ui.snap;
  const c = $('histogram');
  c.hidden = !(s && s.histogram);
  if (c.hidden) return;
  const {ctx, w, h} = sizeCanvas(c);
  ctx.clearRect(0, 0, w, h);
  const counts = s.histogram.counts;
  const most = Math.max(1, ...counts);
  const bw = w / counts.length;
  ctx.font = '11px system-ui, sans-serif';
  for (let i = 0; i < counts.length; i++) {
    const bh = (counts[i] / most) * (h - 18);
    ctx.fillStyle = COLOURS.active;
    ctx.fillRect(i * bw + 1, h - 14 - bh, bw - 2, bh);
  }
  ctx.fillStyle = COLOURS.muted;
  ctx.fillText(fmt(s.histogram.min), 2, h - 2);
  const hi = fmt(s.histogram.min + s.histogram.width * counts.length - 1);
  ctx.fillText(hi, w - ctx.measureText(hi).width - 2, h - 2);
}

// drawRate plots orders dispatched and completed per second, from the
// counters of consecutive snapshots.
function drawRate() {
  const c = $('rate');
  const {ctx, w, h} = sizeCanvas(c);
  ctx.clearRect(0, 0, w, h);
  const pts = [];
  for (let i = 1; i < ui.rates.length; i++) {
    const a = ui.rates[i - 1], b = ui.rates[i];
    const dt = (b.t - a.t) / 1000;
    if (dt <= 0) continue;
    pts.push({t: b.t, d: (b.dispatched - a.dispatched) / dt, c: (b.completed - a.completed) / dt});
  }
  ctx.font = '12px system-ui, sans-serif';
  if (!pts.length) {
    ctx.fillStyle = COLOURS.muted;
    ctx.fillText('Two snapshots are needed for a rate.', 8, 20);
    $('rate-now').textContent = '';
    return;
  }
  const most = Math.max(1, ...pts.map((p) => Math.max(p.d, p.c)));
  const end = pts[pts.length - 1].t;
  const x = (t) => w - ((end - t) / RATE_WINDOW_MS) * w;
  const y = (v) => h - 4 - (v / most) * (h - 20);
  for (const [key, colour] of [['c', COLOURS.down], ['d', COLOURS.active]]) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.beginPath();
    pts.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p[key])) : ctx.moveTo(x(p.t), y(p[key]))));
    ctx.stroke();
  }
  ctx.fillStyle = COLOURS.muted;
  ctx.fillText(fmt(Math.round(most)) + '/s', 4, 12);
  const last = pts[pts.length - 1];
  $('rate-now').textContent = 'Now: ' + fmt(Math.round(last.d)) + ' dispatched/s (blue), ' + fmt(Math.round(last.c)) + ' completed/s (grey).';
}

// ROWS is how many Scales "Scales as a table" shows at a time.
const ROWS = 100;

// fillScaleTable keeps "Scales as a table" while it is open: ROWS Scales of
// the snapshot from ui.rowStart, at most every 2 s, changing only the
// cells whose text changed. All 1,000 rows changed on every snapshot took
// the page's frames for seconds.
function fillScaleTable(s, now) {
  if (!$('scale-details').open || (!now && performance.now() - ui.tableAt < 2000)) return;
  ui.tableAt = performance.now();
  const n = s.scales.length;
  const from = Math.max(0, Math.min(ui.rowStart, Math.floor((n - 1) / ROWS) * ROWS));
  const shown = s.scales.slice(from, from + ROWS);
  ui.rowStart = from;
  const body = $('scale-rows');
  const rows = body.rows;
  while (rows.length > shown.length) body.lastElementChild.remove();
  while (rows.length < shown.length) {
    const tr = document.createElement('tr');
    for (let k = 0; k < 7; k++) tr.append(cell('td', '', k >= 3 ? 'num' : ''));
    body.append(tr);
  }
  shown.forEach((sc, i) => {
    const tr = rows[i];
    if (tr.dataset.compId !== sc.compId) tr.dataset.compId = sc.compId;
    const texts = [sc.compId, sc.state, healthOf(sc), fmt(sc.outstanding), fmt(sc.baseLoad),
      sc.maxOrders ? fmt(sc.maxOrders) : '–', fmt(sc.weight)];
    for (let k = 0; k < 7; k++) setText(tr.cells[k], texts[k]);
  });
  setText($('rows-range'), n ? 'Scales ' + fmt(from + 1) + '–' + fmt(from + shown.length) + ' of the ' + fmt(n) + ' shown above' : 'No Scales.');
  $('rows-prev').disabled = from === 0;
  $('rows-next').disabled = from + ROWS >= n;
}

for (const [id, step] of [['rows-prev', -ROWS], ['rows-next', ROWS]]) {
  $(id).addEventListener('click', () => {
    ui.rowStart = Math.max(0, ui.rowStart + step);
    if (ui.snap) fillScaleTable(ui.snap, true);
  });
}

// refreshTable shows the waterfill table every 5 s, up to its first 100
// levels; a pool beyond 2,000 Scales is left to GET …/table.
async function refreshTable(name) {
  clearTimeout(tableTimer);
  if (ui.pool !== name) return;
  const big = ui.snap && ui.snap.scaleCount > 2000;
  if (big) {
    $('table').replaceChildren();
    $('table-note').textContent = 'Not shown for a pool of more than 2,000 Scales: GET /v1/pools/' + name + '/table.';
  } else {
    try {
      const t = await getJSON('/v1/pools/' + encodeURIComponent(name) + '/table');
      if (ui.pool !== name) return;
      const shown = Math.min(100, t.compIdArr.length);
      const ids = document.createElement('tr');
      const counts = document.createElement('tr');
      ids.append(cell('th', 'compIdArr'));
      counts.append(cell('th', 'dispatchCountArr'));
      for (let i = 0; i < shown; i++) {
        ids.append(cell('td', t.compIdArr[i]));
        counts.append(cell('td', fmt(t.dispatchCountArr[i])));
      }
      $('table').replaceChildren(ids, counts);
      $('table-note').textContent = t.compIdArr.length > shown
        ? 'The first ' + shown + ' of ' + fmt(t.compIdArr.length) + ' levels.'
        : (t.compIdArr.length ? '' : 'No eligible Scale.');
    } catch (e) {
      $('table-note').textContent = e.message;
    }
  }
  tableTimer = setTimeout(() => refreshTable(name), 5000);
}

// ---- keys, routes, token

$('bars').addEventListener('keydown', (e) => {
  const n = ui.snap ? ui.snap.scales.length : 0;
  if (!n) return;
  const moves = {ArrowRight: 1, ArrowLeft: -1, Home: -n, End: n, PageUp: -10, PageDown: 10};
  if (!(e.key in moves)) return;
  e.preventDefault();
  ui.picked = Math.min(n - 1, Math.max(0, (ui.picked < 0 ? 0 : ui.picked + moves[e.key])));
  drawBars();
});

$('bars').addEventListener('click', (e) => {
  const r = $('bars').getBoundingClientRect();
  const x = e.clientX - r.left;
  const i = ui.layout.findIndex((b) => x >= b.x && x < b.x + Math.max(b.w, 1) + 1);
  if (i >= 0) { ui.picked = i; drawBars(); }
});

$('interval').addEventListener('change', () => { if (ui.pool) { stopStream(); watch(ui.pool); } });

$('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const v = $('token').value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
  $('token').value = '';
  $('token').placeholder = v ? 'token set for this tab' : 'bearer token (if the service needs one)';
  route();
});

$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  $('token').placeholder = 'bearer token (if the service needs one)';
  route();
});

// redraw draws the canvases again from ui.snap (tests draw made-up
// snapshots with it).
ui.redraw = () => { drawBars(); drawHistogram(); drawRate(); };

$('scale-details').addEventListener('toggle', () => { if (ui.snap) fillScaleTable(ui.snap, true); });
window.addEventListener('hashchange', route);

function route() {
  showMessage('');
  const m = location.hash.match(/^#\/pool\/(.+)$/);
  if (m) showPool(decodeURIComponent(m[1]));
  else showPools();
}

if (token()) $('token').placeholder = 'token set for this tab';
route();
