// The dashboard of DESIGN §9: the pools, and a pool live from its watch
// stream (GET /v1/pools/{pool}/watch), drawn on canvases so that a
// snapshot of 1,000 Scales (a pool of any size sends no more) costs one
// pass. Nothing is fetched but this service's API; the token the user
// types stays in sessionStorage and goes out as Authorization: Bearer.
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

const fmt = (n) => Number(n).toLocaleString('en-US');
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
  document.title = 'dispatcher: ' + name;
  watch(name);
  refreshTable(name);
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
      if (event === 'snapshot') onSnapshot(JSON.parse(data));
      else if (event === 'problem') onProblem(JSON.parse(data));
    }
  }
}

function onProblem(p) {
  showMessage(p.status === 404 ? 'The pool was deleted.' : 'The service could not read the pool (' + p.status + '): ' + p.detail);
}

function onSnapshot(s) {
  showMessage('');
  const prev = ui.snap;
  ui.snap = s;
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

// colourOf is a Scale's bar colour: health first (what the service saw),
// then state (what an operator set).
function colourOf(sc) {
  const h = healthOf(sc);
  if (h === 'ejected') return COLOURS.ejected;
  if (h === 'lapsed') return COLOURS.lapsed;
  if (sc.state === 'down') return COLOURS.down;
  if (sc.state === 'draining') return COLOURS.draining;
  return COLOURS.active;
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

// sizeCanvas matches a canvas's pixels to its CSS size.
function sizeCanvas(c) {
  const r = c.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(r.width * dpr));
  const h = Math.max(1, Math.round(r.height * dpr));
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return {ctx, w: r.width, h: r.height};
}

// drawBars draws one column per Scale of the snapshot in its colour: base
// load below, lighter, outstanding above, maxOrders as a dark tick. A pool beyond 1,000 Scales
// shows its 500 lowest and 500 highest, with a gap between.
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
  const bw = Math.max(1, slot > 3 ? slot - 1 : slot);
  for (let i = 0; i < n; i++) {
    const sc = s.scales[i];
    const x = i * slot + (split > 0 && i >= split ? gap : 0);
    const colour = colourOf(sc);
    const tint = tintOf(colour);
    ctx.fillStyle = tint;
    ctx.fillRect(x, y(sc.baseLoad), bw, y(0) - y(sc.baseLoad));
    ctx.fillStyle = colour;
    ctx.fillRect(x, y(sc.orderCount), bw, y(sc.baseLoad) - y(sc.orderCount));
    if (sc.maxOrders > 0) {
      ctx.fillStyle = COLOURS.max;
      ctx.fillRect(x, y(sc.maxOrders) - 1, bw, 2);
    }
    ui.layout.push({compId: sc.compId, x, w: bw, colour, tint, top: y(sc.orderCount), base: y(sc.baseLoad), bottom: y(0)});
  }
  if (split > 0) {
    ctx.fillStyle = COLOURS.muted;
    ctx.fillRect(split * slot + gap / 2 - 1, pad, 2, h - 2 * pad);
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
  $('partial').textContent = s.histogram
    ? 'Showing the 500 lowest and the 500 highest of ' + fmt(s.scaleCount) + ' Scales; the histogram below counts all of them.'
    : '';
}

function describePicked() {
  const s = ui.snap;
  if (!s || ui.picked < 0 || ui.picked >= s.scales.length) { $('picked').textContent = ''; return; }
  const sc = s.scales[ui.picked];
  $('picked').textContent = sc.compId + ': ' + sc.state + ', ' + healthOf(sc) + ', orderCount ' + fmt(sc.orderCount) +
    ' (outstanding ' + fmt(sc.outstanding) + ' + base ' + fmt(sc.baseLoad) + ')' +
    (sc.maxOrders ? ', maxOrders ' + fmt(sc.maxOrders) : '') + ', weight ' + fmt(sc.weight);
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

function fillScaleTable(s) {
  if (!document.querySelector('details').open && ui.tableFilled) return;
  ui.tableFilled = true;
  $('scale-rows').replaceChildren(...s.scales.map((sc) => {
    const tr = document.createElement('tr');
    tr.dataset.compId = sc.compId;
    tr.append(cell('td', sc.compId), cell('td', sc.state), cell('td', healthOf(sc)), cell('td', fmt(sc.outstanding), 'num'),
      cell('td', fmt(sc.baseLoad), 'num'), cell('td', sc.maxOrders ? fmt(sc.maxOrders) : '–', 'num'), cell('td', fmt(sc.weight), 'num'));
    return tr;
  }));
}

// refreshTable shows the waterfill table every 5 s, up to its first 100
// levels; a pool beyond 2,000 Scales is left to GET …/table.
let tableTimer = 0;
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

window.addEventListener('resize', () => { drawBars(); drawHistogram(); drawRate(); });
window.addEventListener('hashchange', route);

function route() {
  showMessage('');
  const m = location.hash.match(/^#\/pool\/(.+)$/);
  if (m) showPool(decodeURIComponent(m[1]));
  else showPools();
}

if (token()) $('token').placeholder = 'token set for this tab';
route();
