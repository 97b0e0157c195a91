// Drives claimd's dashboard in Debian's Chromium with playwright-core: the page shows this
// supervisor's workers, the queues and the dead jobs; "Retry" on a dead job and "Pause" on a
// queue act (tests/integration/test_dashboard.py checks the database afterwards); a job's page
// shows its result. With a token, the page asks for it first.
//
//   node dashboard.mjs '{"url":..., "token":..., "workers":2, "dead":ID, "queue":NAME,
//                        "job":ID, "result":TEXT, "screenshot":PATH}'
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
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const external = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(args.url)) external.push(r.url());
  });
  await page.goto(args.url + '/');
  if (args.token) {
    await step('asks for the token', async () => {
      await page.locator('#tokenbox').waitFor({ state: 'visible', timeout: 10000 });
      await page.fill('#token', args.token);
      await page.click('#tokenform button');
      return true;
    });
  }
  await step('loads', () => page.waitForSelector('body[data-loaded="1"]', { timeout: 15000 }).then(() => true));
  await step('shows the workers', async () => {
    const rows = page.locator('.sv table.workers tbody tr');
    await page.waitForFunction((n) => document.querySelectorAll('.sv table.workers tbody tr').length >= n,
      args.workers, { timeout: 10000 });
    return (await rows.allTextContents()).length;
  });
  await step('draws the chart', async () => {
    const n = await page.locator('#chart polyline').count();
    if (n !== 2) throw new Error(`${n} lines in the chart`);
    return n;
  });
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
  if (args.screenshot) await page.screenshot({ path: args.screenshot, fullPage: true });
  await step('shows a job', async () => {
    await page.fill('#jobid', String(args.job));
    await page.click('#jobform button');
    await page.waitForFunction((id) => document.getElementById('job-id').textContent === String(id),
      args.job, { timeout: 10000 });
    const result = await page.locator('#job-result').textContent();
    if (!result.includes(args.result)) throw new Error(`result shown: ${result}`);
    return (await page.locator('#job-state').textContent());
  });
  if (external.length) throw new Error('requests left claimd: ' + external.join(', '));
  console.log(JSON.stringify(seen));
} catch (e) {
  console.error('dashboard: ' + e.message);
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
