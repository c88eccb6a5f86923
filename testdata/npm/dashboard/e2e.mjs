// The dashboard end to end in headless Chromium (playwright-core), against a
// running `antler serve`. Driven by internal/dashboard's TestDashboardInChromium,
// which reads its environment:
//   ANTLER_BASE        the gateway's base URL
//   ANTLER_ADMIN_KEY   an admin key; ANTLER_AGENT_KEY an agent key
//   ANTLER_CHROMIUM    the browser binary
//   ANTLER_ARTIFACTS   the folder for the screenshots
//   ANTLER_EVIL_URL    a page of another origin (the attacker's)
//   ANTLER_SPARE_SECRET the secret in the "spare" server's env (never shown)
//   ANTLER_CATALOG, ANTLER_METRICS  "1" when those routes exist (else the
//                      pages must show their "not available" state)
// It prints one JSON line: {"ok": true, "admin_task": id, "agent_task": id,
// "screenshots": [...]}, or exits 1 naming the failed step.
import { chromium } from 'playwright-core';
import path from 'node:path';

const env = (k) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is not set`);
  return v;
};
const base = env('ANTLER_BASE');
const artifacts = env('ANTLER_ARTIFACTS');
const catalogOn = process.env.ANTLER_CATALOG === '1';
const metricsOn = process.env.ANTLER_METRICS === '1';
const shots = [];
let step = 'start';

const browser = await chromium.launch({ executablePath: env('ANTLER_CHROMIUM'), headless: true, args: ['--no-sandbox'] });
const problems = [];
let failed = async () => '';
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Record CSP violations from inside the page (the init script is injected
  // by the browser's devtools protocol, not subject to the page's CSP).
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await context.newPage();
  failed = async () => {
    await page.screenshot({ path: path.join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
    return await page.evaluate(() => document.getElementById('banner').textContent + ' | ' + (document.getElementById('config-result') || {}).textContent + ' | ' + document.getElementById('main').textContent.slice(0, 2000)).catch(() => '');
  };
  page.setDefaultTimeout(30000);
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push('console: ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));

  const shot = async (name) => {
    const file = path.join(artifacts, name + '.png');
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
  };
  const go = async (name) => {
    await page.evaluate((n) => { location.hash = n; }, name);
    await page.waitForSelector(`body[data-loaded="${name}"]`);
  };
  const signIn = async (key, role) => {
    await page.fill('#key', key);
    await page.click('#sign-in');
    await page.waitForFunction((r) => document.getElementById('who').textContent.includes(`(${r})`), role);
  };
  const callTool = async (tool, args) => {
    const card = page.locator(`details[data-tool="${tool}"]`);
    if (!(await card.evaluate((d) => d.open))) await card.locator('summary').click();
    await card.locator('textarea.args').fill(JSON.stringify(args));
    await card.locator('form.try button[type="submit"]').click();
    await card.locator('.call-status', { hasText: /done|error|:/ }).waitFor();
    return await card.locator('pre.result').textContent();
  };

  step = 'open /ui';
  const resp = await page.goto(base + '/ui');
  if (!resp.headers()['content-security-policy']) throw new Error('no CSP header on /ui');
  step = 'admin signs in';
  await signIn(env('ANTLER_ADMIN_KEY'), 'admin');

  step = 'servers';
  await go('servers');
  await page.waitForSelector('#servers tr[data-server="demo"] .state-connected');
  await page.waitForSelector('#servers tr[data-server="reports"] .state-connected');
  await shot('servers');

  step = 'tools';
  await go('tools');
  await page.waitForSelector('details[data-tool="demo_echo"]');
  await page.waitForSelector('details[data-tool="reports_submit_report"]');
  const echoed = await callTool('demo_echo', { message: 'hello from the browser' });
  if (!echoed.includes('Echo: hello from the browser')) throw new Error('demo_echo result: ' + echoed);
  await shot('tools');

  step = 'submit a report';
  const submitted = await callTool('reports_submit_report', { topic: 'browser report', delay_ms: 4000 });
  const adminTask = (/mcp-task-[A-Za-z0-9_-]+/.exec(submitted) || [])[0];
  if (!adminTask) throw new Error('no task id in ' + submitted);

  step = 'a slow page does not cover a later one';
  // The servers list answers only after the config page has loaded: its
  // late answer must not replace the page the user went to.
  let releaseServers, serversAsked;
  const held = new Promise((r) => { releaseServers = r; });
  const serversHeld = new Promise((r) => { serversAsked = r; });
  await page.route('**/api/mcp/servers', async (r) => { serversAsked(); await held; await r.continue(); });
  const before = Number(await page.evaluate(() => document.body.dataset.settled));
  await page.evaluate(() => { location.hash = 'servers'; });
  await serversHeld;
  await go('config');
  releaseServers();
  await page.waitForFunction((n) => Number(document.body.dataset.settled) >= n, before + 2);
  const shown = await page.evaluate(() => [document.body.dataset.loaded, document.querySelector('#main h2').textContent]);
  if (shown[0] !== 'config' || shown[1] !== 'Configuration') throw new Error('the late servers page covered the config page: ' + JSON.stringify(shown));
  await page.unroute('**/api/mcp/servers');

  step = 'watch the report live';
  await go('tasks');
  const row = page.locator(`#tasks tr[data-task="${adminTask}"]`);
  await row.waitFor();
  const first = await row.locator('.status').textContent();
  if (first === 'completed') throw new Error('the report was already completed when the page opened: nothing was watched live');
  await row.locator('.status-completed').waitFor({ timeout: 60000 });
  await page.waitForSelector(`#events li[data-task="${adminTask}"] .status-completed`);
  await page.waitForSelector('#stream-state.live');
  await row.click();
  await page.waitForSelector(`#task-detail section[data-task="${adminTask}"]`);
  await shot('tasks');

  step = 'answer a question';
  await go('tools');
  const asked = await callTool('reports_submit_report', { topic: 'asked report', delay_ms: 0, ask: 'Who reads the report?' });
  const askedTask = (/mcp-task-[A-Za-z0-9_-]+/.exec(asked) || [])[0];
  const longOne = await callTool('reports_submit_report', { topic: 'long report', delay_ms: 600000 });
  const longTask = (/mcp-task-[A-Za-z0-9_-]+/.exec(longOne) || [])[0];
  if (!askedTask || !longTask) throw new Error('submits: ' + asked + longOne);
  await go('tasks');
  const askedRow = page.locator(`#tasks tr[data-task="${askedTask}"]`);
  await askedRow.locator('.status-input_required').waitFor({ timeout: 60000 });
  await askedRow.click();
  const answer = page.locator(`#task-detail section[data-task="${askedTask}"] form.answer`);
  await answer.waitFor();
  if (!(await answer.textContent()).includes('Who reads the report?')) throw new Error('the question is not shown');
  await answer.locator('select.answer-action').selectOption('accept');
  await answer.locator('textarea.answer-content').fill('{"audience": "the board"}');
  await answer.locator('button[type="submit"]').click();
  await askedRow.locator('.status-completed').waitFor({ timeout: 60000 });
  await shot('tasks-answered');

  step = 'cancel a task';
  const longRow = page.locator(`#tasks tr[data-task="${longTask}"]`);
  await longRow.click();
  await page.locator(`#task-detail section[data-task="${longTask}"] button.cancel`).click();
  await longRow.locator('.status-cancelled').waitFor({ timeout: 60000 });

  step = 'catalog';
  await go('catalog');
  if (catalogOn) {
    await page.waitForSelector('section[data-state="available"]');
    const approve = page.locator('.catalog-server[data-server="demo"] .change[data-tool="echo"] button.approve');
    if (await approve.count()) {
      await shot('catalog');
      await approve.click();
      await page.waitForFunction(() => document.getElementById('banner').textContent.includes('approved on demo'));
      await page.locator('.catalog-server[data-server="demo"] .change[data-tool="echo"]').waitFor({ state: 'detached' });
    } else {
      throw new Error('no pending change of demo echo to approve');
    }
  } else {
    await page.waitForSelector('.unavailable[data-state="unavailable"]');
    await shot('catalog');
  }

  step = 'plugins';
  await go('plugins');
  await page.waitForSelector(metricsOn ? 'section[data-state="available"]' : '.unavailable[data-state="unavailable"]');
  if (metricsOn) {
    // The redactor's result hook ran on every call made above: its row
    // counts them, with no failure.
    const row = page.locator('#plugins tr[data-plugin="mcpInterceptors[0]"]');
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    if (cells[2] !== 'wasm' || !(Number(cells[3]) >= 1) || cells[4] !== '0') {
      throw new Error('plugin row: ' + JSON.stringify(cells));
    }
  }
  await shot('plugins');

  step = 'agent signs in';
  await page.click('#sign-out');
  await signIn(env('ANTLER_AGENT_KEY'), 'agent');
  await go('tools');
  const agentSubmit = await callTool('reports_submit_report', { topic: 'agent report', delay_ms: 0 });
  const agentTask = (/mcp-task-[A-Za-z0-9_-]+/.exec(agentSubmit) || [])[0];
  if (!agentTask) throw new Error('agent: no task id in ' + agentSubmit);
  step = 'agent sees only its own tasks';
  await go('tasks');
  await page.locator(`#tasks tr[data-task="${agentTask}"]`).waitFor();
  const ids = await page.$$eval('#tasks tr[data-task]', (rows) => rows.map((r) => r.dataset.task));
  if (ids.includes(adminTask) || ids.length !== 1) throw new Error('agent sees tasks ' + JSON.stringify(ids));
  const agentEvents = await page.$$eval('#events li[data-task]', (rows) => rows.map((r) => r.dataset.task));
  if (agentEvents.includes(adminTask)) throw new Error("agent's event stream shows the admin's task");
  await shot('tasks-agent');
  step = 'agent: config is admin only';
  await go('config');
  await page.waitForSelector('.unavailable[data-state="unavailable"]');
  await go('servers');
  await page.waitForSelector('#servers tr[data-server="demo"]');
  await shot('servers-agent');

  step = 'admin edits the config';
  await page.click('#sign-out');
  await signIn(env('ANTLER_ADMIN_KEY'), 'admin');
  await go('config');
  const demoBox = page.locator('#config tr[data-server="demo"] input.enabled');
  if (!(await demoBox.isChecked())) throw new Error('demo is not shown enabled');
  await demoBox.uncheck();
  await page.waitForFunction(() => document.getElementById('config-result').textContent.includes('demo: enabled is now false'));
  await page.click('#config tr[data-server="spare"] button.edit-server');
  const area = page.locator('#config-editor textarea.server-json');
  const server = JSON.parse(await area.inputValue());
  if ((await page.content()).includes(env('ANTLER_SPARE_SECRET'))) throw new Error('the config page shows a secret');
  if (!server.env || server.env.API_TOKEN !== '***') throw new Error('the secret is not masked: ' + JSON.stringify(server.env));
  server.description = 'edited in the browser';
  await area.fill(JSON.stringify(server, null, 2));
  await page.click('#config-editor button[type="submit"]');
  await page.waitForFunction(() => document.getElementById('banner').textContent.includes('spare saved'));
  await shot('config');

  step = 'another origin cannot use the API';
  // A page of another origin on the same host (another port: the same
  // site), even holding the admin key, is refused by the Origin rule: a
  // preflighted JSON PATCH fails, a no-cors text/plain one is a 415 the page
  // cannot read. The Go test checks that reports stayed enabled.
  const evil = await context.newPage();
  await evil.goto(env('ANTLER_EVIL_URL'));
  const attempts = await evil.evaluate(async ({ base, key }) => {
    const out = [];
    const body = JSON.stringify({ server_name: 'reports', enabled: false });
    try {
      const r = await fetch(base + '/api/mcp/config', { method: 'PATCH', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key }, body });
      out.push('cors: ' + r.status);
    } catch (e) {
      out.push('cors: refused');
    }
    try {
      const r = await fetch(base + '/api/mcp/config', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body });
      out.push('no-cors: ' + r.type);
    } catch (e) {
      out.push('no-cors: refused');
    }
    return out;
  }, { base, key: env('ANTLER_ADMIN_KEY') });
  if (attempts[0] !== 'cors: refused') throw new Error('a cross-origin PATCH was answered: ' + attempts.join(', '));
  await evil.close();

  step = 'no CSP violation';
  const violations = await page.evaluate(() => window.__csp.slice());
  if (violations.length || problems.length) throw new Error('CSP violations: ' + JSON.stringify([...violations, ...problems]));
  // The listener works: an inline script is refused and reported.
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__inlineRan = true';
    document.body.append(s);
  });
  await page.waitForFunction(() => window.__csp.length > 0);
  if (await page.evaluate(() => window.__inlineRan === true)) throw new Error('an inline script ran: the CSP does not hold');

  console.log(JSON.stringify({ ok: true, admin_task: adminTask, agent_task: agentTask, attacks: attempts, screenshots: shots }));
} catch (err) {
  console.error(`step "${step}" failed: ${err && err.stack ? err.stack : err}`);
  console.error('page: ' + (await failed()));
  if (problems.length) console.error('page problems: ' + problems.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
}
