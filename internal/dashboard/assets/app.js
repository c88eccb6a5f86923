// The dashboard's pages: servers, tools, tasks, catalog, plugins, config.
// Each page is a function that fills <main> from the API under the tab's key.
import { api, apiKey, setApiKey, errorText, follow, el, pretty, token } from './api.js';
import { parseMetrics, pluginRows } from './metrics.js';

const main = document.getElementById('main');
const banner = document.getElementById('banner');
let leave = null; // ends the current page's streams
let role = 'unknown';

let routeSeq = 0; // counts route() calls: only the latest one's page renders
let settled = 0; // counts the route() calls that have finished, live or not

// newView is one route's hold on the page: a page that loads after a later
// navigation (a slow answer overtaken by a fast one) renders nothing and
// ends what it started, rather than replacing the page the user went to.
function newView() {
  const seq = ++routeSeq;
  const live = () => seq === routeSeq;
  return {
    live,
    show: (...nodes) => { if (live()) main.replaceChildren(...nodes); },
    onLeave: (end) => { if (live()) leave = end; else end(); },
  };
}

function note(text, isError) {
  banner.hidden = !text;
  banner.textContent = text || '';
  banner.className = isError ? 'banner error' : 'banner';
}

function notAvailable(title, why) {
  return el('section', { class: 'unavailable', 'data-state': 'unavailable' }, el('h2', {}, title), el('p', {}, 'Not available: ', why));
}

// A 401 from any page asks for a key; a 403 says the role does not allow it.
function refusal(res, what) {
  if (res.status === 401) return notAvailable(what, 'the API key is missing or wrong; sign in above. ' + errorText(res));
  if (res.status === 403) return notAvailable(what, 'this key is not allowed to see it (admin only). ' + errorText(res));
  return notAvailable(what, errorText(res));
}

async function whoami() {
  const who = document.getElementById('who');
  const res = await api('GET', '/api/mcp/config');
  if (res.status === 401) role = 'signed out';
  else if (res.ok) role = 'admin';
  else if (res.status === 403) role = 'agent';
  else role = 'unknown';
  who.textContent = apiKey() ? `signed in (${role})` : `no key (${role})`;
  document.body.dataset.role = token(role);
}

// ---- servers ----

