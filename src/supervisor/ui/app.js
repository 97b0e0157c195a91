// claimd's dashboard: reads the HTTP API of the claimd that serves it, once a second, and
// draws the throughput of its workers, the queues, every supervisor sharing the database and
// the dead jobs; a job's own page at #job/ID. No library: the chart is a few SVG lines.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'claimd-token';
let paused = false;   // a token is being asked for

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : String(k ?? ''));
  return e;
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg;
  e.hidden = !msg;
}

// fetch with the token, JSON back; a 401 asks for the token.
async function api(path, options) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(path, Object.assign({ headers }, options || {}));
  if (r.status === 401) {
    paused = true;
    $('tokenbox').hidden = false;
    throw new Error('this claimd needs its token');
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

function ago(seconds) {
  if (seconds == null) return '—';
  if (seconds < 1) return Math.round(seconds * 1000) + ' ms';
  if (seconds < 120) return seconds.toFixed(1) + ' s';
  if (seconds < 7200) return Math.round(seconds / 60) + ' min';
  return Math.round(seconds / 3600) + ' h';
}

function pill(text, cls) {
  return el('span', { class: 'pill ' + (cls || text) }, text);
}

// ---- the chart ----

function drawChart(stats) {
  const svg = $('chart'), W = 800, H = 200, top = 10, bottom = 20, left = 40;
  // whole seconds only: the current one is still counting
  const done = stats.done.slice(0, -1), failed = stats.failed.slice(0, -1), n = done.length;
  const max = Math.max(10, ...done, ...failed);
  const nice = Math.pow(10, Math.floor(Math.log10(max)));
  const ymax = Math.ceil(max / nice) * nice;
  const x = (i) => left + (W - left) * (n > 1 ? i / (n - 1) : 1);
  const y = (v) => top + (H - top - bottom) * (1 - v / ymax);
  const line = (vals, cls) => {
    const p = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    p.setAttribute('class', cls);
    p.setAttribute('points', vals.map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' '));
    return p;
  };
  const ns = (tag, attrs, text) => {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  };
  svg.replaceChildren();
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4;
    svg.append(ns('line', { class: 'grid', x1: left, x2: W, y1: y(v), y2: y(v) }));
    svg.append(ns('text', { class: 'label', x: 2, y: y(v) + 4 }, Number.isInteger(v) ? v : v.toFixed(1)));
  }
  svg.append(ns('text', { class: 'label', x: left, y: H - 4 }, '-' + (n + 1) + ' s'));
  svg.append(ns('text', { class: 'label', x: W - 24, y: H - 4 }, 'now'));
  svg.append(line(done, 'done'), line(failed, 'failed'));
  // the rate: the last 5 whole seconds
  const avg = (a) => a.slice(-5).reduce((s, v) => s + v, 0) / Math.min(5, Math.max(1, a.length));
  const rate = (v) => (v < 10 ? v.toFixed(1) : String(Math.round(v)));
  $('rate-done').textContent = rate(avg(done));
  $('rate-failed').textContent = rate(avg(failed));
}

// ---- the overview ----

async function act(path, method) {
  try {
    await api(path, { method });
    showError('');
    refresh();
  } catch (e) {
    showError(e.message);
  }
}

function drawQueues(queues) {
  const tb = $('queues').tBodies[0];
  tb.replaceChildren(...queues.map((q) => el('tr', { 'data-queue': q.name },
    el('td', {}, q.name), el('td', {}, q.ready), el('td', {}, q.claimed), el('td', {}, q.done),
    el('td', {}, q.dead), el('td', {}, q.oldest_ready_s ? ago(q.oldest_ready_s) : '—'),
    el('td', {}, q.min_interval_ms ? q.min_interval_ms + ' ms apart' : '—'),
    el('td', {}, q.paused ? pill('paused') : pill('running', 'ok')),
    el('td', {}, el('button', {
      class: q.paused ? 'resume' : 'pause',
      onclick: () => act('/v1/queues/' + encodeURIComponent(q.name) + (q.paused ? '/resume' : '/pause'), 'POST'),
    }, q.paused ? 'Resume' : 'Pause')))));
  if (!queues.length) tb.append(el('tr', {}, el('td', { colspan: 9 }, 'no queue has rows yet')));
}

