// claimd's dashboard: reads the HTTP API of the claimd that serves it, once a second, and
// draws the throughput of its workers, the cluster's history (every supervisor, from the
// database), the queues, every supervisor sharing the database and the dead jobs; a queue's
// page at #queue/NAME (its history, limits, back-off), a job's at #job/ID. No library: the
// charts are a few SVG lines.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'claimd-token';
let paused = false;   // a token is being asked for

// Each History section gets the one body of index.html's template, its range menu in the
// heading.
for (const sec of document.querySelectorAll('section.history')) {
  const body = $('history-body').content.cloneNode(true);
  sec.querySelector('h2').append(' ', body.querySelector('.h-range'));
  sec.append(body);
}

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
  if (!r.ok) {
    const e = new Error(body.error || ('HTTP ' + r.status));
    e.status = r.status;
    e.body = body;
    throw e;
  }
  if (options && options.withLink) return { body, link: r.headers.get('Link') };
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

// ---- the charts ----

function svgEl(tag, attrs, text) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

// Lines of series (each { cls, values }) over n points on svg (W x H), with a y grid.
function plot(svg, W, H, series, xLabels) {
  const top = 10, bottom = 20, left = 40;
  const n = Math.max(...series.map((s) => s.values.length), 1);
  const max = Math.max(10, ...series.flatMap((s) => s.values));
  const nice = Math.pow(10, Math.floor(Math.log10(max)));
  const ymax = Math.ceil(max / nice) * nice;
  const x = (i) => left + (W - left) * (n > 1 ? i / (n - 1) : 1);
  const y = (v) => top + (H - top - bottom) * (1 - v / ymax);
  svg.replaceChildren();
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4;
    svg.append(svgEl('line', { class: 'grid', x1: left, x2: W, y1: y(v), y2: y(v) }));
    svg.append(svgEl('text', { class: 'label', x: 2, y: y(v) + 4 }, Number.isInteger(v) ? v : v.toFixed(1)));
  }
  svg.append(svgEl('text', { class: 'label', x: left, y: H - 4 }, xLabels[0]));
  svg.append(svgEl('text', { class: 'label', x: W - 60, y: H - 4 }, xLabels[1]));
  for (const s of series) {
    svg.append(svgEl('polyline', { class: s.cls,
      points: s.values.map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' ') }));
  }
}

function seconds(v) {
  if (v == null) return '—';
  if (v < 1) return Math.round(v * 1000) + ' ms';
  return (v < 10 ? v.toFixed(2) : Math.round(v)) + ' s';
}

function hhmm(iso) {
  return iso ? iso.slice(11, 16) : '';
}

// The cluster's history (GET /v1/stats) into a History section: done, failed (retried or
// dead) and dead per step, the totals, run and wait percentiles over the range.
function drawHistory(sec, h) {
  const pts = h.points || [];
  plot(sec.querySelector('.hchart'), 800, 160, [
    { cls: 'done', values: pts.map((p) => p.done) },
    { cls: 'failed', values: pts.map((p) => p.failed) },
    { cls: 'dead', values: pts.map((p) => p.dead) },
  ], [pts.length ? (h.step >= 86400 ? pts[0].at.slice(5, 10) : hhmm(pts[0].at)) : '',
    pts.length ? hhmm(pts[pts.length - 1].at) + ' UTC' : '']);
  const t = h.total;
  sec.querySelector('.h-step').textContent = h.step >= 3600 ? (h.step / 3600) + ' h' :
    h.step > 60 ? (h.step / 60) + ' minutes' : 'minute';
  sec.querySelector('.h-done').textContent = t.done;
  sec.querySelector('.h-failed').textContent = t.failed;
  sec.querySelector('.h-dead').textContent = t.dead;
  sec.querySelector('.h-run').textContent = seconds(t.run.p50) + ' / ' + seconds(t.run.p95);
  sec.querySelector('.h-wait').textContent = seconds(t.wait.p50) + ' / ' + seconds(t.wait.p95);
  sec.dataset.points = pts.length;
  sec.dataset.done = t.done;
}

