// Prometheus text exposition, read for the plugins page.

/** The samples of a Prometheus text exposition: [{name, labels, value}]. */
export function parseMetrics(text) {
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    const body = m[3] || '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let l;
    while ((l = re.exec(body)) !== null) labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/**
 * One row per plugin entry, role and carrier from antler_plugin_calls_total
 * (outcome "ok" or not) and antler_plugin_call_duration_seconds: calls,
 * failures, mean latency and the upper bound of the bucket holding the 95th
 * percentile (seconds; null without observations).
 */
export function pluginRows(samples) {
  const rows = new Map();
  const row = (l) => {
    const k = [l.plugin, l.role, l.carrier].join('\u0000');
    if (!rows.has(k)) rows.set(k, { plugin: l.plugin || '', role: l.role || '', carrier: l.carrier || '', calls: 0, failures: 0, sum: 0, count: 0, buckets: [], mean: null, p95: null });
    return rows.get(k);
  };
  for (const s of samples) {
    if (s.name === 'antler_plugin_calls_total') {
      const r = row(s.labels);
      r.calls += s.value;
      if (s.labels.outcome !== 'ok') r.failures += s.value;
    } else if (s.name === 'antler_plugin_call_duration_seconds_sum') row(s.labels).sum += s.value;
    else if (s.name === 'antler_plugin_call_duration_seconds_count') row(s.labels).count += s.value;
    else if (s.name === 'antler_plugin_call_duration_seconds_bucket') row(s.labels).buckets.push([Number(s.labels.le), s.value]);
  }
  for (const r of rows.values()) {
    if (r.count > 0) {
      r.mean = r.sum / r.count;
      r.buckets.sort((a, b) => a[0] - b[0]);
      const hit = r.buckets.find(([, n]) => n >= 0.95 * r.count);
      r.p95 = hit && Number.isFinite(hit[0]) ? hit[0] : null;
    }
    delete r.buckets;
  }
  return [...rows.values()].sort((a, b) => a.plugin.localeCompare(b.plugin) || a.role.localeCompare(b.role));
}
