// Drives claimd's dashboard in Debian's Chromium with playwright-core: the page shows this
// supervisor's workers, the queues and the dead jobs; "Retry" on a dead job and "Pause" on a
// queue act, and so does "Pause" on a schedule (tests/integration/test_dashboard.py checks the
// database afterwards); a job's page
// shows its result, and a waiting row's page the parents it still waits for. The token comes in the address (#token=..., then gone from it), and a
// tab opened without it asks for it. The page's own Content-Security-Policy refuses nothing it
// does (a refusal is an error on its console).
//
//   node dashboard.mjs '{"url":..., "token":..., "workers":2, "dead":ID, "queue":NAME,
//                        "job":ID, "result":TEXT, "screenshot":PATH, "schedule":NAME,
//                        "cron":EXPR, "zone":ZONE, "batch":ID, "history_done":N,
//                        "limit_queue":NAME, "filter":{state,queue,error}, "picked":[IDS],
//                        "failing":ID, "waiting":ID, "shots":DIR}  (shots: a screenshot of
//                        each page there)'
// Prints one JSON line of what it saw; exits 1 with the reason on stderr when a step fails.
import { chromium } from 'playwright-core';

const args = JSON.parse(process.argv[2]);
const seen = {};
const step = async (name, fn) => {
  try {
    seen[name] = await fn();
  } catch (e) {
    throw new Error(`${name}: ${e.message.split('\n')[0]}`);
  }
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let code = 0;
try {
  const external = [], refused = [];
  const open = async () => {
    const p = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    p.on('request', (r) => {
      if (!r.url().startsWith(args.url)) external.push(r.url());
    });
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content.Security.Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    return p;
  };
  const page = await open();
  const resp = await page.goto(args.url + '/#token=' + encodeURIComponent(args.token));
  await step('loads', () => page.waitForSelector('body[data-loaded="1"]', { timeout: 15000 }).then(() => true));
  await step('takes the token from the address', async () => {
    const url = page.url();
    if (url.includes('token')) throw new Error('still in the address: ' + url);
    const kept = await page.evaluate(() => sessionStorage.getItem('claimd-token'));
    if (kept !== args.token) throw new Error('not kept for the tab');
    if (await page.locator('#tokenbox').isVisible()) throw new Error('asked for it all the same');
    return url;
  });
  await step('is served with its headers', async () => {
    const h = resp.headers();
    const csp = h['content-security-policy'] || '';
    if (!/script-src 'self'/.test(csp) || !/frame-ancestors 'none'/.test(csp)) throw new Error('CSP: ' + csp);
    if (h['x-frame-options'] !== 'DENY' || h['x-content-type-options'] !== 'nosniff' ||
        h['referrer-policy'] !== 'no-referrer') throw new Error(JSON.stringify(h));
    return true;
  });
  await step('shows the workers', async () => {
    const rows = page.locator('.sv table.workers tbody tr');
    await page.waitForFunction((n) => document.querySelectorAll('.sv table.workers tbody tr').length >= n,
      args.workers, { timeout: 10000 });
    return (await rows.allTextContents()).length;
  });
  await step('shows the item a worker runs', async () => {
    // columns: slot, pid, state, running, oldest item, for, ...
    await page.waitForFunction((id) => [...document.querySelectorAll('.sv table.workers tbody tr')]
      .some((tr) => tr.cells[3]?.textContent === '1' && tr.cells[4]?.textContent === String(id)),
    args.running, { timeout: 10000 });
    return args.running;
  });
  await step('draws the chart', async () => {
    const n = await page.locator('#chart polyline').count();
    if (n !== 2) throw new Error(`${n} lines in the chart`);
    return n;
  });
  if (args.history_done) {
    await step('shows the cluster history', async () => {
      await page.waitForFunction((n) => Number(document.getElementById('history').dataset.done) >= n,
        args.history_done, { timeout: 15000 });
      const lines = await page.locator('#history .hchart polyline').count();
      if (lines !== 3) throw new Error(`${lines} lines in the history chart`);
      return Number(await page.locator('#history').getAttribute('data-done'));
    });
  }
  await step('retries a dead job', async () => {
    const row = page.locator(`#dead tr[data-id="${args.dead}"]`);
    await row.waitFor({ timeout: 10000 });
    await row.locator('button.retry').click();
    await row.waitFor({ state: 'detached', timeout: 10000 });
    return true;
  });
  await step('pauses a queue', async () => {
    const row = page.locator(`#queues tr[data-queue="${args.queue}"]`);
    await row.waitFor({ timeout: 10000 });
    await row.locator('button.pause').click();
    await row.locator('.pill.paused').waitFor({ timeout: 10000 });
    return true;
  });
  if (args.schedule) {
    await step('shows a schedule and pauses it', async () => {
      const row = page.locator(`#schedules tr[data-schedule="${args.schedule}"]`);
      await row.waitFor({ timeout: 10000 });
      const text = await row.textContent();
      if (!text.includes(args.cron) || !text.includes(args.zone)) throw new Error('row: ' + text);
      await row.locator('button.pause').click();
      await row.locator('.pill.paused').waitFor({ timeout: 10000 });
      return text;
    });
    await step('adds a schedule and deletes it', async () => {
      await page.fill('#sc-name', 'weekly-from-the-page');
      await page.fill('#sc-cron', '@weekly');
      await page.fill('#sc-tz', 'Europe/Paris');
      await page.fill('#sc-payload', 'hello');
      await page.click('#scheduleform button');
      const row = page.locator('#schedules tr[data-schedule="weekly-from-the-page"]');
      await row.waitFor({ timeout: 10000 });
      const text = await row.textContent();
      if (!text.includes('@weekly') || !text.includes('Europe/Paris')) throw new Error('row: ' + text);
      page.once('dialog', (d) => d.accept());
      await row.locator('button.delete').click();
      await row.waitFor({ state: 'detached', timeout: 10000 });
      return true;
    });
  }
  if (args.batch) {
    await step('shows a batch', async () => {
      const row = page.locator(`#batches tr[data-batch="${args.batch}"]`);
      await row.waitFor({ timeout: 10000 });
      await page.waitForFunction((id) => {
        const r = document.querySelector(`#batches tr[data-batch="${id}"]`);
        return r && r.textContent.includes('100 %');
      }, args.batch, { timeout: 15000 });
      return (await row.locator('td').nth(4).textContent());
    });
  }
  if (args.screenshot) await page.screenshot({ path: args.screenshot, fullPage: true });
  if (args.limit_queue) {
    await step("sets a key's limit and the back-off on a queue's page", async () => {
      await page.locator(`#queues tr[data-queue="${args.limit_queue}"] a`).click();
      await page.waitForFunction((q) => document.getElementById('q-name').textContent === q,
        args.limit_queue, { timeout: 10000 });
      if (!(await page.locator('#qhistory .hchart polyline').count())) throw new Error('no history chart');
      await page.fill('#l-group', 'k1');
      await page.fill('#l-concurrency', '2');
      await page.click('#limitform button');
      const key = page.locator('#q-keys tr[data-key="k1"]');
      await key.waitFor({ timeout: 10000 });
      const cells = await key.locator('td').allTextContents();
      if (cells[1] !== '2') throw new Error('key row: ' + cells.join(' | '));
      if (args.shots) await page.screenshot({ path: args.shots + '/queue.png', fullPage: true });
      await page.fill('#b-base', '750ms');
      await page.fill('#b-max', '1m');
      await page.click('#backoffform button[type="submit"]');
      await page.waitForFunction(() => document.getElementById('q-backoff').textContent.includes('750 ms'),
        null, { timeout: 10000 });
      await page.click('a[href="#"]');
      await page.waitForSelector('#overview:not([hidden])', { timeout: 10000 });
      return true;
    });
  }
  if (args.filter) {
    await step('filters jobs', async () => {
      await page.click('#nav-jobs');
      await page.waitForSelector('#jobspage:not([hidden])', { timeout: 10000 });
      await page.selectOption('#f-state', args.filter.state);
      await page.fill('#f-queue', args.filter.queue);
      await page.fill('#f-error', args.filter.error);
      await page.click('#filterform button[type="submit"]');
      await page.waitForFunction((n) => document.querySelectorAll('#jobs tbody tr[data-id]').length === n,
        args.picked.length, { timeout: 10000 });
      if (args.shots) await page.screenshot({ path: args.shots + '/jobs.png', fullPage: true });
      return (await page.locator('#jobs tbody tr[data-id]').evaluateAll(
        (trs) => trs.map((tr) => Number(tr.dataset.id))));
    });
    await step('retries the picked rows in bulk', async () => {
      let asked = '';
      page.once('dialog', (d) => { asked = d.message(); d.accept(); });
      await page.click('button.bulk[data-action="retry"]');
      await page.waitForSelector('#bulk-said[data-acted]', { timeout: 15000 });
      if (!asked.includes(String(args.picked.length))) throw new Error('the confirmation asked: ' + asked);
      await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr[data-id]').length === 0,
        null, { timeout: 10000 });
      return Number(await page.locator('#bulk-said').getAttribute('data-acted'));
    });
  }
  if (args.failing) {
    await step("shows a job's failed attempts", async () => {
      await page.goto(args.url + '/#job/' + args.failing);
      await page.waitForFunction(() => document.querySelectorAll('#job-attempts tr[data-attempt]').length === 2,
        null, { timeout: 10000 });
      if (args.shots) await page.screenshot({ path: args.shots + '/job.png', fullPage: true });
      return page.locator('#job-attempts tr[data-attempt]').evaluateAll(
        (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[2].textContent]));
    });
  }
  if (args.waiting) {
    await step("shows the parents a waiting row waits for", async () => {
      await page.goto(args.url + '/#job/' + args.waiting);
      await page.waitForFunction((id) => document.getElementById('job-id').textContent === String(id),
        args.waiting, { timeout: 10000 });
      const parents = await page.locator('#job-deps dd').first().locator('a').evaluateAll(
        (as) => as.map((a) => [Number(a.textContent), a.dataset.holds === '1']));
      const still = await page.locator('#job-deps dd').nth(1).textContent();
      return { parents, still };
    });
  }
  await step('shows a job', async () => {
    await page.fill('#jobid', String(args.job));
    await page.click('#jobform button');
    await page.waitForFunction((id) => document.getElementById('job-id').textContent === String(id),
      args.job, { timeout: 10000 });
    const result = await page.locator('#job-result').textContent();
    if (!result.includes(args.result)) throw new Error(`result shown: ${result}`);
    return (await page.locator('#job-state').textContent());
  });
  await step('asks a new tab for the token', async () => {
    const other = await open();
    await other.goto(args.url + '/');
    await other.locator('#tokenbox').waitFor({ state: 'visible', timeout: 10000 });
    await other.fill('#token', args.token);
    await other.click('#tokenform button');
    await other.waitForSelector('body[data-loaded="1"]', { timeout: 15000 });
    return true;
  });
  if (external.length) throw new Error('requests left claimd: ' + external.join(', '));
  if (refused.length) throw new Error('the Content-Security-Policy refused: ' + refused.join('; '));
  console.log(JSON.stringify(seen));
} catch (e) {
  console.error('dashboard: ' + e.message);
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