async function serversPage(view) {
  const res = await api('GET', '/api/mcp/servers');
  if (!res.ok) return view.show(refusal(res, 'Servers'));
  const d = res.data;
  const rows = (d.servers || []).map((s) =>
    el('tr', { 'data-server': s.name },
      el('td', {}, s.name),
      el('td', {}, el('span', { class: 'state state-' + token(s.state) }, s.state)),
      el('td', {}, s.transport || ''),
      el('td', {}, s.protocol_version || ''),
      el('td', { class: 'num' }, String(s.tools ?? '')),
      el('td', { class: 'num' }, s.sessions === undefined ? '–' : String(s.sessions)),
      el('td', { class: 'error-text' }, s.error || '',
        (s.conflicts || []).length ? el('div', { class: 'muted' }, 'name conflicts: ' + pretty(s.conflicts)) : null)));
  view.show(el('section', {},
    el('h2', {}, 'Servers'),
    el('p', { class: 'muted' }, `generation ${d.generation ?? '?'} · discovered ${d.discovered_at || 'not yet'}`,
      d.config_path ? ` · config ${d.config_path}` : ''),
    (d.warnings || []).length ? el('ul', { class: 'warnings' }, d.warnings.map((w) => el('li', {}, w))) : null,
    el('table', { id: 'servers' },
      el('thead', {}, el('tr', {}, ['server', 'state', 'transport', 'protocol', 'tools', 'live sessions', 'error'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)),
    role === 'admin' ? el('p', {}, el('button', { type: 'button', onclick: () => resetCache(view) }, 'Reset tool cache')) : null));
}

async function resetCache(view) {
  const res = await api('POST', '/api/mcp/cache/reset');
  if (view.live()) note(res.ok ? 'cache reset: tools reload on next use' : errorText(res), !res.ok);
  if (res.ok) serversPage(view);
}

// ---- tools ----

// A starting value for a schema: its default, or an empty value of its type.
function skeleton(schema) {
  if (!schema || typeof schema !== 'object') return {};
  if ('default' in schema) return schema.default;
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string': return '';
    case 'number': case 'integer': return 0;
    case 'boolean': return false;
    case 'array': return [];
    case 'object': {
      const out = {};
      const req = new Set(schema.required || []);
      for (const [k, v] of Object.entries(schema.properties || {})) if (req.has(k)) out[k] = skeleton(v);
      return out;
    }
  }
  return null;
}

function toolCard(t) {
  const args = el('textarea', { class: 'args', rows: 5, spellcheck: 'false' });
  args.value = pretty(skeleton(t.input_schema));
  const thread = el('input', { class: 'thread', placeholder: 'thread id (default)' });
  const out = el('pre', { class: 'result', hidden: true });
  const status = el('span', { class: 'call-status muted' });
  const call = async (ev) => {
    ev.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(args.value || '{}');
    } catch (err) {
      status.textContent = 'arguments are not JSON: ' + err.message;
      return;
    }
    const body = { arguments: parsed };
    if (thread.value.trim()) body.thread_id = thread.value.trim();
    status.textContent = 'calling…';
    const res = await api('POST', `/api/mcp/tools/${encodeURIComponent(t.name)}/call`, body);
    out.hidden = false;
    if (!res.ok) {
      status.textContent = errorText(res);
      out.textContent = '';
      return;
    }
    status.textContent = res.data && res.data.isError ? 'the tool answered an error' : 'done';
    out.className = res.data && res.data.isError ? 'result is-error' : 'result';
    const texts = ((res.data && res.data.content) || []).filter((c) => c && c.type === 'text').map((c) => c.text);
    out.textContent = (texts.length ? texts.join('\n') + '\n\n' : '') + pretty(res.data);
  };
  return el('details', { class: 'tool', 'data-tool': t.name },
    el('summary', {}, el('strong', {}, t.name), ' ', el('span', { class: 'muted' }, `${t.server} · ${t.original_name}`),
      t.routing ? el('span', { class: 'badge' }, 'routing: ' + (t.routing.mode || 'hint')) : null),
    el('p', { class: 'description' }, t.description || ''),
    t.routing ? [el('h4', {}, 'Routing hints'), el('pre', { class: 'routing' }, pretty(t.routing))] : null,
    el('h4', {}, 'Input schema'), el('pre', { class: 'schema' }, pretty(t.input_schema)),
    t.output_schema ? [el('h4', {}, 'Output schema'), el('pre', { class: 'schema' }, pretty(t.output_schema))] : null,
    el('form', { class: 'try', onsubmit: call },
      el('h4', {}, 'Try it'),
      el('label', {}, 'arguments (JSON)', args),
      el('label', {}, 'thread', thread),
      el('button', { type: 'submit' }, 'Call'), ' ', status),
    out);
}

async function toolsPage(view) {
  const [res, hints] = await Promise.all([api('GET', '/api/mcp/tools'), api('GET', '/api/mcp/routing-hints')]);
  if (!res.ok) return view.show(refusal(res, 'Tools'));
  const tools = res.data.tools || [];
  const filter = el('input', { type: 'search', placeholder: 'filter by name', id: 'tool-filter' });
  const list = el('div', { id: 'tools' }, tools.map(toolCard));
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    for (const card of list.children) card.hidden = q !== '' && !card.dataset.tool.toLowerCase().includes(q);
  });
  view.show(el('section', {},
    el('h2', {}, `Tools (${tools.length})`), filter, list,
    hints.ok && hints.data && hints.data.section ? el('details', { class: 'hints' }, el('summary', {}, 'Routing hints prompt section'), el('pre', {}, hints.data.section)) : null));
}

// ---- tasks ----

const terminal = new Set(['completed', 'failed', 'cancelled', 'canceled']);