function historyPath(sec, queue) {
  const q = new URLSearchParams({ since: sec.querySelector('.h-range').value });
  if (queue) q.set('queue', queue);
  return '/v1/stats?' + q;
}

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
    el('td', {}, el('a', { href: '#queue/' + encodeURIComponent(q.name) }, q.name)),
    el('td', {}, q.ready), el('td', {}, q.claimed), el('td', {}, q.done),
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
  else tb.append(el('tr', {}, el('td', { colspan: 6 }, el('a', { href: '#jobs?state=dead' }, 'every dead job, filters, bulk actions →'))));
}

async function refreshOverview() {
  const [stats, status, queues, svs, dead, health, schedules, batches, hist] = await Promise.all([
    api('/v1/stats?seconds=300'), api('/v1/status'), api('/v1/queues'),
    api('/v1/supervisors'), api('/v1/jobs?state=dead&limit=20'),
    fetch('/healthz').then(async (r) => ({ ok: r.ok, text: (await r.text()).trim() })),
    api('/v1/schedules'), api('/v1/batches?limit=10'), api(historyPath($('history'))),
  ]);
  drawChart(stats);
  drawHistory($('history'), hist);
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

// ---- a queue ----

function ms(v) {
  return v ? (v >= 1000 && v % 1000 === 0 ? v / 1000 + ' s' : v + ' ms') : '—';
}

function defs(dl, rows) {
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v ?? '—')]));
}

async function refreshQueue(name) {
  const path = '/v1/queues/' + encodeURIComponent(name);
  const [queues, lim, hist] = await Promise.all([api('/v1/queues'), api(path + '/limits'),
    api(historyPath($('qhistory'), name))]);
  const q = queues.find((x) => x.name === name) ||
    { name, ready: 0, claimed: 0, done: 0, dead: 0, paused: false };
  $('q-name').textContent = name;
  const st = $('q-state');
  st.textContent = q.paused ? 'paused' : 'running';
  st.className = 'pill ' + (q.paused ? 'paused' : 'ok');
  const tg = $('q-toggle');
  tg.textContent = q.paused ? 'Resume' : 'Pause';
  tg.className = q.paused ? 'resume' : 'pause';
  tg.onclick = () => act(path + (q.paused ? '/resume' : '/pause'), 'POST');
  defs($('q-counts'), [['ready', q.ready], ['claimed', q.claimed], ['done', q.done],
    ['dead', el('a', { href: '#jobs?state=dead&queue=' + encodeURIComponent(name) }, q.dead)],
    ['oldest ready', q.oldest_ready_s ? ago(q.oldest_ready_s) : '—']]);
  drawHistory($('qhistory'), hist);
  defs($('q-limits'), [
    ['rate', lim.min_interval_ms ? 'a start per ' + ms(lim.min_interval_ms) +
      (lim.burst > 1 ? ', up to ' + lim.burst + ' at once' : '') : 'none'],
    ['every key', (lim.key_concurrency ? lim.key_concurrency + ' at once' : 'no limit at once') +
      (lim.key_interval_ms ? ', a start per ' + ms(lim.key_interval_ms) +
        (lim.key_burst > 1 ? ' (burst ' + lim.key_burst + ')' : '') : '')]]);
  const tb = $('q-keys').tBodies[0];
  const own = (v, f) => (v == null ? 'queue\'s' : f(v));
  tb.replaceChildren(...lim.keys.map((k) => el('tr', { 'data-key': k.key },
    el('td', {}, k.key), el('td', {}, own(k.concurrency, (v) => v || 'no limit')),
    el('td', {}, own(k.interval_ms, ms)), el('td', {}, own(k.burst, (v) => v)),
    el('td', {}, k.running), el('td', {}, k.waiting))));
  if (!lim.keys.length) tb.append(el('tr', {}, el('td', { colspan: 6 }, 'no key has limits of its own')));
  defs($('q-backoff'), [['base', ms(q.retry_base_ms)], ['max', ms(q.retry_max_ms)],
    ['jitter', q.retry_jitter_pct != null ? q.retry_jitter_pct + ' %' : '—']]);
}

async function post(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v != null && v !== false) q.set(k, v);
  try {
    await api(path + (q.toString() ? '?' + q : ''), { method: 'POST' });
    showError('');
    refresh();
    return true;
  } catch (e) {
    showError(e.message);
    return false;
  }
}