function drawSchedules(schedules) {
  const tb = $('schedules').tBodies[0];
  tb.replaceChildren(...schedules.map((c) => el('tr', { 'data-schedule': c.name },
    el('td', {}, c.name), el('td', {}, el('code', {}, c.cron)), el('td', {}, c.time_zone),
    el('td', {}, c.queue), el('td', {}, c.next_tick_at || '—'),
    el('td', {}, c.last_item_id ? el('a', { href: '#job/' + c.last_item_id }, c.last_tick_at)
      : (c.last_tick_at || '—')),
    el('td', {}, c.ticks),
    el('td', { title: c.error || '' }, c.error ? pill('cannot run', 'bad') :
      c.paused ? pill('paused') : pill('running', 'ok')),
    el('td', {}, el('button', {
      class: c.paused ? 'resume' : 'pause',
      onclick: () => act('/v1/schedules/' + encodeURIComponent(c.name) + (c.paused ? '/resume' : '/pause'), 'POST'),
    }, c.paused ? 'Resume' : 'Pause'), ' ', el('button', {
      class: 'delete',
      onclick: () => confirm('Delete the schedule ' + c.name + '? (The rows it added stay.)') &&
        act('/v1/schedules/' + encodeURIComponent(c.name), 'DELETE'),
    }, 'Delete')))));
  if (!schedules.length) tb.append(el('tr', {}, el('td', { colspan: 9 }, 'no schedules (claimctl schedule NAME --cron EXPR)')));
}

function drawBatches(batches) {
  const tb = $('batches').tBodies[0];
  tb.replaceChildren(...batches.map((b) => {
    const over = b.done + b.dead, pct = b.size ? Math.round(100 * over / b.size) : 100;
    return el('tr', { 'data-batch': b.id },
      el('td', {}, b.id), el('td', {}, b.queue), el('td', {}, b.description || '—'),
      el('td', {}, el('progress', { max: 100, value: pct, title: pct + ' %' }), ' ' + pct + ' %'),
      el('td', {}, b.done), el('td', {}, b.dead), el('td', {}, b.ready + b.claimed),
      el('td', {}, b.callback_id ? el('a', { href: '#job/' + b.callback_id },
        b.callback_id + ' ' + (b.callback_state || 'gone')) : '—'),
      el('td', {}, b.created_at));
  }));
  if (!batches.length) tb.append(el('tr', {}, el('td', { colspan: 9 }, 'no batches (POST …/jobs:batch?batch=1)')));
}

