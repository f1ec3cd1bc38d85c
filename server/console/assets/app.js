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
    if (selected !== null) showHandle(handles.get(selected));
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
    on('destroyed', () => { events.close(); refreshHandle(); });
    on('lost', (ev) => { if (ev.lost) addNote(`${ev.lost} events missed`); });
  }

  async function refreshHandle() {
    if (selected === null) return;
    const id = selected;
    try {
      const h = await api('GET', sid(id));
      if (id === selected) showHandle(h);
    } catch (e) {
      if (e.status === 404 && id === selected) showHandle(undefined);
    }
  }

  function showHandle(h) {
    const id = selected;
    $('d-id').textContent = id;
    if (!h) {
      stateLabel($('d-state'), 'destroyed');
      $('d-backend').hidden = true;
      $('d-info').replaceChildren();
      for (const b of ['d-suspend', 'd-resume', 'd-destroy']) $(b).disabled = true;
      $('exec').hidden = true;
      return;
    }
    $('d-backend').hidden = false;
    badge($('d-backend'), h.backend);
    stateLabel($('d-state'), h.state);
    const row = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
    const binds = (h.bindMounts || []).map((b) => `${b.hostPath} → ${b.guestPath}${b.readOnly ? ' (ro)' : ''}`).join(', ');
    $('d-info').replaceChildren(
      ...row('mode', h.mode), ...row('network', h.networkEnabled ? 'on' : 'off'),
      ...row('binds', binds || 'none'),
      ...(h.workspaceId ? row('workspace', h.workspaceId) : []),
      ...(h.agentId ? row('agent', h.agentId) : []),
      ...(h.error ? row('error', h.error) : []));
    $('d-suspend').disabled = !['warm', 'active'].includes(h.state);
    $('d-resume').disabled = h.state !== 'suspended';
    $('d-destroy').disabled = false;
    $('exec').hidden = !['warm', 'active'].includes(h.state);
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
  async function runExec(cmd) {
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
    const rd = r.body.getReader();
    while (!(await rd.read()).done) { /* the events also reach the history */ }
    loadExecs();
  }

  $('exec').addEventListener('submit', async (e) => {
    e.preventDefault();
    const cmd = e.target.cmd.value.trim();
    if (!cmd || selected === null) return;
    $('d-error').textContent = '';
    const run = runExec(cmd).catch((err) => { $('d-error').textContent = err.message; });
    setTimeout(loadExecs, 300); // show it running
    await run;
  });

  const action = (name, method, suffix) => $(name).addEventListener('click', async () => {
    if (selected === null) return;
    $('d-error').textContent = '';
    try {
      showHandle(await api(method, sid(selected) + suffix));
    } catch (e) {
      $('d-error').textContent = e.message;
    }
    refreshList();
  });
  action('d-suspend', 'POST', '/suspend');
  action('d-resume', 'POST', '/resume');
  action('d-destroy', 'DELETE', '');

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
  }).catch(() => {});
  refreshList();
  poll = setInterval(refreshList, 2000);
})();
