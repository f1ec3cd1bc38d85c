// The srtd web console in headless Chromium, as a user would use it
// (issue 21). e2e/console_test.go starts the real srtd and runs this with:
//
//   SRTD_CONSOLE_URL  the login URL srtd printed ("Web console: <url>")
//   SRTD_WORKDIR      a host directory the session may bind and write
//   SRTD_BACKEND      the backend to launch and open a terminal on (native)
//   CHROMIUM          the browser (default /usr/bin/chromium)
//
// It asserts behaviour, never pixels. Exit status 0 means every check
// passed; a failure prints what was expected and what the page showed.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import http from 'node:http';

const loginURL = process.env.SRTD_CONSOLE_URL;
const workdir = process.env.SRTD_WORKDIR;
const backend = process.env.SRTD_BACKEND || 'native';
assert.ok(loginURL && workdir, 'SRTD_CONSOLE_URL and SRTD_WORKDIR are required');
const base = new URL(loginURL).origin;
const token = new URL(loginURL).searchParams.get('token');
const step = (s) => console.log('ok -', s);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // Root cannot use Chromium's sandbox; the page is our own, on loopback.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  await withoutLogin();
  await asUser();
} finally {
  await browser.close();
}

// A browser that never saw the URL gets the login-required page and 401s.
async function withoutLogin() {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const resp = await page.goto(base + '/console/');
  assert.equal(resp.status(), 401, 'the console without a login');
  await page.locator('#login-required').waitFor();
  assert.equal(await page.locator('#sessions').count(), 0, 'the login page shows no sessions');
  const wrong = await page.goto(base + '/console/?token=' + '0'.repeat(64));
  assert.equal(wrong.status(), 401, 'a wrong token');
  const api = await page.evaluate(async () => (await fetch('/v1/sandboxes')).status);
  assert.equal(api, 401, "an API call from the login page");
  assert.equal((await ctx.cookies()).length, 0, 'no cookie without the token');
  await ctx.close();
  step('without the token: the login-required page, 401 for the API');
}