async function tasksPage(view) {
  const threadInput = el('input', { id: 'thread', value: sessionStorage.getItem('antler.thread') || 'default' });
  const body = el('tbody');
  const log = el('ol', { id: 'events', class: 'events' });
  const streamState = el('span', { id: 'stream-state', class: 'muted' }, 'connecting…');
  const detail = el('div', { id: 'task-detail' });
  const controller = new AbortController();
  view.onLeave(() => controller.abort());
  let thread = threadInput.value;

  const load = async () => {
    const res = await api('GET', `/api/threads/${encodeURIComponent(thread)}/mcp-tasks?limit=100`);
    if (!res.ok) {
      body.replaceChildren(el('tr', {}, el('td', { colspan: 7 }, errorText(res))));
      return;
    }
    const tasks = res.data.tasks || [];
    if (tasks.length === 0) body.replaceChildren(el('tr', { class: 'empty' }, el('td', { colspan: 7, class: 'muted' }, 'no tasks of yours in this thread')));
    else body.replaceChildren(...tasks.map((t) =>
      el('tr', { 'data-task': t.task_id, class: 'task', onclick: () => openTask(t.task_id) },
        el('td', {}, t.task_id), el('td', {}, t.task_name || ''),
        el('td', {}, el('span', { class: 'status status-' + token(t.status) }, t.status)),
        el('td', {}, t.created_at || ''), el('td', {}, t.updated_at || ''),
        el('td', {}, [t.tracking_degraded ? 'degraded ' : '', t.cancel_requested ? 'cancel requested' : ''].join('')),
        el('td', { class: 'error-text' }, t.error || ''))));
  };

  const openTask = async (id) => {
    const res = await api('GET', `/api/threads/${encodeURIComponent(thread)}/mcp-tasks/${encodeURIComponent(id)}`);
    if (!res.ok) {
      detail.replaceChildren(el('p', { class: 'error-text' }, errorText(res)));
      return;
    }
    const t = res.data;
    const msg = el('span', { class: 'muted' });
    const cancel = async () => {
      const r = await api('POST', `/api/threads/${encodeURIComponent(thread)}/mcp-tasks/${encodeURIComponent(id)}/cancel`);
      msg.textContent = r.ok ? 'cancel recorded' : errorText(r);
      load();
    };
    let answer = null;
    if (t.status === 'input_required' || (t.answer && t.answer.can_answer && t.input_required)) {
      const action = el('select', { class: 'answer-action' }, ['accept', 'decline', 'cancel'].map((a) => el('option', { value: a }, a)));
      const content = el('textarea', { class: 'answer-content', rows: 4 });
      content.value = '{}';
      answer = el('form', { class: 'answer', onsubmit: async (ev) => {
        ev.preventDefault();
        const b = { action: action.value };
        if (action.value === 'accept') {
          try { b.content = JSON.parse(content.value || '{}'); } catch (err) { msg.textContent = 'content is not JSON: ' + err.message; return; }
        }
        const r = await api('POST', `/api/threads/${encodeURIComponent(thread)}/mcp-tasks/${encodeURIComponent(id)}/input`, b);
        msg.textContent = r.ok ? 'answer recorded' : errorText(r);
        openTask(id);
      } }, el('h4', {}, 'Answer'), t.input_required ? el('pre', {}, pretty(t.input_required)) : null,
      el('label', {}, 'action', action), el('label', {}, 'content (JSON, with accept)', content), el('button', { type: 'submit' }, 'Send answer'));
    }
    detail.replaceChildren(el('section', { class: 'detail', 'data-task': id },
      el('h3', {}, `Task ${id}`),
      el('p', {}, el('span', { class: 'status status-' + token(t.status) }, t.status), ' ', msg),
      terminal.has(t.status) ? null : el('button', { type: 'button', class: 'cancel', onclick: cancel }, 'Cancel task'),
      answer,
      el('pre', { class: 'task-json' }, pretty(t))));
  };

  const start = () => {
    log.replaceChildren();
    follow(`/api/threads/${encodeURIComponent(thread)}/mcp-tasks/events`, '0', (ev) => {
      let env = null;
      try { env = JSON.parse(ev.data); } catch { env = null; }
      const status = env && env.event && typeof env.event === 'object' ? env.event.status : '';
      log.prepend(el('li', { 'data-task': env ? env.task_id : '' },
        el('time', {}, ev.id ? new Date(Number(ev.id)).toISOString() : ''), ' ',
        el('code', {}, env ? env.task_id : '?'), ' v', String(env ? env.version : '?'), ' ',
        el('span', { class: 'status status-' + token(status) }, status || ev.event),
        el('details', {}, el('summary', {}, 'event'), el('pre', {}, pretty(env ? env.event : ev.data)))));
      load();
    }, (text, bad) => {
      streamState.textContent = text;
      streamState.className = bad ? 'error-text' : 'live';
    }, controller.signal);
  };

  const form = el('form', { class: 'inline', onsubmit: (ev) => {
    ev.preventDefault();
    thread = threadInput.value.trim() || 'default';
    sessionStorage.setItem('antler.thread', thread);
    if (leave) leave();
    tasksPage(view);
  } }, el('label', {}, 'thread ', threadInput), el('button', { type: 'submit' }, 'Show'));

  view.show(el('section', {},
    el('h2', {}, 'Durable tasks'),
    el('p', { class: 'muted' }, 'The tasks of the signed-in key\'s user in one thread; the list follows the event stream.'),
    form,
    el('table', { id: 'tasks' },
      el('thead', {}, el('tr', {}, ['task', 'name', 'status', 'created', 'updated', 'flags', 'error'].map((h) => el('th', {}, h)))), body),
    detail,
    el('h3', {}, 'Event history ', streamState), log));
  await load();
  start();
}