// ---- the job browser ----

const FILTERS = ['state', 'queue', 'group', 'dedupe', 'error', 'id'];

// The filters in the address (#jobs?state=dead&queue=mail), as the API takes them.
function filtersOf(query) {
  const q = new URLSearchParams(query), f = new URLSearchParams();
  for (const k of FILTERS) if (q.get(k)) f.set(k, q.get(k));
  return { filters: f, before: q.get('before') };
}

let shownFilters = null;   // the form shows these (it is not redrawn while being typed in)

async function refreshJobs(query) {
  const { filters, before } = filtersOf(query);
  if (shownFilters !== filters.toString()) {
    shownFilters = filters.toString();
    for (const k of FILTERS) $('f-' + k).value = filters.get(k) || '';
    $('bulk-said').textContent = '';
  }
  const q = new URLSearchParams(filters);
  q.set('limit', '50');
  if (before) q.set('before', before);
  const { body: jobs, link } = await api('/v1/jobs?' + q, { withLink: true });
  const tb = $('jobs').tBodies[0];
  tb.replaceChildren(...jobs.map((j) => el('tr', { 'data-id': j.id },
    el('td', {}, el('a', { href: '#job/' + j.id }, j.id)),
    el('td', {}, el('a', { href: '#queue/' + encodeURIComponent(j.queue) }, j.queue)),
    el('td', {}, pill(j.state)), el('td', {}, j.attempts + '/' + j.max_attempts),
    el('td', {}, j.group || '—'), el('td', {}, j.created_at || '—'),
    el('td', {}, j.finished_at || '—'),
    el('td', { class: 'err', title: j.last_error || '' }, j.last_error || '—'))));
  if (!jobs.length) tb.append(el('tr', {}, el('td', { colspan: 8 }, 'no rows picked')));
  // the next page: the Link header's before= (a short page may have more past its span)
  const m = link && link.match(/before=(\d+)/);
  const next = $('jobs-next');
  next.hidden = !m;
  if (m) {
    const nq = new URLSearchParams(filters);
    nq.set('before', m[1]);
    next.href = '#jobs?' + nq;
  }
  document.body.dataset.jobs = jobs.length;
}