async function asUser() {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.setDefaultTimeout(30_000);
  const leaks = [];
  page.on('request', (r) => {
    const ref = r.headers()['referer'] || '';
    if (ref.includes(token) || (r.url().includes(token) && r.url() !== loginURL)) leaks.push(r.url() + ' referer ' + ref);
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Every CSP refusal, with what was refused: only xterm.js's <style>
  // elements may be (app.js mirrors them through CSSOM; the terminal's
  // colours are checked below).
  await page.addInitScript(() => {
    window.cspRefused = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      const t = e.target;
      window.cspRefused.push({
        directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample,
        tag: t && t.nodeName, inTerm: !!(t && t.closest && t.closest('#term')),
      });
    });
  });
  // A dialog the test did not expect fails it (dismissed, recorded).
  const dialogs = [];
  page.on('dialog', (d) => { const f = dialogs.shift(); if (!f) { errors.push('unexpected dialog: ' + d.message()); d.dismiss(); } else f(d); });
  const nextDialog = (accept) => new Promise((resolve) => dialogs.push((d) => { resolve(d.message()); accept ? d.accept() : d.dismiss(); }));

  // Log in through the printed URL: redirected to a token-less URL, a
  // cookie set, the CSP on the page.
  const resp = await page.goto(loginURL);
  assert.equal(page.url(), base + '/console/', 'the address bar after login');
  assert.equal(resp.status(), 200);
  const h = resp.headers();
  assert.match(h['content-security-policy'], /^default-src 'none'; script-src 'self'; style-src 'self';/);
  assert.equal(h['x-frame-options'], 'DENY');
  assert.equal(h['x-content-type-options'], 'nosniff');
  assert.equal(h['referrer-policy'], 'no-referrer');
  const [cookie] = await ctx.cookies();
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict' && cookie.path === '/', 'the session cookie: ' + JSON.stringify(cookie));
  assert.equal(cookie.name, 'srtd_console_' + new URL(base).port, "the cookie's name carries srtd's port");
  assert.notEqual(cookie.value, token, 'the cookie is not the login token');
  assert.equal(await page.evaluate(() => document.cookie), '', 'HttpOnly: no script sees the cookie');
  step('logged in through the printed URL');

  // Cookie tossing: a page of another loopback port (cookies ignore
  // ports) plants cookies of the console's name with longer paths, which
  // Chromium sends before the real one. The console keeps working (the
  // rest of this test runs with them) and does not reload.
  const tosser = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<script>for (const p of ['/v1', '/console']) document.cookie = '${cookie.name}=bogus; path=' + p + '; max-age=31536000';</script>tossed`);
  });
  await new Promise((resolve) => tosser.listen(0, new URL(base).hostname, resolve));
  const tp = await ctx.newPage();
  await tp.goto(`http://${new URL(base).hostname}:${tosser.address().port}/`);
  await tp.close();
  tosser.close();
  const tossed = (await ctx.cookies()).filter((c) => c.name === cookie.name && c.value === 'bogus');
  assert.equal(tossed.length, 2, 'the tossed cookies are in the jar: ' + JSON.stringify(await ctx.cookies()));
  let navigations = 0;
  const countNav = (f) => { if (f === page.mainFrame()) navigations++; };
  page.on('framenavigated', countNav);
  assert.equal((await page.reload()).status(), 200, 'the page with tossed cookies');
  assert.equal(await page.evaluate(async () => (await fetch('/v1/sandboxes')).status), 200, 'an API call with tossed cookies');
  await page.waitForTimeout(2500); // a poll or two
  assert.equal(navigations, 1, 'navigations after the reload (a 401 reload loop?)');
  assert.ok(await page.locator('#logged-out').isHidden(), 'the logged-out banner with a live session');
  page.off('framenavigated', countNav);
  step('cookies tossed from another loopback port: the console still works, no reload');

  // Launch a session from the form; the list shows its real backend.
  const id = 'web-' + Date.now().toString(36);
  const f = page.locator('#launch');
  await f.locator('[name=sessionId]').fill(id);
  await f.locator('[name=backend]').selectOption(backend);
  await f.locator('[name=hostPath]').fill(workdir);
  await f.locator('[name=guestPath]').fill('/work');
  await f.locator('[name=guestWorkdir]').fill('/work');
  await f.locator('[name=egress]').fill('allowed.example, *.allowed.test');
  await f.locator('button[type=submit]').click();
  const item = page.locator(`#sessions li[data-session="${id}"]`);
  await item.locator('.badge', { hasText: backend }).waitFor();
  await page.locator('#d-backend', { hasText: backend }).waitFor();
  await page.locator('#d-state', { hasText: 'warm' }).waitFor();
  // The form is cleared for the next launch.
  for (const n of ['sessionId', 'hostPath', 'guestPath', 'guestWorkdir', 'egress']) {
    assert.equal(await f.locator(`[name=${n}]`).inputValue(), '', `the launch form's ${n} after a launch`);
  }
  // The details say what the session may reach and where it works.
  const info = async () => (await page.locator('#d-info').innerText()).replace(/\s+/g, ' ');
  await page.locator('#d-info', { hasText: 'allowed.example' }).waitFor();
  let shown = await info();
  assert.match(shown, /egress allow-list baseline \+ allowed\.example, \*\.allowed\.test/, 'the allow-list in the details');
  assert.match(shown, /network through the session proxies/, 'the network in the details');
  assert.match(shown, /workdir \/work/, 'the workdir in the details');
  assert.ok(shown.includes(`binds ${workdir} → /work`), 'the binds in the details: ' + shown);
  step(`launched ${id}: badge ${backend}, warm; the form cleared; details: ${shown}`);

  // A backend none session is on the host's network, unfiltered: the
  // details say so, not "network on"; it has no allow-list to show.
  {
    const nid = id + '-none';
    await f.locator('[name=sessionId]').fill(nid);
    await f.locator('[name=backend]').selectOption('none');
    await f.locator('button[type=submit]').click();
    await page.locator('#d-id', { hasText: nid }).waitFor();
    await page.locator('#d-info', { hasText: 'host network, unfiltered' }).waitFor();
    shown = await info();
    assert.doesNotMatch(shown, /allow-list/, 'a none session shows no allow-list: ' + shown);
    const del = nextDialog(true);
    await page.locator('#d-destroy').click();
    await del;
    await page.locator(`#sessions li[data-session="${nid}"]`).waitFor({ state: 'detached' });
    await item.click();
    await page.locator('#d-id', { hasText: new RegExp('^' + id + '$') }).waitFor();
  }
  step('a backend none session: "host network, unfiltered"');

  // Make it violate a rule: a write outside its binds and a connection
  // the allow-list refuses. The violation appears live.
  await page.locator('#exec [name=cmd]').fill(
    "echo console-said-$((6*7)); echo x > /etc/srt-console-probe; " +
    "curl -s -o /dev/null --noproxy '' --max-time 10 http://denied.example/; echo curl=$?");
  await page.locator('#exec button[type=submit]').click();
  await page.waitForFunction(() => document.querySelector('#exec [name=cmd]').value === '');
  await page.locator('#violations li', { hasText: 'denied.example' }).waitFor();
  await page.locator('#violations li', { hasText: '/etc/srt-console-probe' }).waitFor();
  step('the violations appeared: ' + (await page.locator('#violations').innerText()).replace(/\n/g, ' | '));

  // Its exec history, with the output.
  const rec = page.locator('#execs li', { hasText: 'console-said-42' });
  await rec.waitFor();
  await rec.locator('.state', { hasText: /^exit \d+$/ }).waitFor();
  assert.match(await rec.locator('.cmd').textContent(), /^sh -c echo console-said/);
  step('the exec history shows the command and its output');

  // A terminal over the WebSocket, with the badge srtd reports.
  const tf = page.locator('#term-form');
  // The default is the sandbox, never the host shell; the host shell
  // asks first (dismissed: no terminal).
  assert.equal(await tf.locator('[name=backend]').inputValue(), 'native', "the terminal's default backend");
  assert.match(await tf.locator('option[value=none]').textContent(), /UNSANDBOXED/, 'the host shell option');
  {
    let posts = 0;
    const count = (r) => { if (r.method() === 'POST' && r.url().endsWith('/v1/terminals')) posts++; };
    page.on('request', count);
    await tf.locator('[name=backend]').selectOption('none');
    const asked = nextDialog(false);
    await tf.locator('button[type=submit]').click();
    assert.match(await asked, /NOT sandboxed/, 'the host shell confirmation');
    await page.waitForTimeout(300);
    page.off('request', count);
    assert.equal(posts, 0, 'a dismissed host shell opened a terminal');
  }
  step('the terminal defaults to native; the host shell asks first');
  await tf.locator('[name=backend]').selectOption(backend);
  await tf.locator('[name=cwd]').fill(workdir);
  await tf.locator('button[type=submit]').click();
  await page.locator('#t-backend', { hasText: backend }).waitFor();
  await page.locator('#term .xterm-rows').waitFor();
  await page.locator('#term').click();
  await page.keyboard.type('bash --norc --noprofile\n');
  await page.waitForTimeout(300);
  await page.keyboard.type('echo $((7*6))xyz\n');
  await page.locator('#term .xterm-rows', { hasText: '42xyz' }).waitFor();
  // xterm.js's own styles reached the page despite the CSP (app.js
  // mirrors them): the rows have xterm's foreground, not the page's.
  const fg = await page.locator('#term .xterm-rows').evaluate((e) => getComputedStyle(e).color);
  assert.equal(fg, 'rgb(255, 255, 255)', "the terminal rows' colour (xterm.js's theme)");
  // A 24-bit colour is a style attribute xterm.js would write, which the
  // CSP refuses; app.js has it written through CSSOM.
  await page.keyboard.type("printf '\\033[38;2;1;2;3mtrue%s\\033[0m\\n' colour\n");
  const tc = page.locator('#term .xterm-rows span', { hasText: /^truecolour$/ });
  await tc.waitFor();
  assert.equal(await tc.evaluate((e) => getComputedStyle(e).color), 'rgb(1, 2, 3)', 'a 24-bit colour in the terminal');
  const refused = await page.evaluate(() => window.cspRefused);
  console.log('CSP refusals (xterm.js\'s <style> elements, mirrored by app.js):', JSON.stringify(refused));
  for (const r of refused) {
    assert.ok(r.directive === 'style-src-elem' && r.tag === 'STYLE',
      'a CSP refusal other than xterm.js\'s styles: ' + JSON.stringify(r));
  }
  await page.keyboard.type('exit\nexit 3\n');
  await page.locator('#t-state', { hasText: 'exited 3' }).waitFor();
  step(`typed in a ${backend} terminal and read its output`);

  // A foreign page with the cookie is refused, the WebSocket too; the
  // cookie alone (no browser saying same-origin) is not enough.
  const evil = { Origin: 'http://evil.example' };
  assert.equal((await ctx.request.get(base + '/v1/sandboxes', { headers: evil })).status(), 403, 'GET, cookie, foreign Origin');
  assert.equal((await ctx.request.post(base + '/v1/sandboxes', { headers: evil, data: { sessionId: 'evil' } })).status(), 403, 'POST, cookie, foreign Origin');
  assert.equal((await ctx.request.delete(base + `/v1/sandboxes/${id}`, { headers: evil })).status(), 403, 'DELETE, cookie, foreign Origin');
  assert.equal((await ctx.request.get(base + '/v1/sandboxes')).status(), 401, 'the cookie without fetch metadata');
  const term = await ctx.request.post(base + '/v1/terminals', { headers: { Origin: base }, data: { backend: 'none' } });
  assert.equal(term.status(), 201, 'a terminal from the page origin');
  const ws = (await term.json()).websocket;
  const cookieHdr = `${cookie.name}=${cookie.value}`;
  assert.equal(await upgrade(ws, cookieHdr, 'http://evil.example'), 403, 'WebSocket, cookie, foreign Origin');
  assert.equal(await upgrade(ws, cookieHdr, base), 101, 'WebSocket, cookie, the page origin');
  step('a foreign Origin is refused (403), WebSocket included');

  // Destroy from the page: it asks first (dismissed: still there), then
  // the pane says destroyed and nothing asks srtd about it again.
  await item.click();
  await page.locator('#d-state', { hasText: /warm|active/ }).waitFor();
  let asked = nextDialog(false);
  await page.locator('#d-destroy').click();
  assert.match(await asked, new RegExp('Destroy session ' + id), 'the destroy confirmation');
  await page.waitForTimeout(500);
  assert.ok(await item.isVisible(), 'a dismissed destroy destroyed the session');
  assert.equal(await page.evaluate(async (p) => (await fetch(p)).status, `/v1/sandboxes/${id}`), 200, 'the session after a dismissed destroy');
  asked = nextDialog(true);
  await page.locator('#d-destroy').click();
  await asked;
  await page.locator('#d-state', { hasText: 'destroyed' }).waitFor();
  await item.waitFor({ state: 'detached' });
  let after = 0;
  const countAfter = (r) => { if (new URL(r.url()).pathname.startsWith(`/v1/sandboxes/${id}`)) after++; };
  page.on('request', countAfter);
  await page.waitForTimeout(4500); // two poll periods
  page.off('request', countAfter);
  assert.equal(after, 0, 'requests about the destroyed session');
  assert.ok(await page.locator('#exec').isHidden(), 'the Run form of a destroyed session');
  assert.ok(await page.locator('#d-destroy').isDisabled(), 'the Destroy button of a destroyed session');
  step('destroyed from the page after a confirmation; no request about it since');

  // A 401 the page cannot cure shows the logged-out state once: no
  // reload (a loop when the 401 outlives it), polling stopped.
  {
    const p2 = await ctx.newPage();
    await p2.goto(base + '/console/');
    let calls = 0;
    await p2.route('**/v1/sandboxes', (r) => { calls++; r.fulfill({ status: 401, contentType: 'application/json', body: '{"error":"missing or bad bearer token"}' }); });
    let navs = 0;
    p2.on('framenavigated', (f) => { if (f === p2.mainFrame()) navs++; });
    await p2.locator('#logged-out').waitFor();
    await p2.waitForTimeout(4500); // two poll periods
    assert.equal(navs, 0, 'navigations after a 401 (a reload loop)');
    assert.ok(calls <= 1, `${calls} polls after the 401; want polling stopped`);
    await p2.close();
  }
  step('a 401: the logged-out banner, no reload, polling stopped');

  // Log out: the login page again, and the API refuses the old cookie.
  await page.locator('#logout button').click();
  await page.locator('#login-required').waitFor();
  const afterLogout = await page.evaluate(async () => (await fetch('/v1/sandboxes')).status);
  assert.equal(afterLogout, 401, 'the API after logout');
  step('logged out');

  assert.deepEqual(leaks, [], 'the login token in a later request or Referer');
  assert.deepEqual(errors, [], 'errors thrown in the page');
  await ctx.close();
}

// upgrade sends a WebSocket handshake and returns the status.
function upgrade(path, cookie, origin) {
  return new Promise((resolve, reject) => {
    const req = http.request(base + path, {
      headers: {
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', Cookie: cookie, Origin: origin,
      },
    });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.end();
  });
}
