// The gateway's REST API as the dashboard calls it, and the DOM helper every
// page builds with. Everything the API answers is untrusted (server errors,
// tool descriptions, task results): it reaches the page only as text nodes
// and attribute values, never as markup.

const keyName = 'antler.key';

/** The API key of this tab ('' when none: a key-less loopback host). */
export function apiKey() {
  return sessionStorage.getItem(keyName) || '';
}

/** Keeps key for this tab only (sessionStorage); '' forgets it. */
export function setApiKey(key) {
  if (key) sessionStorage.setItem(keyName, key);
  else sessionStorage.removeItem(keyName);
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const key = apiKey();
  if (key) h.Authorization = 'Bearer ' + key;
  return h;
}

/**
 * One API request. Answers {status, ok, data, text}: data is the parsed
 * JSON body (null when empty, the text when not JSON). State-changing
 * methods always send Content-Type application/json, as the gateway asks.
 */
export async function api(method, path, body) {
  const init = { method, headers: headers(), cache: 'no-store', credentials: 'omit' };
  if (method !== 'GET' && method !== 'HEAD') {
    init.headers['Content-Type'] = 'application/json';
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  return { status: resp.status, ok: resp.ok, data, text };
}

/** The error text of an answer: its {"error"} or its status. */
export function errorText(res) {
  if (res.data && typeof res.data === 'object' && typeof res.data.error === 'string') return `${res.status}: ${res.data.error}`;
  return `HTTP ${res.status}`;
}

/**
 * Follows a server-sent event stream (fetch, since EventSource cannot send
 * an Authorization header), calling onEvent({id, event, data}) per event and
 * onState(text) as it connects, fails and resumes from the last event id.
 * Ends when signal aborts.
 */
export async function follow(path, lastEventID, onEvent, onState, signal) {
  let last = lastEventID;
  while (!signal.aborted) {
    try {
      const h = headers({ Accept: 'text/event-stream' });
      if (last !== '') h['Last-Event-ID'] = last;
      const resp = await fetch(path, { headers: h, cache: 'no-store', credentials: 'omit', signal });
      if (!resp.ok) {
        const text = await resp.text();
        let data = null;
        try { data = JSON.parse(text); } catch { data = text; }
        onState('stream closed: ' + errorText({ status: resp.status, data }), true);
        return;
      }
      onState('live', false);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n?/g, '\n');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev = { id: '', event: 'message', data: '' };
          const data = [];
          for (const line of block.split('\n')) {
            if (line === '' || line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') ev.id = val;
            else if (field === 'event') ev.event = val;
            else if (field === 'data') data.push(val);
          }
          if (data.length === 0) continue;
          ev.data = data.join('\n');
          if (ev.id !== '') last = ev.id;
          onEvent(ev);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onState('reconnecting: ' + String(err && err.message ? err.message : err), true);
    }
    if (signal.aborted) return;
    onState('reconnecting…', true);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * el('tag', {attrs}, ...children) builds an element. Children that are not
 * nodes become text nodes; attributes are set as attributes (names come
 * from the code, values may be data), "class" as the class name, "onX" as
 * listeners and checked/disabled/value as properties.
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else if (name === 'checked' || name === 'disabled' || name === 'value' || name === 'hidden') node[name] = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** JSON as indented text, for <pre> blocks. */
export function pretty(value) {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A class-name-safe token of a status word from the API. */
export function token(value) {
  return /^[a-z0-9_-]{1,40}$/i.test(String(value)) ? String(value).toLowerCase() : 'other';
}
