// The toolsearch console. Plain DOM, no framework, no inline script or
// style (the page is served under a CSP that forbids both). Every value
// from the server or a file goes into the page as text, never as HTML.
'use strict';

const KEY = 'toolsearch.key';
const ADMIN = 'toolsearch.admin';
const $ = (id) => document.getElementById(id);

// el builds an element: el('td', {class: 'num'}, 'text', child...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of kids.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const svgNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of kids) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function badge(text, kind) { return el('span', {class: 'badge ' + kind}, text); }
function fmt(n, d = 3) { return typeof n === 'number' ? n.toFixed(d) : '–'; }
function when(t) { return t ? new Date(t).toLocaleString() : '–'; }
function bytes(n) {
  if (typeof n !== 'number') return '–';
  const u = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + ' ' + u[i];
}
function show(node, on) { node.hidden = !on; }
function fail(box, err) { box.textContent = err ? String(err.message || err) : ''; show(box, !!err); }

// ---- keys: session storage only, sent only as a bearer header ----

const apiKey = () => sessionStorage.getItem(KEY) || '';
const adminToken = () => sessionStorage.getItem(ADMIN) || '';

function keyState() {
  const parts = [];
  parts.push(apiKey() ? 'API key set' : 'no API key');
  if (adminToken()) parts.push('admin token set');
  $('key-state').textContent = parts.join(', ');
  $('rebuild').disabled = !adminToken();
  $('rebuild').title = adminToken() ? 'Rebuild the index now' : 'Needs the admin token';
}

async function api(path, {method = 'GET', body, admin = false} = {}) {
  const headers = {};
  const token = admin ? adminToken() : apiKey();
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {method, headers, cache: 'no-store', credentials: 'omit',
    body: body === undefined ? undefined : JSON.stringify(body)});
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON: reported below */ }
  if (!res.ok) {
    const msg = data && data.error ? data.error.code + ': ' + data.error.message : res.status + ' ' + res.statusText;
    const e = new Error(msg);
    e.status = res.status;
    throw e;
  }
  return data;
}

// ---- views ----

const views = ['status', 'search', 'catalog', 'evals'];
let catalogLoaded = false;

function select(name, focus) {
  if (!views.includes(name)) name = 'status';
  for (const v of views) {
    const tab = $('tab-' + v);
    tab.setAttribute('aria-selected', String(v === name));
    tab.tabIndex = v === name ? 0 : -1;
    show($('view-' + v), v === name);
  }
  if (focus) $('tab-' + name).focus();
  if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  if (name === 'status') refreshStatus();
  if (name === 'catalog' && !catalogLoaded) loadCatalog();
}

function tabs() {
  const list = document.querySelector('[role=tablist]');
  list.addEventListener('click', (ev) => {
    const b = ev.target.closest('[role=tab]');
    if (b) select(b.dataset.view);
  });
  list.addEventListener('keydown', (ev) => {
    const i = views.indexOf(document.activeElement.dataset.view);
    if (i < 0) return;
    const step = {ArrowRight: 1, ArrowLeft: -1}[ev.key];
    if (step) { ev.preventDefault(); select(views[(i + step + views.length) % views.length], true); }
    if (ev.key === 'Home') { ev.preventDefault(); select(views[0], true); }
    if (ev.key === 'End') { ev.preventDefault(); select(views[views.length - 1], true); }
  });
  window.addEventListener('hashchange', () => select(location.hash.slice(1)));
}

// latest numbers the requests of one part of the page: each ask() returns
// a check that holds until the next ask, so an answer to a request that a
// later one replaced is dropped, not drawn over the later one's. Answers
// come in the order the server finishes them, not the order asked: a
// slow report on a server left, a search typed over, a format chosen
// again, a status poll beside a rebuild's.
function latest() {
  let asked = 0;
  return () => {
    const mine = ++asked;
    return () => mine === asked;
  };
}

// ---- status ----

let statusTimer = 0;
const askStatus = latest();