function workerRows(workers) {
  return el('table', { class: 'workers' },
    el('thead', {}, el('tr', {}, ...['slot', 'pid', 'state', 'running', 'oldest item', 'for',
      'done', 'failed', 'restarts', 'heartbeat'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...(workers || []).map((w) => el('tr', { 'data-slot': w.slot },
      el('td', {}, w.slot), el('td', {}, w.pid ?? '—'), el('td', {}, pill(w.state)),
      el('td', {}, w.inflight != null ? w.inflight : '—'),
      el('td', {}, w.item ? el('a', { href: '#job/' + w.item }, w.item) : '—'),
      el('td', {}, w.item_ms != null ? ago(w.item_ms / 1000) : '—'), el('td', {}, w.done),
      el('td', {}, w.failed), el('td', {}, w.restarts),
      el('td', {}, w.rtt_ms != null ? w.rtt_ms.toFixed(2) + ' ms' : '—')))));
}

function drawSupervisors(svs, me) {
  const box = $('supervisors');
  box.replaceChildren(...svs.map((sv) => {
    const mine = me && sv.pid === me.pid && sv.host === me.host;
    const st = mine ? me : sv.status;
    return el('div', { class: 'sv', 'data-host': sv.host, 'data-pid': sv.pid },
      el('h3', {}, sv.host + ' pid ' + sv.pid, ' ', pill(sv.lost ? 'lost' : 'live'),
        el('span', {}, 'claimd ' + sv.version + ' · queues ' + sv.queues +
          (sv.http ? ' · http ' + sv.http : '') + ' · started ' + sv.started_at +
          (mine ? ' · this one (live)' : ' · seen ' + ago(sv.seen_ago_s) + ' ago'))),
      st && st.workers ? workerRows(st.workers) : el('p', {}, 'no pool reported'));
  }));
  if (!svs.length) box.append(el('p', {}, 'no supervisor has written its row yet'));
}

function drawDead(jobs) {
  const tb = $('dead').tBodies[0];
  tb.replaceChildren(...jobs.map((j) => el('tr', { 'data-id': j.id },
    el('td', {}, el('a', { href: '#job/' + j.id }, j.id)), el('td', {}, j.queue),
    el('td', {}, j.attempts + '/' + j.max_attempts), el('td', {}, j.finished_at || '—'),
    el('td', { class: 'err', title: j.last_error || '' }, j.last_error || '—'),
    el('td', {}, el('button', { class: 'retry', onclick: () => act('/v1/jobs/' + j.id + '/retry', 'POST') }, 'Retry'),
      ' ', el('button', { class: 'discard', onclick: () => act('/v1/jobs/' + j.id, 'DELETE') }, 'Discard')))));
  if (!jobs.length) tb.append(el('tr', {}, el('td', { colspan: 6 }, 'no dead jobs')));
}

async function refreshOverview() {
  const [stats, status, queues, svs, dead, health, schedules, batches] = await Promise.all([
    api('/v1/stats?seconds=300'), api('/v1/status'), api('/v1/queues'),
    api('/v1/supervisors'), api('/v1/jobs?state=dead&limit=20'),
    fetch('/healthz').then(async (r) => ({ ok: r.ok, text: (await r.text()).trim() })),
    api('/v1/schedules'), api('/v1/batches?limit=10'),
  ]);
  drawChart(stats);
  drawQueues(queues);
  drawSchedules(schedules);
  drawBatches(batches);
  drawSupervisors(svs, status);
  drawDead(dead);
  $('me').textContent = status.host + ' pid ' + status.pid + ' · queues ' + status.queue +
    ' · up ' + ago(status.uptime_ms / 1000) + ' · database ' + status.db;
  const h = $('health');
  h.textContent = health.ok ? 'healthy' : health.text;
  h.className = 'pill ' + (health.ok ? 'ok' : 'bad');
}

// ---- a job ----

function show(pre, value) {
  pre.textContent = value == null ? '—' :
    typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

async function refreshJob(id) {
  const j = await api('/v1/jobs/' + encodeURIComponent(id));
  $('job-id').textContent = j.id;
  const st = $('job-state');
  st.textContent = j.state;
  st.className = 'pill ' + j.state;
  const f = $('job-fields');
  const rows = [['queue', j.queue], ['attempts', j.attempts + ' of ' + j.max_attempts],
    ['priority', j.priority], ['created', j.created_at], ['run at', j.run_at],
    ['claimed', j.claimed_at], ['claimed by', j.claimed_by], ['finished', j.finished_at],
    ['group', j.group ? j.group + ' #' + j.group_seq : null], ['dedupe', j.dedupe],
    ['content type', j.content_type], ['result type', j.result_type],
    ['payload', j.payload_bytes + ' bytes' + (j.payload_truncated ? ' (the start below)' : '')]];
  f.replaceChildren(...rows.filter((r) => r[1] != null && r[1] !== '')
    .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  show($('job-progress'), j.progress);
  show($('job-result'), j.result !== null ? j.result : j.result_b64 ? '(base64) ' + j.result_b64 : null);
  show($('job-payload'), j.payload !== undefined ? j.payload : '(base64) ' + j.payload_b64);
  show($('job-error'), j.last_error);
  const acts = $('job-actions');
  acts.replaceChildren();
  if (j.state === 'dead')
    acts.append(el('button', { class: 'retry', onclick: () => act('/v1/jobs/' + j.id + '/retry', 'POST') }, 'Retry'), ' ');
  if (j.state === 'dead' || j.state === 'ready')
    acts.append(el('button', { class: 'discard', onclick: () => act('/v1/jobs/' + j.id, 'DELETE') },
      j.state === 'dead' ? 'Discard' : 'Cancel'));
}

// ---- the page ----

function route() {
  const m = location.hash.match(/^#job\/(\d+)$/);
  $('overview').hidden = !!m;
  $('jobpage').hidden = !m;
  return m ? m[1] : null;
}

let busy = false;
async function refresh() {
  if (busy || paused) return;
  busy = true;
  try {
    const id = route();
    if (id) await refreshJob(id);
    else await refreshOverview();
    showError('');
    document.body.dataset.loaded = '1';
  } catch (e) {
    showError(e.message);
  } finally {
    busy = false;
  }
}

// A token in the address (#token=..., as tools/demo prints it): kept for this tab, like one
// typed in, and taken out of the address bar and its history entry at once.
function takeToken() {
  const m = location.hash.match(/^#token=([^&/]+)$/);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  history.replaceState(null, '', location.pathname + location.search);
}

$('tokenform').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('tokenbox').hidden = true;
  paused = false;
  refresh();
});
$('scheduleform').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const q = new URLSearchParams({ cron: $('sc-cron').value.trim() });
  if ($('sc-tz').value.trim()) q.set('tz', $('sc-tz').value.trim());
  if ($('sc-queue').value.trim()) q.set('queue', $('sc-queue').value.trim());
  try {
    await api('/v1/schedules/' + encodeURIComponent($('sc-name').value.trim()) + '?' + q,
      { method: 'PUT', body: $('sc-payload').value });
    showError('');
    $('scheduleform').reset();
    refresh();
  } catch (e) {
    showError(e.message);
  }
});
$('jobform').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const id = $('jobid').value.trim();
  if (/^\d+$/.test(id)) location.hash = '#job/' + id;
});
window.addEventListener('hashchange', () => {
  takeToken();
  paused = false;
  refresh();
});
takeToken();
refresh();
setInterval(refresh, 1000);