// A bulk action on what the filters pick: the count first, then a confirmation of that
// count; the API refuses (409) when the rows picked changed in between.
async function bulk(action) {
  const { filters } = filtersOf(location.hash.replace(/^#jobs\??/, ''));
  const q = new URLSearchParams(filters);
  q.set('action', action);
  const said = $('bulk-said');
  try {
    const first = await api('/v1/jobs/bulk?' + q, { method: 'POST' });
    if (!first.count) {
      said.textContent = 'no rows to ' + action;
      return;
    }
    if (!confirm(action[0].toUpperCase() + action.slice(1) + ' ' + first.count + ' rows?')) {
      said.textContent = 'nothing done';
      return;
    }
    q.set('confirm', first.count);
    const done = await api('/v1/jobs/bulk?' + q, { method: 'POST' });
    said.textContent = done.acted + ' rows: ' + action + (action === 'retry' ? ' (put back)' :
      action === 'discard' ? ' (deleted)' : ' (deleted, or stopped where they run)');
    said.dataset.acted = done.acted;
    showError('');
    refresh();
  } catch (e) {
    showError(e.status === 409 ? 'the rows picked changed (' + e.body.count + ' now): try again' : e.message);
  }
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
  const at = $('job-attempts').tBodies[0];
  at.replaceChildren(...(j.attempt_errors || []).map((a) => el('tr', { 'data-attempt': a.attempt },
    el('td', {}, a.attempt), el('td', {}, a.failed_at), el('td', { class: 'err', title: a.error || '' }, a.error || '—'))));
  if (!(j.attempt_errors || []).length) at.append(el('tr', {}, el('td', { colspan: 3 }, 'none')));
  // A parent holds a ready row until it is done (or dead, on an edge that runs the row then);
  // those are the ones the row waits for now (claimd-workflows(7)).
  const holds = (x) => j.state === 'ready' && x.state && x.state !== 'done' &&
    !(x.state === 'dead' && x.on_dead === 'run');
  const links = (l, more, parents) => (l && l.length ? el('span', {}, ...l.flatMap((x) => [
    el('a', parents && holds(x) ? { href: '#job/' + x.id, class: 'holds', 'data-holds': '1',
      title: 'it waits for this row' } : { href: '#job/' + x.id }, x.id), ' ',
    pill(x.state || 'gone'), parents && x.on_dead === 'run' ? ' (runs if it dies) ' : ' ']),
  more ? '…' : '') : '—');
  const waiting = j.state === 'ready' && j.waiting_for > 0 ?
    j.waiting_for + ' of its parents (marked) not finished' : j.parents && j.parents.length ? 'none' : null;
  defs($('job-deps'), [['waits for', links(j.parents, j.parents_more, true)],
    ['still waiting for', waiting], ['waited for by', links(j.children, j.children_more, false)]]);
  const b = j.batch;
  $('job-batch').replaceChildren(b ? 'batch ' + b.id + ' (' + (b.description || 'no description') +
    '): ' + b.done + ' done, ' + b.dead + ' dead, ' + (b.ready + b.claimed) + ' left of ' + b.size : '—');
  const acts = $('job-actions');
  acts.replaceChildren();
  if (j.state === 'dead')
    acts.append(el('button', { class: 'retry', onclick: () => act('/v1/jobs/' + j.id + '/retry', 'POST') }, 'Retry'), ' ');
  if (j.state === 'dead' || j.state === 'ready')
    acts.append(el('button', { class: 'discard', onclick: () => act('/v1/jobs/' + j.id, 'DELETE') },
      j.state === 'dead' ? 'Discard' : 'Cancel'));
}

// ---- the page ----

// The page the address names: #job/ID, #queue/NAME, #jobs?filters, else the overview.
function route() {
  const h = location.hash;
  let m;
  const r = (m = h.match(/^#job\/(\d+)$/)) ? { page: 'jobpage', arg: m[1] } :
    (m = h.match(/^#queue\/(.+)$/)) ? { page: 'queuepage', arg: decodeURIComponent(m[1]) } :
    (m = h.match(/^#jobs(?:\?(.*))?$/)) && $('jobspage') ? { page: 'jobspage', arg: m[1] || '' } :
    { page: 'overview', arg: null };
  for (const id of ['overview', 'jobpage', 'queuepage', 'jobspage'])
    if ($(id)) $(id).hidden = id !== r.page;
  $('nav-overview').className = r.page === 'overview' ? 'here' : '';
  $('nav-jobs').className = r.page === 'jobspage' ? 'here' : '';
  return r;
}

const pages = {
  overview: () => refreshOverview(),
  jobpage: (id) => refreshJob(id),
  queuepage: (name) => refreshQueue(name),
  jobspage: (q) => refreshJobs(q),
};

let busy = false;
async function refresh() {
  if (busy || paused) return;
  busy = true;
  try {
    const r = route();
    await pages[r.page](r.arg);
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
for (const sel of document.querySelectorAll('.h-range')) sel.addEventListener('change', () => refresh());
$('filterform').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const q = new URLSearchParams();
  for (const k of FILTERS) if ($('f-' + k).value.trim()) q.set(k, $('f-' + k).value.trim());
  location.hash = '#jobs' + (q.toString() ? '?' + q : '');
});
for (const b of document.querySelectorAll('button.bulk'))
  b.addEventListener('click', () => bulk(b.dataset.action));
$('limitform').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const ok = await post('/v1/queues/' + encodeURIComponent(route().arg) + '/limit', {
    group: $('l-each').checked ? '' : $('l-group').value.trim(),
    each_group: $('l-each').checked ? '1' : '',
    concurrency: $('l-concurrency').value.trim(), interval: $('l-interval').value.trim(),
    burst: $('l-burst').value.trim() });
  if (ok) $('limitform').reset();
});
$('backoffform').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const ok = await post('/v1/queues/' + encodeURIComponent(route().arg) + '/backoff', {
    base: $('b-base').value.trim(), max: $('b-max').value.trim(), jitter: $('b-jitter').value.trim() });
  if (ok) $('backoffform').reset();
});
$('b-reset').addEventListener('click', () =>
  post('/v1/queues/' + encodeURIComponent(route().arg) + '/backoff', { reset: '1' }));
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