async function refreshStatus() {
  clearTimeout(statusTimer);
  if ($('view-status').hidden) return;
  const current = askStatus();
  try {
    // With a key, what it may see, next to what the index holds.
    const [st, mine] = await Promise.all([
      api('/mcp/tool-search/status', {admin: !!adminToken()}),
      apiKey() ? api('/mcp/tool-search/servers').catch(() => null) : null,
    ]);
    if (!current()) return; // a later call draws, and polls on
    renderStatus(st, mine);
    fail($('status-error'), null);
    $('status-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    if (!current()) return;
    fail($('status-error'), e);
  }
  if (!document.hidden) statusTimer = setTimeout(refreshStatus, 5000);
}

function card(title, ...body) { return el('div', {class: 'card'}, el('h3', {}, title), ...body); }
function kv(pairs) {
  return el('dl', {class: 'kv'}, pairs.filter(Boolean).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function renderStatus(st, mine) {
  const state = !st.ready ? badge('not ready', 'bad') : st.degraded ? badge('degraded', 'warn') : badge('ready', 'ok');
  const emb = st.embedder || {};
  const cat = st.catalog || {};
  // A summary is what any reader of the open status page gets while keys
  // are configured; its index-wide counts say nothing about this key's
  // view, so the console shows the key's own counts instead of them.
  const summary = st.detail === 'summary';
  const cards = [
    card('Index', el('div', {class: 'big', id: 'status-state'}, state, ' ', st.mode || ''),
      kv([!summary && ['tools', String(st.size)], !summary && ['version', st.index_version || '–'], !summary && ['built', when(st.built_at)],
        !summary && ['build took', fmt(st.build_duration_ms, 0) + ' ms'], !summary && ['memory', bytes(st.memory_bytes)],
        !summary && ['quantization', st.quantization || 'none']])),
    !summary && card('Errors',
      kv([['last error', st.last_error || 'none'], ['at', when(st.last_error_at)], ['next retry', when(st.next_retry_at)],
        ['last query error', st.last_query_error || 'none'], ['at', when(st.last_query_error_at)],
        ['query breaker', st.query_breaker || 'closed']])),
    card('Embedder', kv([['provider', emb.provider || '–'], ['model', emb.model || '–'],
      ['dimensions', String(emb.dimensions ?? '–')], ['lexicon', st.lexicon || '–']])),
    !summary && card('Catalog', kv([['sources', (cat.sources || []).join(', ') || '–'], ['hash', el('span', {class: 'mono'}, (cat.hash || '–').slice(0, 16))],
      ['servers', String(cat.servers ?? '–')], ['warnings', String(cat.warning_count ?? 0)], ['skipped', String(cat.skipped_count ?? 0)],
      ['core tools', String(st.core_count ?? 0)], ['templates', String(st.template_count ?? 0)]])),
    card('Service', kv([['version', st.version || '–'], ['API keys', String(st.auth_keys ?? 0)], ['detail', st.detail || '–']])),
    !summary && st.learning && card('Learning', st.learning.enabled
      ? kv([['store', st.learning.store || '–'], ['tools with learned words', String(st.learning.tools)],
        ['tools with companions', String(st.learning.companions)], ['uses recorded', String(st.learning.recorded)],
        ['uses dropped', String(st.learning.dropped)], ['uses waiting for the store', String(st.learning.waiting)], ['last read', when(st.learning.last_load_at)],
        ['last store error', st.learning.last_error || 'none']])
      : el('p', {class: 'muted'}, 'off (learning.enabled in the config)')),
  ].filter(Boolean);
  if (mine) {
    cards.unshift(card('Your key', el('div', {class: 'big', id: 'status-visible'}, String(mine.tools)),
      'tools visible to this key, in ' + mine.servers.length + ' servers'));
  }
  const body = [el('div', {class: 'cards'}, cards)];
  if (summary) {
    body.push(el('p', {class: 'muted'}, 'API keys are configured: without the admin token, status shows a summary only (nothing that depends on the catalog), and the counts are this key\'s.'));
  }
  const ups = st.upstreams || [];
  body.push(el('h3', {}, 'Upstream MCP servers'));
  if (!ups.length) {
    body.push(el('p', {class: 'muted'}, summary ? 'Upstream names and states need the admin token.' : 'No live upstreams: tools come from catalog files.'));
  } else {
    const stateKind = {connected: 'ok', connecting: 'warn', failing: 'bad'};
    // How its tool changes reach the service (status list_changed).
    const changes = {heard: 'at once', no_stream: 'at each refresh: no stream', not_offered: 'at each refresh: not offered'};
    body.push(el('div', {class: 'scroll'}, el('table', {},
      el('thead', {}, el('tr', {}, ['server', 'state', 'breaker', 'tools', 'last success', 'last error', 'next retry', 'changes seen'].map((h) => el('th', {scope: 'col'}, h)))),
      el('tbody', {}, ups.map((u) => el('tr', {},
        el('td', {}, u.name), el('td', {}, badge(u.state + (u.stale ? ' (stale)' : ''), stateKind[u.state] || 'info')),
        el('td', {}, u.breaker || '–'), el('td', {class: 'num'}, String(u.tools)),
        el('td', {}, when(u.last_success)), el('td', {}, u.last_error || '–'), el('td', {}, when(u.next_retry_at)), el('td', {}, changes[u.list_changed] || '–')))))));
  }
  $('status-body').replaceChildren(...body);
}

async function rebuild() {
  const b = $('rebuild');
  b.disabled = true;
  try {
    await api('/mcp/tool-search/rebuild', {method: 'POST', admin: true});
    catalogLoaded = false;
    await refreshStatus();
    $('status-updated').textContent = 'rebuilt ' + new Date().toLocaleTimeString();
  } catch (e) {
    fail($('status-error'), e);
  } finally {
    b.disabled = !adminToken();
  }
}

// ---- search ----

let lastRequest = null;

function searchRequest() {
  const req = {explain: true};
  const input = document.querySelector('input[name=input]:checked').value;
  const text = $('query').value.trim();
  if (input === 'messages') {
    req.messages = text.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
      const m = /^(user|assistant|system)\s*:\s*(.*)$/i.exec(l);
      return m ? {role: m[1].toLowerCase(), content: m[2]} : {role: 'user', content: l};
    });
  } else if (text) {
    req.query = text;
  }
  const tpl = $('template').value.trim();
  if (tpl) req.template = tpl;
  if ($('mode').value) req.mode = $('mode').value;
  const k = parseInt($('top-k').value, 10);
  if (k) req.top_k = k;
  const servers = $('servers').value.split(',').map((s) => s.trim()).filter(Boolean);
  if (servers.length) req.servers = servers;
  req.include_core = $('include-core').checked;
  if ($('read-only').checked) req.read_only = true;
  if ($('exclude-destructive').checked) req.exclude_destructive = true;
  return req;
}

const chosenFormat = () => document.querySelector('input[name=format]:checked').value;

// One request answers the ranking, its explanation and the definitions in
// the chosen provider format; switching formats asks again for that one.
// A search's definitions may be replaced by a format chosen after it, and
// its results by a later search.
const askSearch = latest(), askDefinitions = latest();

async function runSearch(ev) {
  if (ev) ev.preventDefault();
  const req = searchRequest();
  lastRequest = req;
  const format = chosenFormat();
  const current = askSearch(), currentDefinitions = askDefinitions();
  try {
    const res = await api('/mcp/tool-search', {method: 'POST', body: {...req, format}});
    if (!current()) return;
    fail($('search-error'), null);
    renderSearch(res);
    show($('show-as'), res.tools.length > 0);
    if (currentDefinitions()) showDefinitions(res, format);
  } catch (e) {
    if (!current()) return;
    fail($('search-error'), e);
    $('search-summary').replaceChildren();
    $('search-results').replaceChildren();
    show($('show-as'), false);
  }
}

function renderSearch(res) {
  const s = [badge(res.mode, 'info')];
  if (res.degraded) s.push(' ', badge('degraded: keyword ranking', 'warn'));
  if (res.confidence !== undefined) {
    s.push(' confidence ', el('b', {}, fmt(res.confidence)), ' ');
    s.push(res.confident ? badge('confident', 'ok') : badge('not confident', 'warn'));
  }
  if (res.no_match) s.push(' ', badge('no match: weak candidates only', 'bad'));
  s.push(el('span', {class: 'muted'}, ' · ' + res.tools.length + ' tools · ' + fmt(res.took_ms, 2) + ' ms · index ' + res.index_version));
  const summary = [el('p', {id: 'search-state'}, s)];
  if (res.diagnostic && res.diagnostic.embedding_error) summary.push(el('p', {class: 'error'}, res.diagnostic.embedding_error));
  if (res.diagnostic && res.diagnostic.unknown) {
    const more = res.diagnostic.unknown_more ? ` and ${res.diagnostic.unknown_more} more` : '';
    summary.push(el('p', {class: 'muted'}, 'matched nothing: ' + res.diagnostic.unknown.join(', ') + more));
  }
  $('search-summary').replaceChildren(...summary);

  const maxScore = Math.max(1e-9, ...res.tools.map((t) => t.score || 0));
  const rows = res.tools.map((t, i) => {
    const ex = t.explain;
    const why = [];
    if (ex) {
      const terms = Object.entries(ex.matched_terms || {});
      why.push(el('div', {class: 'terms', 'aria-label': 'matched terms'},
        terms.length ? terms.map(([term, fields]) => el('span', {class: 'term'}, el('b', {}, term), ' in ' + fields.join(', ')))
          : el('span', {class: 'muted'}, 'no query term matched')));
      const rk = [];
      if (ex.semantic) rk.push('semantic #' + (ex.semantic.rank || '–') + ' (' + fmt(ex.semantic.score) + ')');
      if (ex.keyword) rk.push('keyword #' + (ex.keyword.rank || '–') + ' (' + fmt(ex.keyword.score) + ')');
      if (ex.companion) rk.push('learned companion of a better tool +' + fmt(ex.companion));
      if (rk.length) why.push(el('div', {class: 'muted'}, rk.join(' · ')));
    }
    const score = typeof t.score === 'number'
      ? [el('span', {class: 'scorebar', 'data-w': Math.round(60 * t.score / maxScore)}), fmt(t.score)] : '–';
    return el('tr', {class: 'hit'},
      el('td', {class: 'num'}, String(i + 1)),
      el('td', {}, el('div', {class: 'name'}, t.name), el('div', {class: 'muted'}, t.server), el('div', {}, t.description)),
      el('td', {}, badge(t.source, t.source === 'core' ? 'info' : 'ok')),
      el('td', {class: 'num'}, score),
      el('td', {class: 'explain'}, why));
  });
  const table = el('table', {id: 'results'},
    el('thead', {}, el('tr', {}, ['#', 'tool', 'source', 'score', 'why it matched'].map((h) => el('th', {scope: 'col'}, h)))),
    el('tbody', {}, rows));
  $('search-results').replaceChildren(el('div', {class: 'scroll'}, table));
  // Widths set through the CSSOM: the CSP forbids style attributes.
  for (const b of table.querySelectorAll('.scorebar')) b.style.width = b.dataset.w + 'px';
}

function showDefinitions(res, format) {
  const box = $('definitions');
  box.textContent = JSON.stringify(res.definitions ?? [], null, 2);
  box.dataset.format = format;
}

async function switchFormat() {
  if (!lastRequest) return;
  const format = chosenFormat();
  const current = askDefinitions();
  try {
    const res = await api('/mcp/tool-search', {method: 'POST', body: {...lastRequest, explain: false, format}});
    if (current()) showDefinitions(res, format);
  } catch (e) {
    if (current()) $('definitions').textContent = String(e.message || e);
  }
}

async function copyDefinitions() {
  const text = $('definitions').textContent;
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch (_) {
    const r = document.createRange();
    r.selectNodeContents($('definitions'));
    const sel = getSelection();
    sel.removeAllRanges();
    sel.addRange(r);
    ok = document.execCommand('copy');
  }
  $('copy-state').textContent = ok ? 'copied' : 'select and copy by hand';
}

// ---- catalog ----

let catalog = null;
// learned: what learning taught, by tool id, for the tools the key sees;
// null when learning is off.
let learned = null;

// Past this many tools the catalog is reported a server at a time: the
// report on all of 100,000 tools is 28 MB, and as many elements in the page.
const wholeCatalogTools = 2000;

const askCatalog = latest();

async function loadCatalog(ev) {
  if (ev) ev.preventDefault();
  const current = askCatalog();
  const server = $('catalog-server').value;
  try {
    if (!server) {
      const list = await api('/mcp/tool-search/servers');
      if (!current()) return;
      if (list.tools > wholeCatalogTools) {
        pickServer(list);
        return;
      }
    }
    const [cat, taught] = await Promise.all([
      api('/mcp/tool-search/catalog' + (server ? '?server=' + encodeURIComponent(server) : '')),
      api('/mcp/tool-search/learned').catch(() => null), // 404 learning_off
    ]);
    if (!current()) return;
    catalog = cat;
    learned = taught ? new Map(taught.tools.map((lt) => [lt.tool, lt])) : null;
    catalogLoaded = true;
    fail($('catalog-error'), null);
    serverOptions(catalog.servers);
    renderCatalog();
  } catch (e) {
    if (!current()) return;
    fail($('catalog-error'), e);
    $('catalog-body').replaceChildren();
    $('catalog-summary').replaceChildren();
  }
}

// serverOptions lists servers in the server choice, keeping the one chosen.
function serverOptions(servers) {
  const sel = $('catalog-server');
  const keep = sel.value;
  const tools = servers.reduce((n, s) => n + s.tools, 0);
  sel.replaceChildren(el('option', {value: ''}, tools > wholeCatalogTools ? 'choose a server' : 'all servers'),
    ...servers.map((s) => el('option', {value: s.name}, s.name + ' (' + s.tools + ')')));
  sel.value = servers.some((s) => s.name === keep) ? keep : '';
}

// pickServer asks for a server of a catalog too large to show whole.
function pickServer(list) {
  catalog = null;
  catalogLoaded = true;
  fail($('catalog-error'), null);
  serverOptions(list.servers);
  $('catalog-summary').replaceChildren(el('p', {},
    list.tools + ' tools in ' + list.servers.length + ' servers: choose a server to see its tools, findings and self-retrieval misses. ',
    el('span', {class: 'muted'}, 'toolsearch lint reports on every tool at once.')));
  $('catalog-body').replaceChildren();
}

function renderCatalog() {
  if (!catalog) return;
  const q = $('catalog-filter').value.trim().toLowerCase();
  const problemsOnly = $('catalog-problems').checked;
  const tools = catalog.tools.filter((t) =>
    (!q || (t.server + '/' + t.name + ' ' + t.description).toLowerCase().includes(q)) &&
    (!problemsOnly || (t.findings || []).length || (t.misses || []).length));
  const findings = catalog.tools.reduce((n, t) => n + (t.findings || []).length, 0);
  const a = catalog.audit;
  $('catalog-summary').replaceChildren(el('p', {},
    catalog.tools.length + ' tools in ' + catalog.servers.length + ' servers · ' + findings + ' lint findings · ',
    a.ran ? a.misses + ' self-retrieval misses (top ' + a.k + ')' : 'audit not run: ' + a.reason,
    el('span', {class: 'muted'}, ' · showing ' + tools.length)));
  const byServer = new Map();
  for (const t of tools) {
    if (!byServer.has(t.server)) byServer.set(t.server, []);
    byServer.get(t.server).push(t);
  }
  const groups = [];
  for (const [server, ts] of byServer) {
    const problems = ts.filter((t) => (t.findings || []).length || (t.misses || []).length).length;
    groups.push(el('details', {open: q || problemsOnly || byServer.size <= 3 ? true : undefined, 'data-server': server},
      el('summary', {}, server + ' · ' + ts.length + ' tools', problems ? [' ', badge(problems + ' with findings', 'warn')] : []),
      el('div', {}, ts.map(toolEntry))));
  }
  $('catalog-body').replaceChildren(...(groups.length ? groups : [el('p', {class: 'muted'}, 'No tool matches.')]));
}

function annotationBadges(t) {
  const a = t.annotations || {};
  const inferred = new Set(t.annotations_inferred || []);
  const out = [];
  const mark = (k, label, kind) => out.push(badge(label + (inferred.has(k) ? ' (inferred)' : ''), kind));
  if (a.readOnlyHint === true) mark('readOnlyHint', 'read-only', 'ok');
  if (a.destructiveHint === true && a.readOnlyHint !== true) mark('destructiveHint', 'destructive', 'bad');
  if (a.openWorldHint === true) mark('openWorldHint', 'open world', 'info');
  return out;
}

function toolEntry(t) {
  const kids = [el('div', {}, el('span', {class: 'name'}, t.name), ' ', ...annotationBadges(t).flatMap((b) => [b, ' '])),
    el('div', {}, t.description || el('span', {class: 'muted'}, '(no description)'))];
  for (const f of t.findings || []) {
    kids.push(el('div', {class: 'finding lint'}, badge(f.severity, f.severity === 'error' ? 'bad' : 'warn'), ' ',
      el('b', {}, f.rule), ': ', f.message));
  }
  for (const m of t.misses || []) {
    kids.push(el('div', {class: 'finding miss'}, badge('audit', 'warn'), ' its own ' + m.query + ' ranks it ',
      m.rank ? '#' + m.rank : 'outside the top ' + (catalog.audit.k || ''), '; first is ', el('b', {}, m.outranked_by),
      m.shared_terms && m.shared_terms.length ? ', matching ' + m.shared_terms.join(', ') : ''));
  }
  const lt = learned && learned.get(t.server + '/' + t.name);
  if (lt && (lt.terms.length || lt.companions.length)) {
    const weighted = (ws) => ws.map((w) => w.name + ' ×' + Math.round(w.weight)).join(', ');
    const row = [badge('learned', 'info')];
    if (lt.terms.length) row.push(' searched as ', el('b', {}, weighted(lt.terms)));
    if (lt.companions.length) row.push(lt.terms.length ? '; ' : ' ', 'used with ', el('b', {}, weighted(lt.companions)));
    if (adminToken()) {
      row.push(' ', el('button', {type: 'button', class: 'forget-learned', title: 'Forget what was learned about this tool (admin token)',
        onclick: () => forgetLearned(t.server + '/' + t.name)}, 'forget'));
    }
    kids.push(el('div', {class: 'finding learned'}, row));
  }
  return el('div', {class: 'tool', 'data-tool': t.server + '/' + t.name}, kids);
}

async function forgetLearned(tool) {
  try {
    await api('/mcp/tool-search/learned?tool=' + encodeURIComponent(tool), {method: 'DELETE', admin: true});
    await loadCatalog();
  } catch (e) {
    fail($('catalog-error'), e);
  }
}

// ---- evals ----

function readJSON(input) {
  const f = input.files && input.files[0];
  if (!f) return Promise.resolve(null);
  if (f.size > 64 << 20) return Promise.reject(new Error(f.name + ' is over 64 MB'));
  return f.text().then((t) => {
    try { return JSON.parse(t); } catch (e) { throw new Error(f.name + ' is not JSON: ' + e.message); }
  });
}

function checkReport(r, name) {
  if (!r || typeof r !== 'object' || !r.summary || !Array.isArray(r.cases)) {
    throw new Error(name + ' is not a toolsearch eval report (toolsearch eval -format json)');
  }
  return r;
}

const askEval = latest();

async function compare(ev) {
  if (ev) ev.preventDefault();
  const current = askEval();
  try {
    const now = checkReport(await readJSON($('eval-report')), 'the report');
    const raw = await readJSON($('eval-baseline'));
    const base = raw ? checkReport(raw, 'the baseline') : null;
    if (!current()) return;
    fail($('eval-error'), null);
    renderEval(now, base);
  } catch (e) {
    if (!current()) return;
    fail($('eval-error'), e);
  }
}

// worse orders outcomes: a lost tool is worse than a lower rank.
function outcome(c) { return c ? [c.found ?? 0, c.first_rank ? -c.first_rank : -1e9] : null; }
function cmp(a, b) { return a[0] - b[0] || a[1] - b[1]; }

function delta(now, base, d = 3) {
  if (base === undefined || base === null) return '';
  const x = now - base;
  if (Math.abs(x) < 1e-9) return el('span', {class: 'delta muted'}, ' ±0');
  return el('span', {class: 'delta ' + (x > 0 ? 'up' : 'down')}, ' ' + (x > 0 ? '+' : '') + x.toFixed(d));
}

function metricsTable(now, base) {
  const cats = [['all', now.summary, base && base.summary]];
  for (const c of now.categories || []) {
    const b = base && (base.categories || []).find((x) => x.category === c.category);
    cats.push([c.category, c, b]);
  }
  const cols = [['cases', 'cases', 0], ['recall', 'recall', 3], ['hit@1', 'hit_at_1', 3], ['MRR', 'mrr', 3], ['nDCG', 'ndcg', 3]];
  return el('div', {class: 'scroll'}, el('table', {id: 'eval-metrics'},
    el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'category'), cols.map(([h]) => el('th', {scope: 'col', class: 'num'}, h)))),
    el('tbody', {}, cats.map(([name, m, b]) => el('tr', {}, el('th', {scope: 'row'}, name),
      cols.map(([, k, d]) => el('td', {class: 'num'}, d ? fmt(m[k], d) : String(m[k]), b ? delta(m[k], b[k], d) : '')))))));
}