// ---- catalog ----

async function catalogPage(view) {
  const res = await api('GET', '/api/mcp/catalog');
  if (res.status === 404 || res.status === 503) {
    return view.show(notAvailable('Pending catalog changes', `this host does not serve tool-catalog pinning (GET /api/mcp/catalog answered ${errorText(res)}).`));
  }
  if (!res.ok) return view.show(refusal(res, 'Pending catalog changes'));
  const pending = (res.data && res.data.pending) || [];
  const byServer = new Map();
  for (const p of pending) {
    if (!byServer.has(p.server)) byServer.set(p.server, []);
    byServer.get(p.server).push(p);
  }
  const msg = el('p', { id: 'catalog-result', class: 'muted' });
  const approve = async (server, tools) => {
    const body = { server };
    if (tools) body.tools = tools;
    const r = await api('POST', '/api/mcp/catalog/approve', body);
    if (!r.ok) {
      msg.textContent = errorText(r);
      return;
    }
    await catalogPage(view);
    if (view.live()) note(`approved on ${r.data.server}: ${(r.data.approved || []).join(', ') || 'nothing'}`, false);
  };
  const plain = (v) => (typeof v === 'string' ? v : v === undefined ? '(absent)' : pretty(v));
  const field = (def, f) => (def && typeof def === 'object' ? def[f] : undefined);
  const sections = [...byServer].map(([server, items]) =>
    el('section', { class: 'catalog-server', 'data-server': server },
      el('h3', {}, server, ' ', el('button', { type: 'button', class: 'approve-all', onclick: () => approve(server) }, 'Approve all')),
      items.map((p) => el('div', { class: 'change', 'data-tool': p.tool },
        el('h4', {}, p.tool, ' ', el('span', { class: 'badge change-' + token(p.change) }, p.change), ' ',
          el('span', { class: 'muted' }, 'first seen ' + (p.first_seen_at || '?')), ' ',
          el('button', { type: 'button', class: 'approve', onclick: () => approve(server, [p.tool]) }, 'Approve')),
        el('p', {}, 'changed: ', (p.fields || []).join(', ') || '(new tool)'),
        el('table', { class: 'diff' },
          el('thead', {}, el('tr', {}, el('th', {}, 'field'), el('th', {}, 'approved'), el('th', {}, 'proposed'))),
          el('tbody', {}, ((p.fields && p.fields.length) ? p.fields : ['(whole definition)']).map((f) => {
            const whole = f === '(whole definition)';
            return el('tr', {}, el('td', {}, f),
              el('td', {}, el('pre', { class: 'old' }, p.approved === null ? '(none)' : plain(whole ? p.approved : field(p.approved, f)))),
              el('td', {}, el('pre', { class: 'new' }, plain(whole ? p.proposed : field(p.proposed, f)))));
          })))))));
  view.show(el('section', { 'data-state': 'available' },
    el('h2', {}, `Pending catalog changes (${pending.length})`),
    pending.length === 0 ? el('p', { class: 'muted', id: 'catalog-empty' }, 'Every served tool matches its approved definition.') : null,
    msg, sections));
}

// ---- plugins ----

