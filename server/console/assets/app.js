// srtd web console: sessions, their violations and exec history, and a
// terminal, over srtd's own API (api/openapi.json), authenticated by the
// console's session cookie. Everything the server sends is shown as
// text (textContent), never parsed as HTML: a violation's raw line, an
// exec's output and a session id are the sandboxed command's words.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  // el builds an element: attrs are properties (class → className,
  // data-* → attributes), kids are nodes or text.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) e.append(k instanceof Node ? k : String(k ?? ''));
    return e;
  }

  class APIError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  // loggedOut shows, once, that srtd no longer takes this page's
  // session (a 401): polling and the event stream stop and the page says
  // how to log in again. Never a reload: a 401 that a reload cannot cure
  // (a cookie planted by another port's page) would loop.
  let poll = null;
  let gone = false;
  function loggedOut() {
    if (gone) return;
    gone = true;
    if (poll !== null) clearInterval(poll);
    if (events) events.close();
    $('logged-out').hidden = false;
    document.body.classList.add('logged-out');
  }

  // api calls srtd; a 401 means the console session is gone (loggedOut).
  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: 'same-origin' };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    if (r.status === 401) {
      loggedOut();
      throw new APIError(401, 'logged out');
    }
    const json = (r.headers.get('Content-Type') || '').startsWith('application/json') ? await r.json() : null;
    if (!r.ok) throw new APIError(r.status, (json && json.error) || `${r.status} ${r.statusText}`);
    return json;
  }

  const sid = (id) => '/v1/sandboxes/' + encodeURIComponent(id);
  const when = (t) => (t ? new Date(t).toLocaleTimeString() : '');
  const decoder = () => new TextDecoder('utf-8', { fatal: false });
  const bytes = (b64) => Uint8Array.from(atob(b64 || ''), (c) => c.charCodeAt(0));

  function badge(node, backend) {
    node.textContent = backend || '?';
    node.className = 'badge backend-' + (backend || 'unknown');
    node.title = 'the backend srtd reports this runs on';
  }
  function stateLabel(node, state) {
    node.textContent = state || '';
    node.className = 'state state-' + (state || 'unknown');
  }

  // ---- sessions list: polled (srtd has no stream of launches) ----

  let selected = null; // session id
  let handles = new Map();

  async function refreshList() {
    let list;
    try {
      list = await api('GET', '/v1/sandboxes');
      $('status').textContent = '';
    } catch (e) {
      if (!gone) $('status').textContent = 'srtd unreachable: ' + e.message;
      return;
    }
    handles = new Map(list.map((h) => [h.sessionId, h]));
    const ul = $('sessions');
    ul.replaceChildren(...list.map((h) => {
      const b = el('span');
      badge(b, h.backend);
      const st = el('span');
      stateLabel(st, h.state);
      const li = el('li', { 'data-session': h.sessionId, class: h.sessionId === selected ? 'selected' : '' },
        el('span', { class: 'sid' }, h.sessionId), b, st);
      li.addEventListener('click', () => select(h.sessionId));
      return li;
    }));
    $('no-sessions').hidden = list.length > 0;
    // A selected session missing from the list is asked for once (this
    // list may predate its launch): a 404 ends it.
    if (selected !== null) {
      if (handles.has(selected)) showHandle(handles.get(selected));
      else refreshHandle();
    }
  }

  // ---- one session: handle, live events, exec history ----

  let events = null; // EventSource of the selected session
  let seen = new Set(); // event ids shown (a reconnect may replay)
  let violations = 0;

  function select(id) {
    if (events) events.close();
    selected = id;
    seen = new Set();
    violations = 0;
    $('v-count').textContent = '0';
    $('violations').replaceChildren();
    $('execs').replaceChildren();
    $('d-error').textContent = '';
    $('detail').hidden = false;
    for (const li of $('sessions').children) li.classList.toggle('selected', li.dataset.session === id);
    showHandle(handles.get(id));
    loadExecs();
    events = new EventSource(sid(id) + '/events');
    const on = (type, f) => events.addEventListener(type, (m) => {
      if (m.lastEventId && seen.has(m.lastEventId)) return;
      if (m.lastEventId) seen.add(m.lastEventId);
      f(JSON.parse(m.data));
    });
    on('violation', addViolation);
    for (const t of ['exit', 'killed']) on(t, loadExecs);
    for (const t of ['ready', 'suspended', 'resumed', 'error', 'agent']) on(t, refreshHandle);
    on('destroyed', () => ended(id));
    on('lost', (ev) => { if (ev.lost) addNote(`${ev.lost} events missed`); });
  }

  async function refreshHandle() {
    if (selected === null) return;
    const id = selected;
    try {
      const h = await api('GET', sid(id));
      if (id === selected) showHandle(h);
    } catch (e) {
      if (e.status === 404) ended(id);
    }
  }

  // ended marks the pane of session id, destroyed (its destroyed event,
  // a DELETE, a 404), as over and forgets it: no more requests for it
  // (nothing polls a session that is not selected), its violations and
  // exec history stay on view until another session is selected.
  function ended(id) {
    if (id !== selected) return;
    if (events) { events.close(); events = null; }
    selected = null;
    stateLabel($('d-state'), 'destroyed');
    $('d-backend').hidden = true;
    $('d-info').replaceChildren(el('dt', {}, 'ended'), el('dd', {}, 'destroyed; select or launch another session'));
    for (const b of ['d-suspend', 'd-resume', 'd-destroy']) $(b).disabled = true;
    $('exec').hidden = true;
    for (const li of $('sessions').children) li.classList.remove('selected');
  }

  function showHandle(h) {
    const id = selected;
    if (id === null) return;
    $('d-id').textContent = id;
    if (!h || h.state === 'destroyed') {
      ended(id);
      return;
    }
    $('d-backend').hidden = false;
    badge($('d-backend'), h.backend);
    stateLabel($('d-state'), h.state);
    const row = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
    const binds = (h.bindMounts || []).map((b) => `${b.hostPath} → ${b.guestPath}${b.readOnly ? ' (ro)' : ''}`).join(', ');
    const egress = (h.egressAllowlist || []).join(', ');
    const workdir = h.guestWorkdir || (h.details && h.details.workdir) || '';
    $('d-info').replaceChildren(
      ...row('mode', h.mode), ...row('network', networkLabel(h)),
      ...(h.network === 'host' ? [] : row('egress allow-list', 'baseline' + (egress ? ' + ' + egress : ' only'))),
      ...row('binds', binds || 'none'),
      ...row('workdir', workdir || 'default'),
      ...(h.workspaceId ? row('workspace', h.workspaceId) : []),
      ...(h.agentId ? row('agent', h.agentId) : []),
      ...(h.error ? row('error', h.error) : []));
    $('d-suspend').disabled = !['warm', 'active'].includes(h.state);
    $('d-resume').disabled = h.state !== 'suspended';
    $('d-destroy').disabled = false;
    $('exec').hidden = !['warm', 'active'].includes(h.state);
  }

  // networkLabel says what egress the session really has (the handle's
  // network; networkEnabled alone for an older srtd): a backend none
  // session is on the host's network whatever networkEnabled said.
  function networkLabel(h) {
    switch (h.network) {
      case 'host': return 'host network, unfiltered (backend none: unsandboxed, no proxies)';
      case 'off': return 'off: every host refused (networkEnabled false)';
      case 'allowlist': return 'through the session proxies: the allow-list below';
      default: return h.networkEnabled ? 'on' : 'off';
    }
  }

  function addViolation(ev) {
    const v = ev.violation || {};
    violations += ev.count || 1;
    $('v-count').textContent = String(violations);
    $('violations').append(el('li', { class: 'violation', title: v.reason || '' },
      el('span', { class: 'when' }, when(v.time || ev.time)),
      v.raw || `${v.action} ${v.target}`,
      ev.count > 1 ? ` (×${ev.count})` : ''));
  }
  function addNote(text) {
    $('violations').append(el('li', { class: 'muted' }, text));
  }

  async function loadExecs() {
    if (selected === null) return;
    const id = selected;
    let recs;
    try {
      recs = await api('GET', sid(id) + '/execs');
    } catch (e) {
      return;
    }
    if (id !== selected) return;
    $('execs').replaceChildren(...recs.map(execItem));
  }

  function execItem(x) {
    const outcome = x.state === 'running' ? 'running'
      : x.state === 'killed' ? `killed (${x.reason || '?'})` : `exit ${x.exitCode}`;
    const pre = el('pre', { class: 'output' });
    const dec = decoder();
    for (const o of x.output || []) {
      pre.append(el('span', { class: o.stream }, dec.decode(bytes(o.data), { stream: true })));
    }
    if (x.outputTruncated) pre.append(el('span', { class: 'muted' }, `\n[${x.outputTruncated} more bytes not kept]`));
    return el('li', { class: 'exec', 'data-exec': x.execId || '' },
      el('span', { class: 'when' }, when(x.startedAt)),
      el('span', { class: 'cmd' }, (x.argv || []).join(' ') + (x.argvTruncated ? ' …' : '')),
      ' ', el('span', { class: 'state' }, outcome),
      x.violations ? el('span', { class: 'error' }, ` ${x.violations} violation(s)`) : '',
      pre);
  }

  // runExec runs sh -c cmd and reads its event stream to the end; the
  // history (loaded on its exit) shows the output.
  async function runExec(cmd, started) {
    const id = selected;
    const r = await fetch(sid(id) + '/exec', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ argv: ['sh', '-c', cmd] }),
    });
    if (r.status === 401) loggedOut();
    if (!r.ok) {
      const j = await r.json().catch(() => null);
      throw new APIError(r.status, (j && j.error) || String(r.status));
    }
    started();
    const rd = r.body.getReader();
    while (!(await rd.read()).done) { /* the events also reach the history */ }
    loadExecs();
  }

  $('exec').addEventListener('submit', async (e) => {
    e.preventDefault();
    const cmd = e.target.cmd.value.trim();
    if (!cmd || selected === null) return;
    $('d-error').textContent = '';
    const input = e.target.cmd;
    // Cleared once srtd took the command (not if it refused it: the
    // user may fix it), unless the user typed something else meanwhile.
    const run = runExec(cmd, () => { if (input.value.trim() === cmd) input.value = ''; }).catch((err) => { $('d-error').textContent = err.message; });
    setTimeout(loadExecs, 300); // show it running
    await run;
  });

  const action = (name, method, suffix, ask) => $(name).addEventListener('click', async () => {
    if (selected === null) return;
    const id = selected;
    if (ask && !confirm(ask(id))) return;
    $('d-error').textContent = '';
    try {
      const h = await api(method, sid(id) + suffix);
      if (id === selected) showHandle(h);
    } catch (e) {
      $('d-error').textContent = e.message;
    }
    refreshList();
  });
  action('d-suspend', 'POST', '/suspend');
  action('d-resume', 'POST', '/resume');
  action('d-destroy', 'DELETE', '', (id) => `Destroy session ${id}? Its processes are killed and it cannot be resumed.`);

  $('launch').addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = e.target;
    const spec = { sessionId: f.sessionId.value.trim(), mode: f.mode.value, networkEnabled: f.network.checked };
    if (f.backend.value) spec.backend = f.backend.value;
    if (f.hostPath.value.trim()) {
      spec.bindMounts = [{ hostPath: f.hostPath.value.trim(), guestPath: f.guestPath.value.trim(), readOnly: f.readOnly.checked }];
    }
    if (f.guestWorkdir.value.trim()) spec.guestWorkdir = f.guestWorkdir.value.trim();
    const egress = f.egress.value.split(/[\s,]+/).filter(Boolean);
    if (egress.length) spec.egressAllowlist = egress;
    $('launch-error').textContent = '';
    f.querySelector('button').disabled = true;
    try {
      const h = await api('POST', '/v1/sandboxes', spec);
      f.reset();
      await refreshList();
      select(h.sessionId);
    } catch (err) {
      $('launch-error').textContent = err.message;
    } finally {
      f.querySelector('button').disabled = false;
    }
  });

  // ---- terminal: xterm.js over the terminal WebSocket ----

  let term = null; // {xterm, ws, id}

  $('term-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = e.target;
    $('term-error').textContent = '';
    if (f.backend.value === 'none' && !confirm('Open a host shell? It is NOT sandboxed: it runs as srtd\'s user, with its files and network.')) return;
    closeTerminal();
    const req = { backend: f.backend.value, cols: 100, rows: 24 };
    if (f.cwd.value.trim()) req.cwd = f.cwd.value.trim();
    if (f.network.value) req.network = f.network.value;
    let info;
    try {
      info = await api('POST', '/v1/terminals', req);
    } catch (err) {
      $('term-error').textContent = err.message;
      return;
    }
    $('t-backend').hidden = false;
    badge($('t-backend'), info.backend);
    $('t-network').textContent = 'network: ' + info.network;
    stateLabel($('t-state'), info.state);
    const xterm = new Terminal({ cols: req.cols, rows: req.rows, fontFamily: 'monospace', fontSize: 14 });
    const fit = new FitAddon.FitAddon();
    xterm.loadAddon(fit);
    xterm.open($('term'));
    styleCellsByCSSOM(xterm);
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${info.websocket}`);
    ws.binaryType = 'arraybuffer';
    term = { xterm, ws, id: info.id };
    const resize = () => {
      try { fit.fit(); } catch { /* not laid out yet */ }
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols: xterm.cols, rows: xterm.rows }));
    };
    ws.onopen = () => { resize(); xterm.focus(); };
    ws.onmessage = (m) => {
      if (m.data instanceof ArrayBuffer) { xterm.write(new Uint8Array(m.data)); return; }
      const msg = JSON.parse(m.data);
      if (msg.type === 'exit') stateLabel($('t-state'), `exited ${msg.exitCode}`);
    };
    ws.onclose = () => { if (!$('t-state').textContent.startsWith('exited')) stateLabel($('t-state'), 'closed'); };
    xterm.onData((d) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'input', data: d })); });
    window.addEventListener('resize', resize);
    $('term-close').disabled = false;
  });

  function closeTerminal() {
    if (!term) return;
    term.ws.close(); // srtd kills a terminal whose WebSocket drops
    term.xterm.dispose();
    $('term').replaceChildren();
    term = null;
    $('term-close').disabled = true;
  }
  $('term-close').addEventListener('click', closeTerminal);

  // xterm.js writes its computed styles (cell sizes, colours) into
  // <style> elements, which the CSP (style-src 'self', no
  // 'unsafe-inline') refuses. Those elements are only ever xterm.js's:
  // mirror their text into constructed style sheets (CSSOM, which the
  // CSP does not govern), for the terminal's container and <head> only.
  function mirrorStyles(root) {
    const sheets = new Map();
    const sync = (st) => {
      let sh = sheets.get(st);
      if (!sh) {
        sh = new CSSStyleSheet();
        sheets.set(st, sh);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sh];
      }
      try { sh.replaceSync(st.textContent); } catch { /* keep the last good one */ }
    };
    const drop = (st) => {
      const sh = sheets.get(st);
      if (!sh) return;
      sheets.delete(st);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => x !== sh);
    };
    const styles = (n) => (n.nodeName === 'STYLE' ? [n] : n.querySelectorAll ? [...n.querySelectorAll('style')] : []);
    new MutationObserver((muts) => {
      for (const m of muts) {
        for (const n of m.addedNodes) styles(n).forEach(sync);
        for (const n of m.removedNodes) styles(n).forEach(drop);
        const st = m.target.nodeType === Node.TEXT_NODE ? m.target.parentNode : m.target;
        if (st && st.nodeName === 'STYLE' && st.isConnected) sync(st);
      }
    }).observe(root, { subtree: true, childList: true, characterData: true });
  }
  mirrorStyles($('term'));
  mirrorStyles(document.head);


  // xterm.js's DOM renderer writes a cell's 24-bit colours (and a
  // colour its minimum-contrast rule picked) with
  // setAttribute('style', …), which the CSP also refuses (style-src-attr):
  // those cells would lose their colour. Its row factory's _addStyle
  // (xterm.js 6.0.0, vendor/xterm/VERSION) is the only place that does
  // it: this writes the same declarations through CSSOM instead, which
  // the CSP does not govern. They are xterm.js's own computed colours; a
  // program's output reaches the page as text only. If a newer xterm.js
  // moved it, those colours stay refused (a console warning, and
  // TestConsoleBrowser's 24-bit colour check fails).
  function styleCellsByCSSOM(xterm) {
    const rf = xterm._core?._renderService?._renderer?.value?._rowFactory;
    if (!rf || typeof rf._addStyle !== 'function') {
      console.warn('srtd console: xterm.js row factory not found; 24-bit colours stay refused by the CSP');
      return;
    }
    rf._addStyle = (e, css) => { e.style.cssText += css + ';'; };
  }

  // Log out by fetch, not by the form's own POST: under no-referrer a
  // form navigation's Origin is "null", which srtd refuses (403).
  $('logout').addEventListener('submit', async (e) => {
    e.preventDefault();
    await fetch('/console/logout', { method: 'POST', credentials: 'same-origin', redirect: 'manual' }).catch(() => {});
    location.assign('/console/');
  });

  // ---- start ----

  api('GET', '/v1/probe').then((p) => {
    const vm = p.microvmAvailable ? 'microvm available' : `microvm: ${p.microvmNote || p.microvmState}`;
    $('probe').textContent = `${p.platform}: ${p.available ? 'native available' : p.note} · ${vm}`;
    // The terminal's default is a sandbox: native where the host has
    // it, else microvm; never the host shell, which must be picked.
    if (!p.available && p.microvmAvailable) $('term-form').backend.value = 'microvm';
  }).catch(() => {});
  refreshList();
  poll = setInterval(refreshList, 2000);
})();
