/**
 * The live dashboard served at / on the admin address: one self-contained page
 * (inline CSS, JS and SVG; no CDN, the machine may have no internet). It polls
 * /api/stats every second and /api/registry when the registry version changes,
 * and asks /api/inspect for the entity inspector. Kept as a TS string so it
 * ships in dist/ with no copy step; the page's script therefore uses no
 * template literals.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>streamfeat dashboard</title>
<style>
:root {
  --bg: #f3f5f9; --card: #ffffff; --ink: #1b2433; --muted: #6a7587; --line: #e3e7ee;
  --accent: #2f6fed; --accent2: #12a58a; --warn: #d97706; --bad: #d64545; --head: #111a2c;
  --event: #e8f0ff; --event-b: #2f6fed; --derived: #fff4e0; --derived-b: #d98a06; --table: #e6f7f2; --table-b: #12a58a;
}
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; background: var(--bg); color: var(--ink); }
header { background: var(--head); color: #fff; padding: 14px 24px; display: flex; align-items: center; gap: 18px; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; font-weight: 650; letter-spacing: .2px; }
header h1 span { color: #8fb3ff; font-weight: 500; }
.meta { display: flex; gap: 16px; flex-wrap: wrap; color: #c4cde0; font-size: 12px; }
.meta b { color: #fff; font-weight: 600; }
.pill { margin-left: auto; padding: 3px 10px; border-radius: 999px; font-size: 12px; font-weight: 600; background: #1e7f5c; color: #fff; }
.pill.down { background: var(--bad); }
main { padding: 18px 24px 32px; display: grid; gap: 16px; grid-template-columns: repeat(12, 1fr); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; box-shadow: 0 1px 2px rgba(16, 24, 40, .04); min-width: 0; }
.card h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); margin: 0 0 10px; font-weight: 650; }
.span3 { grid-column: span 3; } .span4 { grid-column: span 4; } .span5 { grid-column: span 5; } .span6 { grid-column: span 6; } .span7 { grid-column: span 7; } .span8 { grid-column: span 8; } .span12 { grid-column: span 12; }
.kpis { grid-column: span 12; display: grid; grid-template-columns: repeat(6, 1fr); gap: 16px; }
.kpi .v { font-size: 26px; font-weight: 650; font-variant-numeric: tabular-nums; }
.kpi .s { color: var(--muted); font-size: 12px; margin-top: 2px; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th { text-align: left; color: var(--muted); font-weight: 600; font-size: 11.5px; border-bottom: 1px solid var(--line); padding: 5px 8px; white-space: nowrap; }
td { border-bottom: 1px solid var(--line); padding: 6px 8px; white-space: nowrap; }
td.n, th.n { text-align: right; }
tr:last-child td { border-bottom: 0; }
.empty { color: var(--muted); font-style: italic; padding: 8px 0; }
.bar { height: 6px; background: #edf0f5; border-radius: 3px; overflow: hidden; min-width: 60px; }
.bar i { display: block; height: 100%; background: var(--accent); }
.bar.hot i { background: var(--warn); }
.legend { display: flex; gap: 14px; font-size: 12px; color: var(--muted); margin-top: 6px; }
.legend i { display: inline-block; width: 10px; height: 3px; vertical-align: middle; margin-right: 5px; }
.kv { display: grid; grid-template-columns: auto 1fr; gap: 4px 14px; }
.kv div:nth-child(odd) { color: var(--muted); }
.kv div:nth-child(even) { font-variant-numeric: tabular-nums; }
.code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.err { color: var(--bad); font-weight: 600; }
.ok { color: var(--accent2); font-weight: 600; }
#lineage { width: 100%; overflow-x: auto; }
#lineage svg text { font-family: inherit; }
form { display: flex; gap: 8px; flex-wrap: wrap; margin-bottom: 10px; }
select, input, button { font: inherit; padding: 6px 9px; border: 1px solid #cdd3de; border-radius: 6px; background: #fff; color: var(--ink); }
input { min-width: 220px; }
button { background: var(--accent); border-color: var(--accent); color: #fff; font-weight: 600; cursor: pointer; }
footer { color: var(--muted); font-size: 11.5px; padding: 0 24px 18px; }
@media (max-width: 1100px) { .span3, .span4, .span5, .span6, .span7, .span8 { grid-column: span 12; } .kpis { grid-template-columns: repeat(3, 1fr); } }
</style>
</head>
<body>
<header>
  <h1>streamfeat <span id="version"></span></h1>
  <div class="meta">
    <div>uptime <b id="uptime">-</b></div>
    <div>registry <b id="regver">-</b></div>
    <div>mode <b id="mode">-</b></div>
    <div>shards <b id="shardcount">-</b></div>
    <div>node <b id="nodever">-</b></div>
  </div>
  <div class="pill down" id="status">connecting</div>
</header>
<main>
  <section class="kpis">
    <div class="card kpi"><h2>Pushes / s</h2><div class="v" id="push-rate">-</div><div class="s">total <span id="push-total">-</span></div></div>
    <div class="card kpi"><h2>Gets / s</h2><div class="v" id="get-rate">-</div><div class="s">total <span id="get-total">-</span> &middot; batch <span id="batch-total">-</span></div></div>
    <div class="card kpi"><h2>Errors / s</h2><div class="v" id="err-rate">-</div><div class="s">total <span id="err-total">-</span></div></div>
    <div class="card kpi"><h2>Entities</h2><div class="v" id="entities">-</div><div class="s">state <span id="state-bytes">-</span> (est.)</div></div>
    <div class="card kpi"><h2>Memory (RSS)</h2><div class="v" id="rss">-</div><div class="s">CPU <span id="cpu">-</span> s</div></div>
    <div class="card kpi"><h2>Snapshot age</h2><div class="v" id="snap-age">-</div><div class="s" id="snap-sub">-</div></div>
  </section>

  <section class="card span7">
    <h2>Throughput (last 2 minutes)</h2>
    <div id="chart"></div>
    <div class="legend"><span><i style="background:var(--accent)"></i>pushes/s</span><span><i style="background:var(--accent2)"></i>gets/s (get + batch_get)</span></div>
  </section>
  <section class="card span5">
    <h2>Latency (last <span id="lat-window">-</span> s)</h2>
    <table><thead><tr><th>request</th><th class="n">count</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">p99 all-time</th></tr></thead><tbody id="latency"></tbody></table>
    <h2 style="margin-top:16px">Errors by code</h2>
    <table><thead><tr><th>code</th><th class="n">count</th></tr></thead><tbody id="errors"></tbody></table>
  </section>

  <section class="card span12">
    <h2>Shards</h2>
    <table><thead><tr><th>shard</th><th class="n">queue</th><th class="n">in flight</th><th class="n">entities</th><th class="n">cold</th><th class="n">state (est.)</th><th class="n">heap used</th><th>busy</th><th class="n">loop lag p99</th><th class="n">applied LSN</th><th class="n">WAL bytes</th><th class="n">fsync p99</th><th class="n">snapshot age</th></tr></thead><tbody id="shards"></tbody></table>
  </section>

  <section class="card span6">
    <h2>WAL and snapshots</h2>
    <div class="kv" id="durability"></div>
  </section>
  <section class="card span6">
    <h2>Threads</h2>
    <table><thead><tr><th>thread</th><th class="n">heap used</th><th class="n">heap total</th><th>busy</th><th class="n">lag p99</th><th class="n">lag max</th></tr></thead><tbody id="threads"></tbody></table>
  </section>

  <section class="card span12">
    <h2>Registry lineage <span id="lineage-ver" style="text-transform:none;letter-spacing:0"></span></h2>
    <div id="lineage"><div class="empty">no registry yet</div></div>
  </section>

  <section class="card span6">
    <h2>Tables</h2>
    <table><thead><tr><th>table</th><th>key</th><th class="n">features</th><th class="n">entities</th><th class="n">cold</th><th class="n">state (est.)</th></tr></thead><tbody id="tables"></tbody></table>
  </section>
  <section class="card span6">
    <h2>Entity inspector</h2>
    <form id="inspect-form"><select id="inspect-table"></select><input id="inspect-key" placeholder="key (composite: JSON array)"><button type="submit">Inspect</button></form>
    <div id="inspect-out"><div class="empty">pick a table and a key</div></div>
  </section>
</main>
<footer>Polls /api/stats every second. Latency percentiles are estimated from histogram buckets (docs/metrics.md). Prometheus: <a href="/metrics">/metrics</a>.</footer>
<script>
(function () {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';
  var CHART_SPAN_MS = 120000;
  var registryVersion = -1;
  var registry = null;
  var params = new URLSearchParams(location.search);

  function $(id) { return document.getElementById(id); }
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; }); }
  function num(n) {
    if (n === null || n === undefined) return '-';
    var a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(2) + 'G';
    if (a >= 1e6) return (n / 1e6).toFixed(2) + 'M';
    if (a >= 1e4) return (n / 1e3).toFixed(1) + 'k';
    if (a !== Math.floor(a)) return n.toFixed(a < 10 ? 2 : 1);
    return String(n);
  }
  /**
   * A feature value's number for people: ten significant digits, which drops the binary
   * rounding noise of float arithmetic (49.20000000000001 reads 49.2) and keeps every digit
   * anyone pushed; the exact value is the cell's tooltip. Integers are shown as they are.
   */
  function readable(v) {
    if (typeof v !== 'number' || !isFinite(v) || Math.floor(v) === v) return v;
    return Number(v.toPrecision(10));
  }
  function bytes(n) {
    if (n === null || n === undefined) return '-';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : n.toFixed(n >= 100 ? 0 : 1)) + ' ' + u[i];
  }
  function ms(s) {
    if (s === null || s === undefined) return '-';
    var v = s * 1000;
    if (v < 1) return (v * 1000).toFixed(0) + ' \\u00b5s';
    return v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) + ' ms';
  }
  function dur(s) {
    if (s === null || s === undefined) return '-';
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
    return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
  }
  function pct(x) { return x === null || x === undefined ? '-' : (x * 100).toFixed(0) + '%'; }
  function busyBar(x) {
    if (x === null || x === undefined) return '-';
    var w = Math.max(0, Math.min(100, x * 100));
    return '<div style="display:flex;align-items:center;gap:8px"><div class="bar' + (w > 80 ? ' hot' : '') + '"><i style="width:' + w.toFixed(0) + '%"></i></div><span>' + pct(x) + '</span></div>';
  }
  function rows(tbody, html, cols) { $(tbody).innerHTML = html || '<tr><td colspan="' + cols + '" class="empty">none</td></tr>'; }
  function getJson(url) {
    return fetch(url, { cache: 'no-store' }).then(function (r) {
      return r.text().then(function (t) { var j = null; try { j = JSON.parse(t); } catch (e) { j = null; } return { status: r.status, json: j }; });
    });
  }

  function renderStats(s) {
    $('version').textContent = 'v' + s.version;
    $('nodever').textContent = s.node;
    $('uptime').textContent = dur(s.uptime_s);
    $('regver').textContent = 'v' + s.registry_version + ' (' + s.registry_nodes + ' nodes)';
    $('mode').textContent = s.mode + (s.wal_sync ? ', wal-sync ' + s.wal_sync : '');
    $('shardcount').textContent = s.shard_count;
    var c = s.counters, r = s.rates;
    $('push-rate').textContent = num(r.push_per_s);
    $('push-total').textContent = String(c.push_total);
    $('get-rate').textContent = num(r.get_per_s + r.batch_get_per_s);
    $('get-total').textContent = String(c.get_total);
    $('batch-total').textContent = String(c.batch_get_total);
    $('err-rate').textContent = num(r.errors_per_s);
    $('err-rate').className = r.errors_per_s > 0 ? 'v err' : 'v';
    $('err-total').textContent = String(c.errors_total);
    $('entities').textContent = num(s.entities);
    $('state-bytes').textContent = bytes(s.state_bytes);
    $('rss').textContent = bytes(s.process.rss_bytes);
    $('cpu').textContent = s.process.cpu_seconds.toFixed(1);
    if (s.snapshot === null) { $('snap-age').textContent = 'off'; $('snap-sub').textContent = 'memory-only mode'; }
    else {
      $('snap-age').textContent = s.snapshot.age_s === null ? 'none' : dur(s.snapshot.age_s);
      $('snap-sub').textContent = s.snapshot.written_total + ' written, ' + s.snapshot.failures_total + ' failed' + (s.snapshot.running ? ', running' : '');
    }

    renderChart(s.history, s.now_ms);

    $('lat-window').textContent = s.latency_recent.window_s.toFixed(0);
    var lat = '';
    [['push', 'push'], ['get', 'get'], ['batch_get', 'batch_get']].forEach(function (p) {
      var x = s.latency_recent[p[0]], all = s.latency_all[p[0]];
      lat += '<tr><td class="code">' + p[1] + '</td><td class="n">' + x.count + '</td><td class="n">' + ms(x.p50) + '</td><td class="n">' + ms(x.p90) + '</td><td class="n">' + ms(x.p99) + '</td><td class="n">' + ms(all.p99) + '</td></tr>';
    });
    rows('latency', lat, 6);
    var errs = '';
    Object.keys(s.errors).forEach(function (code) { errs += '<tr><td class="code err">' + esc(code) + '</td><td class="n">' + s.errors[code] + '</td></tr>'; });
    rows('errors', errs, 2);

    var sh = '';
    s.shards.forEach(function (x) {
      sh += '<tr><td>shard ' + x.shard + '</td><td class="n">' + x.queued + '</td><td class="n">' + x.in_flight + '</td><td class="n">' + num(x.entities) + '</td><td class="n">' + num(x.cold) + '</td><td class="n">' + bytes(x.state_bytes) +
        '</td><td class="n">' + bytes(x.heap_used_bytes) + '</td><td>' + busyBar(x.utilization) + '</td><td class="n">' + ms(x.lag_p99_s) + '</td><td class="n">' + (x.applied_lsn === null ? '-' : x.applied_lsn) +
        '</td><td class="n">' + (x.wal ? bytes(x.wal.bytes_total) : 'off') + '</td><td class="n">' + (x.wal ? ms(x.wal.fsync_p99_s) : '-') + '</td><td class="n">' + (x.snapshot ? (x.snapshot.age_s === null ? 'none' : dur(x.snapshot.age_s)) : 'off') + '</td></tr>';
    });
    rows('shards', sh, 13);

    var d = '';
    if (s.wal === null) d = '<div>WAL</div><div>off (memory-only mode: nothing is durable)</div>';
    else {
      d += '<div>data dir</div><div class="code">' + esc(s.data_dir) + '</div>';
      d += '<div>fsync mode</div><div>' + esc(s.wal_sync) + '</div>';
      d += '<div>WAL writes</div><div>' + num(s.wal.appends_total) + ' (' + bytes(s.wal.bytes_total) + ')</div>';
      d += '<div>fsyncs</div><div>' + num(s.wal.fsyncs_total) + '</div>';
      d += '<div>unsynced</div><div>' + bytes(s.wal.unsynced_bytes) + '</div>';
      d += '<div>WAL errors</div><div class="' + (s.wal.errors_total > 0 ? 'err' : 'ok') + '">' + s.wal.errors_total + '</div>';
      d += '<div>oldest snapshot</div><div>' + (s.snapshot.oldest_last_success_ms === null ? 'none yet' : new Date(s.snapshot.oldest_last_success_ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC (' + dur(s.snapshot.age_s) + ' ago)') + '</div>';
      d += '<div>last duration</div><div>' + (s.snapshot.written_total === 0 ? '-' : ms(s.snapshot.last_duration_s)) + '</div>';
      d += '<div>snapshots</div><div>' + s.snapshot.written_total + ' written, <span class="' + (s.snapshot.failures_total > 0 ? 'err' : 'ok') + '">' + s.snapshot.failures_total + ' failed</span></div>';
    }
    d += '<div>dedupe entries</div><div>' + num(s.dedupe_entries) + '</div>';
    d += '<div>TCP connections</div><div>' + s.tcp_connections + '</div>';
    $('durability').innerHTML = d;

    var th = '';
    s.threads.forEach(function (t) {
      th += '<tr><td class="code">' + esc(t.thread) + '</td><td class="n">' + bytes(t.heap_used_bytes) + '</td><td class="n">' + bytes(t.heap_total_bytes) + '</td><td>' + busyBar(t.utilization) + '</td><td class="n">' + ms(t.lag_p99_s) + '</td><td class="n">' + ms(t.lag_max_s) + '</td></tr>';
    });
    rows('threads', th, 6);

    renderTables(s);
    if (s.registry_version !== registryVersion) {
      // The tables card shows each table's key and features from the registry: draw it again once
      // the new registry is here, not at the next poll a second later.
      registryVersion = s.registry_version;
      loadRegistry().then(function () { renderTables(s); });
    }
  }

  /** The tables card: counts from /api/stats, key and features from the registry. */
  function renderTables(s) {
    var tb = '';
    s.tables.forEach(function (t) {
      var node = registry === null ? null : registry.nodes.filter(function (n) { return n.name === t.table; })[0];
      tb += '<tr><td class="code">' + esc(t.table) + '</td><td class="code">' + (node ? esc(node.key.join(', ')) : '') + '</td><td class="n">' + (node ? node.features.length : '') + '</td><td class="n">' + num(t.entities) + '</td><td class="n">' + num(t.cold) + '</td><td class="n">' + bytes(t.state_bytes) + '</td></tr>';
    });
    rows('tables', tb, 6);
  }

  /** history: [[time ms, pushes/s, gets/s, errors/s], ...] from the server, oldest first. */
  function renderChart(history, now) {
    var W = 640, H = 170, P = 34;
    var max = 1;
    history.forEach(function (h) { max = Math.max(max, h[1], h[2]); });
    var nice = Math.pow(10, Math.floor(Math.log10(max)));
    max = Math.ceil(max / nice) * nice;
    function x(t) { return P + (W - P - 8) * (1 - (now - t) / CHART_SPAN_MS); }
    function y(v) { return 8 + (H - 30) * (1 - v / max); }
    function line(i, color) {
      if (history.length < 2) return '';
      var pts = history.map(function (h) { return x(h[0]).toFixed(1) + ',' + y(h[i]).toFixed(1); });
      var area = 'M' + x(history[0][0]).toFixed(1) + ',' + y(0) + ' L' + pts.join(' L') + ' L' + x(history[history.length - 1][0]).toFixed(1) + ',' + y(0) + ' Z';
      return '<path d="' + area + '" fill="' + color + '" fill-opacity="0.08"/><polyline fill="none" stroke="' + color + '" stroke-width="2" stroke-linejoin="round" points="' + pts.join(' ') + '"/>';
    }
    var g = '';
    for (var i = 0; i <= 4; i++) {
      var yy = 8 + (H - 30) * i / 4;
      g += '<line x1="' + P + '" x2="' + (W - 8) + '" y1="' + yy + '" y2="' + yy + '" stroke="#eef1f6"/>';
      g += '<text x="' + (P - 4) + '" y="' + (yy + 4) + '" text-anchor="end" font-size="10" fill="#8a94a6">' + num(max * (1 - i / 4)) + '</text>';
    }
    g += '<text x="' + P + '" y="' + (H - 6) + '" font-size="10" fill="#8a94a6">-2 min</text><text x="' + (W - 8) + '" y="' + (H - 6) + '" font-size="10" fill="#8a94a6" text-anchor="end">now</text>';
    $('chart').innerHTML = '<svg viewBox="0 0 ' + W + ' ' + H + '" width="100%" height="' + H + '" preserveAspectRatio="none" role="img" aria-label="throughput">' + g + line(1, '#2f6fed') + line(2, '#12a58a') + '</svg>';
  }

  function loadRegistry() {
    return getJson('/api/registry').then(function (r) {
      if (r.status !== 200 || r.json === null) return;
      registry = r.json;
      renderLineage(registry);
      var sel = $('inspect-table'), prev = sel.value;
      sel.innerHTML = registry.nodes.filter(function (n) { return n.kind === 'table'; }).map(function (n) { return '<option>' + esc(n.name) + '</option>'; }).join('');
      var want = prev || params.get('inspect');
      if (want) sel.value = want;
    });
  }

  /**
   * Layered layout: a node sits one column right of its upstream (events in the
   * first column), so every edge joins neighbouring columns; inside a column,
   * nodes follow their upstream's order, which keeps edges from crossing much.
   */
  function renderLineage(reg) {
    $('lineage-ver').textContent = '\u00b7 registry v' + reg.registry_version;
    if (reg.nodes.length === 0) { $('lineage').innerHTML = '<div class="empty">no nodes registered</div>'; return; }
    var byName = {}, depth = {}, order = {};
    reg.nodes.forEach(function (n, i) { byName[n.name] = n; order[n.name] = i; });
    function depthOf(n) {
      if (depth[n.name] !== undefined) return depth[n.name];
      depth[n.name] = 0;
      var d = n.upstream && byName[n.upstream] ? depthOf(byName[n.upstream]) + 1 : 0;
      depth[n.name] = d;
      return d;
    }
    var cols = [];
    reg.nodes.forEach(function (n) { var c = depthOf(n); (cols[c] = cols[c] || []).push(n); });
    for (var ci = 1; ci < cols.length; ci++) {
      cols[ci].sort(function (a, b) { return (order[a.upstream] - order[b.upstream]) || (a.kind === b.kind ? 0 : a.kind === 'table' ? 1 : -1); });
      cols[ci].forEach(function (n, i) { order[n.name] = i; });
    }
    var BOX_W = 250, GAP_X = 90, PAD = 16, LINE = 17, HEAD = 40;
    function height(n) {
      if (n.kind === 'table') return HEAD + Math.max(1, n.features.length) * LINE + 10;
      if (n.kind === 'event') return HEAD + 8 + LINE;
      return HEAD + 8 + LINE;
    }
    var pos = {}, totalH = 0;
    cols.forEach(function (col, ci) {
      col = col || [];
      var y = PAD;
      col.forEach(function (n) {
        pos[n.name] = { x: PAD + ci * (BOX_W + GAP_X), y: y, h: height(n) };
        y += height(n) + 18;
      });
      totalH = Math.max(totalH, y);
    });
    var W = PAD * 2 + cols.length * BOX_W + (cols.length - 1) * GAP_X;
    var svg = '<svg xmlns="' + SVGNS + '" width="' + W + '" height="' + totalH + '" viewBox="0 0 ' + W + ' ' + totalH + '">';
    svg += '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9aa5b8"/></marker></defs>';
    reg.edges.forEach(function (e) {
      var a = pos[e.from], b = pos[e.to];
      if (!a || !b) return;
      var x1 = a.x + BOX_W, y1 = a.y + 22, x2 = b.x - 2, y2 = b.y + 22, mx = (x1 + x2) / 2;
      svg += '<path d="M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2 + '" fill="none" stroke="#9aa5b8" stroke-width="1.6" marker-end="url(#arrow)"/>';
    });
    var styles = { event: ['var(--event)', 'var(--event-b)', 'event'], derived: ['var(--derived)', 'var(--derived-b)', 'derived event'], table: ['var(--table)', 'var(--table-b)', 'table'] };
    reg.nodes.forEach(function (n) {
      var p = pos[n.name], st = styles[n.kind];
      svg += '<g class="node node-' + n.kind + '" data-name="' + esc(n.name) + '">';
      svg += '<rect x="' + p.x + '" y="' + p.y + '" width="' + BOX_W + '" height="' + p.h + '" rx="8" fill="' + st[0] + '" stroke="' + st[1] + '" stroke-width="1.4"/>';
      svg += '<text x="' + (p.x + 12) + '" y="' + (p.y + 18) + '" font-size="10" fill="' + st[1] + '" font-weight="700" letter-spacing=".6">' + st[2].toUpperCase() + '</text>';
      svg += '<text x="' + (p.x + 12) + '" y="' + (p.y + 34) + '" font-size="14" font-weight="650" fill="#1b2433">' + esc(n.name) + '</text>';
      var y = p.y + HEAD + 14;
      if (n.kind === 'event') {
        var f = Object.keys(n.fields);
        svg += '<text x="' + (p.x + 12) + '" y="' + y + '" font-size="11" fill="#4a5568">' + esc(trunc(f.length + ' fields: ' + f.join(', '), 40)) + '</text>';
      } else if (n.kind === 'derived') {
        svg += '<text x="' + (p.x + 12) + '" y="' + y + '" font-size="11" fill="#4a5568">' + esc(trunc('ops: ' + (n.ops.join(' \\u2192 ') || 'none'), 40)) + '</text>';
      } else {
        svg += '<text x="' + (p.x + BOX_W - 12) + '" y="' + (p.y + 18) + '" font-size="10.5" fill="#4a5568" text-anchor="end">key: ' + esc(trunc(n.key.join(', '), 22)) + '</text>';
        n.features.forEach(function (ft, i) {
          var yy = p.y + HEAD + 12 + i * LINE;
          svg += '<text x="' + (p.x + 12) + '" y="' + yy + '" font-size="11.5" fill="#1b2433" class="feature">' + esc(trunc(ft.name, 20)) + '</text>';
          svg += '<text x="' + (p.x + BOX_W - 12) + '" y="' + yy + '" font-size="11" fill="#4a5568" text-anchor="end">' + esc(trunc(ft.op + (ft.window ? ' \\u00b7 ' + ft.window : ''), 18)) + '</text>';
        });
      }
      svg += '</g>';
    });
    $('lineage').innerHTML = svg + '</svg>';
  }
  function trunc(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '\\u2026' : s; }

  $('inspect-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    if ($('inspect-table').value) inspect($('inspect-table').value, $('inspect-key').value);
  });

  /** One entity; also run at load for /?inspect=TABLE&key=KEY (links and headless checks). */
  function inspect(table, key) {
    getJson('/api/inspect?table=' + encodeURIComponent(table) + '&key=' + encodeURIComponent(key)).then(function (r) {
      var out = $('inspect-out');
      if (r.status !== 200 || r.json === null) {
        var e = r.json && r.json.error ? r.json.error : { code: 'http_' + r.status, message: '' };
        out.innerHTML = '<div class="err">' + esc(e.code) + '</div><div>' + esc(e.message || '') + '</div>';
        return;
      }
      var x = r.json;
      var h = '<div class="kv" id="inspect-result" style="margin-bottom:10px"><div>entity</div><div class="code">' + esc(x.table) + ' / ' + esc(x.key) + '</div>' +
        '<div>shard</div><div>' + x.shard + '</div>' +
        '<div>state</div><div>' + (x.found ? (x.cold ? 'cold (thawed by this read)' : 'hot') : '<span class="err">no such entity</span> (never pushed, or cleared)') + '</div>' +
        (x.found ? '<div>last push</div><div>' + new Date(x.last_push_ms).toISOString().replace('T', ' ').slice(0, 23) + ' UTC (LSN ' + x.last_lsn + ')</div>' : '') + '</div>';
      h += '<table><thead><tr><th>feature</th><th>op</th><th>window</th><th class="n">value</th></tr></thead><tbody>';
      x.features.forEach(function (f) {
        var shown = JSON.stringify(f.value, function (k, v) { return readable(v); }), exact = JSON.stringify(f.value);
        h += '<tr><td class="code">' + esc(f.name) + '</td><td class="code">' + esc(f.op) + '</td><td>' + esc(f.window || 'lifetime') + '</td><td class="n code"' + (shown === exact ? '' : ' title="' + esc(exact) + '"') + '>' + esc(shown) + '</td></tr>';
      });
      out.innerHTML = h + '</tbody></table>';
    });
  }
  if (params.get('inspect')) {
    $('inspect-key').value = params.get('key') || '';
    inspect(params.get('inspect'), params.get('key') || '');
  }

  function poll() {
    getJson('/api/stats').then(function (r) {
      if (r.status !== 200 || r.json === null) throw new Error('status ' + r.status);
      $('status').textContent = 'live';
      $('status').className = 'pill';
      renderStats(r.json);
    }).catch(function () {
      $('status').textContent = 'disconnected';
      $('status').className = 'pill down';
    }).then(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
</script>
</body>
</html>
`;