async function pluginsPage(view) {
  const resp = await fetch('/metrics', { headers: apiKey() ? { Authorization: 'Bearer ' + apiKey() } : {}, cache: 'no-store', credentials: 'omit' });
  const text = await resp.text();
  if (resp.status === 404) {
    return view.show(notAvailable('Plugins', 'metrics are off on this host (GET /metrics answered 404); enable them to see plugin calls.'));
  }
  if (!resp.ok) {
    let data = null;
    try { data = JSON.parse(text); } catch { data = text; }
    return view.show(refusal({ status: resp.status, data }, 'Plugins'));
  }
  const rows = pluginRows(parseMetrics(text));
  const ms = (s) => (s === null ? '–' : (s * 1000).toFixed(1) + ' ms');
  view.show(el('section', { 'data-state': 'available' },
    el('h2', {}, 'Plugins'),
    rows.length === 0 ? el('p', { class: 'muted', id: 'plugins-empty' }, 'No plugin calls recorded yet.') : null,
    el('table', { id: 'plugins' },
      el('thead', {}, el('tr', {}, ['plugin', 'role', 'carrier', 'calls', 'failures', 'mean latency', 'p95 (bucket)'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((r) => el('tr', { 'data-plugin': r.plugin },
        el('td', {}, r.plugin), el('td', {}, r.role), el('td', {}, r.carrier),
        el('td', { class: 'num' }, String(r.calls)), el('td', { class: 'num' + (r.failures ? ' error-text' : '') }, String(r.failures)),
        el('td', { class: 'num' }, ms(r.mean)), el('td', { class: 'num' }, r.p95 === null ? '–' : '≤ ' + ms(r.p95))))))));
}

// ---- config ----

async function configPage(view) {
  const res = await api('GET', '/api/mcp/config');
  if (!res.ok) return view.show(refusal(res, 'Configuration'));
  const servers = (res.data && res.data.mcp_servers) || {};
  const msg = el('p', { id: 'config-result', class: 'muted' });
  const editor = el('div', { id: 'config-editor' });
  const toggle = async (name, box) => {
    box.disabled = true;
    const r = await api('PATCH', '/api/mcp/config', { server_name: name, enabled: box.checked });
    msg.textContent = r.ok ? `${name}: enabled is now ${box.checked}` : errorText(r);
    msg.className = r.ok ? 'ok' : 'error-text';
    if (!r.ok) box.checked = !box.checked;
    box.disabled = false;
  };
  const edit = (name, server) => {
    const area = el('textarea', { class: 'server-json', rows: 18, spellcheck: 'false' });
    area.value = pretty(server);
    editor.replaceChildren(el('form', { class: 'edit', 'data-server': name, onsubmit: async (ev) => {
      ev.preventDefault();
      let parsed;
      try { parsed = JSON.parse(area.value); } catch (err) { msg.textContent = 'not JSON: ' + err.message; return; }
      const r = await api('PUT', '/api/mcp/config/server', { server_name: name, server: parsed });
      if (!r.ok) {
        msg.textContent = errorText(r);
        msg.className = 'error-text';
        return;
      }
      await configPage(view);
      if (view.live()) note(`${name} saved`, false);
    } }, el('h3', {}, `Edit ${name}`),
    el('p', { class: 'muted' }, 'Masked values (***) stay masked: sending them back keeps the stored secret.'),
    area, el('button', { type: 'submit' }, 'Save server')));
  };
  const rows = Object.entries(servers).map(([name, s]) => {
    const box = el('input', { type: 'checkbox', class: 'enabled', checked: s.enabled !== false });
    box.addEventListener('change', () => toggle(name, box));
    return el('tr', { 'data-server': name },
      el('td', {}, name), el('td', {}, el('label', {}, box, ' enabled')),
      el('td', {}, s.type || (s.url ? 'http' : 'stdio')), el('td', {}, s.description || ''),
      el('td', {}, el('button', { type: 'button', class: 'edit-server', onclick: () => edit(name, s) }, 'Edit')));
  });
  view.show(el('section', {},
    el('h2', {}, 'Configuration'),
    el('p', { class: 'muted' }, 'extensions_config.json through the config admin API; secrets are shown masked.'),
    el('table', { id: 'config' },
      el('thead', {}, el('tr', {}, ['server', 'enabled', 'transport', 'description', ''].map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    msg, editor));
}

// ---- router ----

const pages = { servers: serversPage, tools: toolsPage, tasks: tasksPage, catalog: catalogPage, plugins: pluginsPage, config: configPage };

async function route() {
  if (leave) leave();
  leave = null;
  note('');
  const view = newView();
  const name = location.hash.replace(/^#/, '') || 'servers';
  const page = pages[name] || serversPage;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  document.body.dataset.page = name;
  main.replaceChildren(el('p', { class: 'muted' }, 'loading…'));
  try {
    await page(view);
  } catch (err) {
    view.show(notAvailable(name, String(err && err.message ? err.message : err)));
  }
  if (view.live()) document.body.dataset.loaded = name;
  document.body.dataset.settled = String(++settled);
}

document.getElementById('login').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = document.getElementById('key');
  setApiKey(input.value.trim());
  input.value = '';
  await whoami();
  route();
});
document.getElementById('sign-out').addEventListener('click', async () => {
  setApiKey('');
  await whoami();
  route();
});
window.addEventListener('hashchange', route);
await whoami();
route();