function barChart(title, labels, series, max) {
  const w = 640, rowH = 22, left = 150, h = labels.length * rowH * series.length + 28;
  const g = svg('svg', {class: 'chart', width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': title});
  g.append(svg('title', {}, title));
  labels.forEach((label, i) => {
    const y0 = 4 + i * rowH * series.length;
    g.append(svg('text', {x: 0, y: y0 + rowH * series.length / 2 + 4}, label.length > 22 ? label.slice(0, 21) + '…' : label));
    series.forEach((s, j) => {
      const v = s.values[i] ?? 0;
      const bw = Math.max(0, (w - left - 60) * v / (max || 1));
      g.append(svg('rect', {class: s.cls, x: left, y: y0 + j * rowH + 3, width: bw, height: rowH - 6}));
      g.append(svg('text', {x: left + bw + 4, y: y0 + j * rowH + rowH / 2 + 4}, s.fmt(v)));
    });
  });
  return g;
}

function legend(base) {
  return el('div', {class: 'legend'}, el('span', {}, el('span', {class: 'swatch now'}), 'report'),
    base ? el('span', {}, el('span', {class: 'swatch base'}), 'baseline') : '');
}

function rankHistogram(r) {
  const k = r.k || 10;
  const counts = new Array(k + 1).fill(0);
  for (const c of r.cases) counts[c.first_rank && c.first_rank <= k ? c.first_rank - 1 : k]++;
  return counts;
}

function renderEval(now, base) {
  const k = now.k || 10;
  const out = [el('h3', {}, 'Metrics by category' + (base ? ' (change against the baseline)' : '')), metricsTable(now, base)];

  if (base) {
    const before = new Map(base.cases.map((c) => [c.id, c]));
    const rows = [];
    for (const c of now.cases) {
      const b = before.get(c.id);
      if (!b) continue;
      const d = cmp(outcome(c), outcome(b));
      if (d !== 0) rows.push({c, b, d});
    }
    rows.sort((x, y) => x.d - y.d || x.c.id.localeCompare(y.c.id)); // worse first
    const worse = rows.filter((r) => r.d < 0).length;
    out.push(el('h3', {}, 'Per-case diff'), el('p', {id: 'eval-diff-summary'},
      worse + ' cases worse, ' + (rows.length - worse) + ' better, ' + (now.cases.length - rows.length) + ' unchanged or new'));
    const rank = (c) => c.first_rank ? '#' + c.first_rank : 'missed';
    if (rows.length) {
      out.push(el('div', {class: 'scroll'}, el('table', {id: 'eval-diff'},
        el('thead', {}, el('tr', {}, ['case', 'category', 'baseline', 'report', 'found'].map((h) => el('th', {scope: 'col'}, h)))),
        el('tbody', {}, rows.map(({c, b, d}) => el('tr', {class: d < 0 ? 'worse' : 'better'},
          el('td', {class: 'mono'}, c.id), el('td', {}, c.category), el('td', {}, rank(b)), el('td', {}, rank(c),
            d < 0 ? [' ', badge('worse', 'bad')] : [' ', badge('better', 'ok')]),
          el('td', {class: 'num'}, b.found + '/' + b.expected + ' → ' + c.found + '/' + c.expected)))))));
    }
  } else {
    const missed = now.cases.filter((c) => !c.first_rank);
    out.push(el('h3', {}, 'Cases with no expected tool in the top ' + k + ' (' + missed.length + ')'),
      el('ul', {}, missed.slice(0, 200).map((c) => el('li', {}, el('span', {class: 'mono'}, c.id), ' · ' + c.category))));
  }
  const charts = [];
  const cats = (now.categories || []).map((c) => c.category);
  const series = [{cls: 'now', values: (now.categories || []).map((c) => c.recall), fmt: (v) => fmt(v)}];
  if (base) series.push({cls: 'base', values: cats.map((n) => ((base.categories || []).find((c) => c.category === n) || {}).recall), fmt: (v) => fmt(v)});
  if (cats.length) charts.push(el('div', {}, el('h3', {}, 'Recall by category'), legend(base), barChart('Recall by category', cats, series, 1)));

  const labels = Array.from({length: k}, (_, i) => 'rank ' + (i + 1)).concat(['not in top ' + k]);
  const hist = [{cls: 'now', values: rankHistogram(now), fmt: String}];
  if (base) hist.push({cls: 'base', values: rankHistogram(base), fmt: String});
  charts.push(el('div', {}, el('h3', {}, 'Where the first expected tool ranked'), legend(base),
    barChart('Rank of the first expected tool', labels, hist, Math.max(...hist.flatMap((s) => s.values), 1))));
  out.push(el('div', {class: 'charts'}, charts));

  $('eval-body').replaceChildren(...out);
}

// ---- wiring ----

// forgetViews drops everything the previous key was shown, so that nothing
// of it stays on screen under the next key.
function forgetViews() {
  keyState();
  // Nothing asked under the previous key is drawn when it comes.
  for (const ask of [askStatus, askSearch, askDefinitions, askCatalog]) ask();
  catalogLoaded = false;
  catalog = null;
  lastRequest = null;
  for (const id of ['status-body', 'search-summary', 'search-results', 'definitions', 'catalog-summary', 'catalog-body']) {
    $(id).replaceChildren();
  }
  show($('show-as'), false);
  $('catalog-server').replaceChildren(el('option', {value: ''}, 'all servers'));
}

function init() {
  $('api-key').value = apiKey();
  $('admin-token').value = adminToken();
  $('keys').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const k = $('api-key').value.trim();
    const a = $('admin-token').value.trim();
    if (k) sessionStorage.setItem(KEY, k); else sessionStorage.removeItem(KEY);
    if (a) sessionStorage.setItem(ADMIN, a); else sessionStorage.removeItem(ADMIN);
    forgetViews();
    select(location.hash.slice(1) || 'status');
  });
  $('forget').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(ADMIN);
    $('api-key').value = '';
    $('admin-token').value = '';
    forgetViews();
  });
  $('rebuild').addEventListener('click', rebuild);
  $('search-form').addEventListener('submit', runSearch);
  for (const r of document.querySelectorAll('input[name=input]')) {
    r.addEventListener('change', () => {
      const conv = r.value === 'messages' && r.checked;
      show($('messages-hint'), conv);
      show($('operators-hint'), !conv);
      $('query-label').textContent = conv ? 'Conversation' : 'Query';
      $('query').rows = conv ? 5 : 2;
    });
  }
  for (const r of document.querySelectorAll('input[name=format]')) r.addEventListener('change', switchFormat);
  $('copy-defs').addEventListener('click', copyDefinitions);
  $('catalog-form').addEventListener('submit', loadCatalog);
  $('catalog-server').addEventListener('change', loadCatalog);
  $('catalog-filter').addEventListener('input', renderCatalog);
  $('catalog-problems').addEventListener('change', renderCatalog);
  $('eval-form').addEventListener('submit', compare);
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshStatus(); });
  keyState();
  tabs();
  select(location.hash.slice(1) || 'status');
}

document.addEventListener('DOMContentLoaded', init);
