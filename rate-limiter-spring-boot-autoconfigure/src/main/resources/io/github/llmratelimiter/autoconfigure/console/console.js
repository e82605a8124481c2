// The rate limiter's operator console. It reads the Actuator endpoint "ratelimiter" (the top
// entries of each budget, never every key; a tenant's detail by the id the endpoint shows) and the
// metrics endpoint (ratelimiter.decisions by result and reason, the Redis store's meters), and
// acts only through the endpoint's own write operations. It names a tenant only by what the
// endpoint shows: the masked key, and the id in URLs.
(function () {
  'use strict';

  const body = document.body;
  const cfg = {
    endpoint: body.dataset.endpoint,
    metrics: body.dataset.metrics || null,
    health: body.dataset.health || null,
    reset: body.dataset.reset === 'true',
    assign: body.dataset.assign === 'true',
    refreshMs: Math.max(500, Number(body.dataset.refresh) || 2000),
  };
  const HISTORY_MS = 5 * 60 * 1000;
  const MIN_SPAN_MS = 60 * 1000;
  const DECISIONS = '/ratelimiter.decisions';
  const COLORS = ['#d6453d', '#e2a400', '#8e44ad', '#3866d6', '#16a3a3', '#b5651d', '#7f8c8d'];
  const SVG = 'http://www.w3.org/2000/svg';

  const state = {
    top: 10,
    report: null,
    series: new Map(), // label -> [{t, v}]
    colors: new Map(),
    lastCounts: null,
    lastAt: 0,
    firstAt: 0,
    selected: null, // the selected tenant's id
    detail: null,
    timer: 0,
    polls: 0,
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, String(v));
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // ---- HTTP -------------------------------------------------------------------------------------

  function csrfHeaders() {
    // Spring Security's cookie-held CSRF token (CookieCsrfTokenRepository, csrf.spa()), when present.
    const m = document.cookie.match(/(?:^|;\s*)XSRF-TOKEN=([^;]+)/);
    return m ? { 'X-XSRF-TOKEN': decodeURIComponent(m[1]) } : {};
  }

  async function call(method, url, json) {
    const headers = { Accept: 'application/json' };
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') Object.assign(headers, csrfHeaders());
    if (json !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(json);
    }
    const response = await fetch(url, init);
    let data = null;
    const type = response.headers.get('Content-Type') || '';
    if (type.includes('json')) {
      try { data = await response.json(); } catch (e) { data = null; }
    }
    return { ok: response.ok, status: response.status, json: data };
  }

  function keyUrl(id) {
    return cfg.endpoint + '/' + encodeURIComponent(id);
  }

  function denied(r) {
    return r.status === 401 || r.status === 403;
  }

  // ---- formatting -------------------------------------------------------------------------------

  function num(n) {
    if (n === null || n === undefined || Number.isNaN(n)) return '—';
    if (Number.isInteger(n)) return n.toLocaleString('en-US');
    return n.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });
  }

  function rate(v) {
    return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + '/s';
  }

  function duration(ms) {
    if (ms <= 0) return 'now';
    if (ms < 1000) return ms + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
    return (ms / 3600000).toFixed(1) + ' h';
  }

  // When a quota resets: the period's end in local time, and how long until then.
  function until(ms) {
    if (ms <= 0) return 'now';
    const minutes = Math.ceil(ms / 60000);
    const d = Math.floor(minutes / 1440);
    const h = Math.floor((minutes % 1440) / 60);
    const m = minutes % 60;
    if (d > 0) return 'in ' + d + ' d' + (h > 0 ? ' ' + h + ' h' : '');
    if (h > 0) return 'in ' + h + ' h' + (m > 0 ? ' ' + m + ' min' : '');
    return 'in ' + m + ' min';
  }

  function resetText(periodEnd) {
    if (!periodEnd) return '—';
    const end = new Date(periodEnd);
    return end.toLocaleString() + ' (' + until(end.getTime() - Date.now()) + ')';
  }

  // A quota's amount in its unit: cost as the endpoint's exact decimal, else a count.
  function quotaAmount(unit, amount, decimal) {
    if (unit === 'cost') return decimal != null ? decimal : num(amount / 1e6);
    return num(amount) + (unit === 'tokens' ? ' tokens' : unit === 'requests' ? ' requests' : '');
  }

  function quotaBar(unit, used, usedAmount, limit, limitAmount) {
    if (limit == null) return el('span', { class: 'none' }, quotaAmount(unit, used, usedAmount));
    return bar(used, limit, quotaAmount(unit, used, usedAmount) + ' / ' + quotaAmount(unit, limit, limitAmount));
  }

  function quotaTitle(q) {
    return q.quota + ' · ' + q.unit + ' per ' + q.period;
  }

  function shadowBadge(enforce) {
    return enforce === false ? el('span', { class: 'badge shadow', title: 'Shadow mode: counts, never denies' }, 'shadow') : null;
  }

  function bar(used, limit, label) {
    if (!limit) return el('span', { class: 'none' }, '—');
    const f = Math.max(0, Math.min(1, used / limit));
    const fill = el('div', { class: 'fill' });
    fill.style.width = (f * 100).toFixed(1) + '%';
    return el('div', { class: 'bar' + (f >= 1 ? ' full' : f >= 0.8 ? ' warn' : ''), 'data-fraction': f.toFixed(3) },
      fill, el('span', { class: 'label' }, label));
  }

  // How close an entry is to a limit: the fullest of its window, bucket and model tokens.
  function pressure(k) {
    let p = 0;
    if (k.windowLimit > 0) p = Math.max(p, k.windowUsed / k.windowLimit);
    if (k.capacity > 0) p = Math.max(p, 1 - k.tokens / k.capacity);
    if (k.modelTokenLimit > 0) p = Math.max(p, k.modelTokensUsed / k.modelTokenLimit);
    return p;
  }

  function hasPlan(entries) {
    return entries.some((k) => k && Object.prototype.hasOwnProperty.call(k, 'plan'));
  }

  // ---- the tenants ------------------------------------------------------------------------------

  async function loadReport() {
    const r = await call('GET', cfg.endpoint + '?top=' + state.top);
    if (!r.ok || !r.json) {
      throw new Error(denied(r) ? 'The server refused the endpoint (HTTP ' + r.status + '): sign in with a role that may read it.'
        : 'The endpoint answered HTTP ' + r.status + '.');
    }
    state.report = r.json;
    renderBudgets(r.json);
  }

  function renderBudgets(report) {
    const container = $('budgets');
    const budgets = report.budgets || [];
    const showPlan = hasPlan(budgets.flatMap((b) => b.top));
    const sections = budgets.filter((b) => b.top.length > 0).map((b) => renderBudget(b, showPlan));
    const idle = budgets.filter((b) => b.top.length === 0).map((b) => b.budget);
    if (idle.length) sections.push(el('p', { class: 'note idle' }, 'No tracked keys: ' + idle.join(', ') + '.'));
    container.replaceChildren(...sections);
    updatePlanOptions(report, budgets);
    renderSpenders(report.quotas || []);
    renderUpstreams(report.upstreams || []);
  }

  // ---- the upstreams ----------------------------------------------------------------------------

  function renderUpstreams(upstreams) {
    $('upstreams-panel').hidden = upstreams.length === 0;
    if (upstreams.length === 0) return;
    const header = el('tr', null, el('th', null, 'Upstream'), el('th', null, 'Requests'),
      el('th', null, 'Model tokens'), el('th', null, 'In flight'), el('th', null, 'Provider left'),
      el('th', null, 'State'), el('th', null, 'Waiting'));
    const rows = upstreams.map((u) => {
      const s = u.status;
      if (!s) {
        return el('tr', { class: 'upstream', 'data-upstream': u.name },
          el('td', null, el('code', null, u.name)),
          el('td', { colspan: '5', class: 'none' }, 'The store cannot tell now (' + (u.error || 'no answer') + ').'),
          el('td', { class: 'waiting' }, num(u.waiting || 0)));
      }
      const used = (limit, left) => (limit == null || left == null ? 0 : limit - left);
      const reported = [s.reportedRequestsRemaining != null ? num(s.reportedRequestsRemaining) + ' requests' : null,
        s.reportedTokensRemaining != null ? num(s.reportedTokensRemaining) + ' tokens' : null].filter((x) => x);
      const closed = s.closedForMs > 0;
      return el('tr', { class: 'upstream' + (closed ? ' denied' : ''), 'data-upstream': u.name,
        'data-closed-ms': String(s.closedForMs) },
      el('td', null, el('code', null, u.name)),
      el('td', null, bar(used(s.requestsLimit, s.requestsRemaining), s.requestsLimit,
        s.requestsLimit == null ? '' : num(s.requestsRemaining) + ' of ' + num(s.requestsLimit) + ' left')),
      el('td', null, bar(used(s.modelTokensLimit, s.modelTokensRemaining), s.modelTokensLimit,
        s.modelTokensLimit == null ? '' : num(s.modelTokensRemaining) + ' of ' + num(s.modelTokensLimit) + ' left')),
      el('td', null, u.concurrency == null ? num(s.inFlight) : num(s.inFlight) + ' of ' + num(u.concurrency)),
      el('td', null, reported.length ? reported.join(', ') : '—'),
      el('td', { class: 'state' }, closed ? 'closed for ' + duration(s.closedForMs) : 'open'),
      el('td', { class: 'waiting' }, num(u.waiting || 0)));
    });
    $('upstreams').replaceChildren(el('table', null, el('thead', null, header), el('tbody', null, ...rows)));
  }

  // ---- the top spenders of each quota ----------------------------------------------------------

  function renderSpenders(quotas) {
    $('spenders-panel').hidden = quotas.length === 0;
    $('spenders').replaceChildren(...quotas.map((q) => {
      const head = el('h3', null, q.budget + ' · ' + quotaTitle(q), shadowBadge(q.enforce),
        el('span', { class: 'count' }, 'limit ' + quotaAmount(q.unit, q.limit, q.limitAmount)
          + (q.periodEnd ? ' · resets ' + resetText(q.periodEnd) : '')));
      const section = el('section', { class: 'quota-top', 'data-budget': q.budget, 'data-quota': q.quota,
        'data-period-end': q.periodEnd || null }, head);
      if (!q.top || q.top.length === 0) {
        section.append(el('p', { class: 'note' }, 'No spend this period.'));
        return section;
      }
      const showPlan = q.top.some((s) => s.plan != null);
      const showModel = q.top.some((s) => s.model);
      const header = el('tr', null, el('th', null, 'Tenant'), showPlan ? el('th', null, 'Plan') : null,
        showModel ? el('th', null, 'Model') : null, el('th', null, 'Spent'), el('th', null, 'Left'));
      const rows = q.top.map((s) => {
        const tr = el('tr', {
          class: 'spender' + (s.limit != null && s.used >= s.limit ? ' denied' : '')
            + (s.id && s.id === state.selected ? ' selected' : ''),
          'data-key': s.key, 'data-id': s.id || null, 'data-used': s.used, tabindex: s.id ? '0' : null,
          title: s.id ? 'Show this tenant' : 'The store names this key by its hash only: no detail',
        },
        el('td', { class: 'key' }, el('code', null, s.key)),
        showPlan ? el('td', { class: 'plan' }, s.plan == null ? '' : s.plan) : null,
        showModel ? el('td', null, s.model || '') : null,
        el('td', { class: 'spent' }, quotaBar(q.unit, s.used, s.usedAmount, s.limit, s.limitAmount)),
        el('td', { class: 'left' }, s.remaining == null ? '—'
          : quotaAmount(q.unit, s.remaining, s.remainingAmount)));
        if (s.id) {
          tr.addEventListener('click', () => select(s.id));
          tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') select(s.id); });
        }
        return tr;
      });
      section.append(el('table', null, el('thead', null, header), el('tbody', null, ...rows)));
      return section;
    }));
  }

  function renderBudget(b, showPlan) {
    const entries = b.top.slice().sort((x, y) =>
      ((y.nextFreeMs > 0) - (x.nextFreeMs > 0)) || (pressure(y) - pressure(x)));
    const head = el('h3', null, b.budget,
      el('span', { class: 'count', 'data-tracked': b.trackedKeys },
        num(b.trackedKeys) + ' tracked' + (b.trackedKeys > entries.length ? ' · top ' + entries.length + ' shown' : '')));
    const section = el('section', { class: 'budget', 'data-budget': b.budget }, head);
    const showModel = entries.some((k) => k.model);
    const header = el('tr', null, el('th', null, 'Tenant'), showPlan ? el('th', null, 'Plan') : null,
      showModel ? el('th', null, 'Model') : null, el('th', null, 'Window'), el('th', null, 'Bucket'),
      el('th', null, 'Model tokens'), el('th', null, 'Next free'));
    const rows = entries.map((k) => {
      const tr = el('tr', {
        class: 'tenant' + (k.nextFreeMs > 0 ? ' denied' : '') + (k.id && k.id === state.selected ? ' selected' : ''),
        'data-key': k.key, 'data-id': k.id || null, 'data-next-free': k.nextFreeMs,
        tabindex: k.id ? '0' : null,
        title: k.id ? 'Show this tenant' : 'The store names this key by its hash only: no detail',
      },
      el('td', { class: 'key' }, el('code', null, k.key)),
      showPlan ? el('td', { class: 'plan' }, k.plan == null ? 'default' : k.plan) : null,
      showModel ? el('td', null, k.model || '') : null,
      el('td', { class: 'window' }, bar(k.windowUsed, k.windowLimit, num(k.windowUsed) + ' / ' + num(k.windowLimit))),
      el('td', { class: 'bucket' }, bar(k.capacity - k.tokens, k.capacity, num(k.tokens) + ' of ' + num(k.capacity) + ' left')),
      el('td', { class: 'model-tokens' }, bar(k.modelTokensUsed, k.modelTokenLimit,
        num(k.modelTokensUsed) + ' / ' + num(k.modelTokenLimit))),
      el('td', { class: 'next-free' }, duration(k.nextFreeMs)));
      if (k.id) {
        tr.addEventListener('click', () => select(k.id));
        tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') select(k.id); });
      }
      return tr;
    });
    section.append(el('table', null, el('thead', null, header), el('tbody', null, ...rows)));
    return section;
  }

  function updatePlanOptions(report, budgets) {
    const plans = new Set();
    const declared = report.plans;
    if (Array.isArray(declared)) declared.forEach((p) => plans.add(typeof p === 'string' ? p : p && p.name));
    else if (declared && typeof declared === 'object') Object.keys(declared).forEach((p) => plans.add(p));
    budgets.forEach((b) => b.top.forEach((k) => { if (k.plan) plans.add(k.plan); }));
    $('plan-options').replaceChildren(...[...plans].filter(Boolean).sort().map((p) => el('option', { value: p })));
  }

  // ---- a tenant's detail and the actions --------------------------------------------------------

  async function select(id) {
    state.selected = id;
    document.querySelectorAll('tr.tenant, tr.spender').forEach((tr) => tr.classList.toggle('selected', tr.dataset.id === id));
    await loadDetail();
  }

  async function loadDetail() {
    const id = state.selected;
    if (!id) return;
    const r = await call('GET', keyUrl(id));
    if (id !== state.selected) return;
    const panel = $('detail');
    panel.hidden = false;
    panel.dataset.id = id;
    if (r.status === 404) {
      state.detail = null;
      $('detail-budgets').replaceChildren();
      note('detail-note', 'No budget tracks this tenant any more.');
      $('reset').hidden = true;
      $('plan-form').hidden = true;
      return;
    }
    if (!r.ok || !r.json) {
      note('detail-note', 'The endpoint answered HTTP ' + r.status + '.');
      return;
    }
    note('detail-note', null);
    const d = r.json;
    state.detail = d;
    $('detail-key').textContent = d.key;
    $('detail-id').textContent = d.id;
    const planShown = hasPlan([d, ...(d.budgets || [])]);
    const plan = planShown ? (d.plan !== undefined ? d.plan : (d.budgets.find((b) => b.plan != null) || {}).plan) : undefined;
    $('detail-plan').hidden = !planShown;
    $('detail-plan').textContent = planShown ? 'Plan: ' + (plan == null ? 'default' : plan) : '';
    $('detail-budgets').replaceChildren(...(d.budgets || []).map((k) => el('div', { class: 'budget', 'data-budget': k.budget },
      el('h3', null, k.budget + (k.model ? ' · ' + k.model : ''),
        el('span', { class: 'count' }, 'next free: ' + duration(k.nextFreeMs))),
      el('table', null, el('tbody', null,
        el('tr', null, el('th', null, 'Window'), el('td', { class: 'window' },
          bar(k.windowUsed, k.windowLimit, num(k.windowUsed) + ' / ' + num(k.windowLimit)))),
        el('tr', null, el('th', null, 'Bucket'), el('td', { class: 'bucket' },
          bar(k.capacity - k.tokens, k.capacity, num(k.tokens) + ' of ' + num(k.capacity) + ' left'))),
        el('tr', null, el('th', null, 'Model tokens'), el('td', { class: 'model-tokens' },
          bar(k.modelTokensUsed, k.modelTokenLimit, num(k.modelTokensUsed) + ' / ' + num(k.modelTokenLimit)))))))));
    renderDetailQuotas(d.quotas || []);
    $('reset').hidden = !cfg.reset;
    $('plan-form').hidden = !(cfg.assign && planShown);
  }

  function renderDetailQuotas(quotas) {
    const box = $('detail-quotas');
    box.hidden = quotas.length === 0;
    if (quotas.length === 0) {
      box.replaceChildren();
      return;
    }
    box.replaceChildren(el('h3', null, 'Quotas'), el('table', null, el('tbody', null, ...quotas.map((q) =>
      el('tr', { class: 'quota' + (q.exceeded ? ' exceeded' : ''), 'data-budget': q.budget, 'data-quota': q.quota,
        'data-used': q.used, 'data-limit': q.limit, 'data-period-end': q.periodEnd },
      el('th', null, q.budget + (q.model ? ' · ' + q.model : '') + ' · ' + quotaTitle(q), shadowBadge(q.enforce)),
      el('td', null,
        el('div', { class: 'spent' }, quotaBar(q.unit, q.used, q.usedAmount, q.limit, q.limitAmount)),
        el('div', { class: 'reset' }, 'resets ' + resetText(q.periodEnd))))))));
  }

  function confirmAction(text) {
    const dialog = $('confirm');
    $('confirm-text').textContent = text;
    return new Promise((resolve) => {
      dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
      dialog.returnValue = '';
      dialog.showModal();
    });
  }

  async function resetTenant() {
    const d = state.detail;
    if (!d) return;
    if (!await confirmAction('Reset ' + d.key + '? Every budget of this tenant becomes full again.')) return;
    const r = await call('DELETE', keyUrl(d.id));
    toast(r.ok && r.json ? 'Reset ' + d.key + ': ' + r.json.reset + ' budget entries.'
      : 'The reset failed: HTTP ' + r.status + (denied(r) ? ' (not allowed)' : '') + '.');
    await refresh();
  }

  async function assignPlan(plan) {
    const d = state.detail;
    if (!d) return;
    const text = plan === null ? 'Clear the plan of ' + d.key + '? It falls back to the default.'
      : 'Change the plan of ' + d.key + ' to "' + plan + '"?';
    if (!await confirmAction(text)) return;
    const r = await call('POST', keyUrl(d.id), { plan });
    toast(r.ok ? 'Plan of ' + d.key + ': ' + (plan === null ? 'default' : plan) + '.'
      : 'The plan change failed: HTTP ' + r.status + (r.json && r.json.detail ? ': ' + r.json.detail : '') + '.');
    await refresh();
  }

  // ---- decisions per second ---------------------------------------------------------------------

  function tagValues(meter, tag) {
    const t = (meter.availableTags || []).find((x) => x.tag === tag);
    return t ? t.values : [];
  }

  function measurement(meter, statistic) {
    const m = (meter.measurements || []).find((x) => x.statistic === statistic);
    return m ? m.value : 0;
  }

  function seriesLabel(result, reason) {
    if (!reason || (result === 'allowed' && reason === 'OK')) return result;
    return result + ' · ' + reason;
  }

  function tagQuery(...tags) {
    return '?' + tags.map((t) => 'tag=' + encodeURIComponent(t)).join('&');
  }

  // Counts per (result, reason) pair that exists: one request for the results, one per result
  // for its reasons, one per pair.
  async function decisionCounts() {
    const base = cfg.metrics + DECISIONS;
    const root = await call('GET', base);
    const counts = new Map();
    if (root.status === 404) return counts; // no decision yet: the meter is made on first use
    if (!root.ok || !root.json) throw new Error('The metrics endpoint answered HTTP ' + root.status + '.');
    await Promise.all(tagValues(root.json, 'result').map(async (result) => {
      const byResult = await call('GET', base + tagQuery('result:' + result));
      if (!byResult.ok || !byResult.json) return;
      const reasons = tagValues(byResult.json, 'reason');
      if (reasons.length <= 1) {
        counts.set(seriesLabel(result, reasons[0]), measurement(byResult.json, 'COUNT'));
        return;
      }
      await Promise.all(reasons.map(async (reason) => {
        const pair = await call('GET', base + tagQuery('result:' + result, 'reason:' + reason));
        if (pair.ok && pair.json) counts.set(seriesLabel(result, reason), measurement(pair.json, 'COUNT'));
      }));
    }));
    return counts;
  }

  async function loadDecisions() {
    if (!cfg.metrics) {
      note('chart-note', 'The metrics endpoint is not exposed (management.endpoints.web.exposure.include=metrics): no chart.');
      return;
    }
    const counts = await decisionCounts();
    const now = Date.now();
    if (state.lastCounts) {
      const seconds = Math.max(0.001, (now - state.lastAt) / 1000);
      const labels = new Set([...counts.keys(), ...state.series.keys()]);
      for (const label of labels) {
        const current = counts.get(label) || 0;
        const previous = state.lastCounts.get(label) || 0;
        if (!state.series.has(label)) state.series.set(label, []);
        state.series.get(label).push({ t: now, v: Math.max(0, current - previous) / seconds });
      }
    }
    for (const points of state.series.values()) {
      while (points.length && points[0].t < now - HISTORY_MS) points.shift();
    }
    state.lastCounts = counts;
    state.lastAt = now;
    if (!state.firstAt) state.firstAt = now;
    note('chart-note', state.series.size === 0 ? (counts.size === 0 ? 'No decision yet.' : 'Measuring…') : null);
    renderChart(now);
  }

  function colorOf(label) {
    if (label === 'allowed') return '#2e9d5b';
    if (!state.colors.has(label)) state.colors.set(label, COLORS[state.colors.size % COLORS.length]);
    return state.colors.get(label);
  }

  function renderChart(now) {
    const chart = $('chart');
    const w = 600;
    const h = 180;
    let max = 0;
    let samples = 0;
    for (const points of state.series.values()) {
      samples = Math.max(samples, points.length);
      for (const p of points) max = Math.max(max, p.v);
    }
    const top = niceMax(max);
    // the last 5 minutes, or less while the page has seen less (at least one minute)
    const span = Math.min(HISTORY_MS, Math.max(MIN_SPAN_MS, now - state.firstAt));
    $('chart-span').textContent = '(last ' + (span < HISTORY_MS ? Math.round(span / 1000) + ' s' : '5 minutes') + ')';
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    svg.setAttribute('preserveAspectRatio', 'none');
    for (let i = 1; i < 4; i++) {
      const grid = document.createElementNS(SVG, 'line');
      grid.setAttribute('x1', '0');
      grid.setAttribute('x2', String(w));
      grid.setAttribute('y1', String(h * i / 4));
      grid.setAttribute('y2', String(h * i / 4));
      grid.setAttribute('stroke', '#eef0f3');
      svg.append(grid);
    }
    const legend = [];
    const labels = [...state.series.keys()].sort((a, b) => (a === 'allowed' ? -1 : b === 'allowed' ? 1 : a.localeCompare(b)));
    for (const label of labels) {
      const points = state.series.get(label);
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', colorOf(label));
      line.setAttribute('stroke-width', '2');
      line.setAttribute('vector-effect', 'non-scaling-stroke');
      line.setAttribute('data-series', label);
      line.setAttribute('points', points.filter((p) => p.t >= now - span).map((p) =>
        ((p.t - (now - span)) / span * w).toFixed(1) + ',' + (h - (p.v / top) * h).toFixed(1)).join(' '));
      svg.append(line);
      const latest = points.length ? points[points.length - 1].v : 0;
      const swatch = el('span', { class: 'swatch' });
      swatch.style.background = colorOf(label);
      legend.push(el('li', { 'data-series': label, 'data-rate': latest.toFixed(3) }, swatch, label,
        el('span', { class: 'rate' }, rate(latest))));
    }
    chart.dataset.samples = String(samples);
    chart.replaceChildren(svg, el('span', { class: 'axis ymax' }, rate(top)),
      el('span', { class: 'axis xmin' }, span >= HISTORY_MS ? '5 min ago' : Math.round(span / 1000) + ' s ago'), el('span', { class: 'axis xmax' }, 'now'));
    $('legend').replaceChildren(...legend);
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // ---- the store --------------------------------------------------------------------------------

  async function meterValue(name, statistic) {
    if (!cfg.metrics) return null;
    const r = await call('GET', cfg.metrics + '/' + name);
    return r.ok && r.json ? measurement(r.json, statistic) : null;
  }

  async function loadStore() {
    const store = state.report ? String(state.report.store || '') : '';
    const box = $('store');
    if (!/redis/i.test(store)) {
      box.dataset.state = 'memory';
      box.textContent = 'Store: in memory (this instance)';
      return;
    }
    const [health, degraded, errors] = await Promise.all([
      cfg.health ? call('GET', cfg.health + '/rateLimiter') : Promise.resolve(null),
      meterValue('ratelimiter.store.degraded', 'VALUE'),
      meterValue('ratelimiter.store.errors', 'COUNT')]);
    const status = health && health.json && health.json.status ? health.json.status : null;
    const isDegraded = degraded === 1 || (health && health.json && health.json.details && health.json.details.degraded === true);
    const parts = ['Store: Redis'];
    if (status) parts.push(status);
    parts.push(isDegraded ? 'DEGRADED: the failure policy answers' : 'not degraded');
    if (errors !== null) parts.push(num(errors) + ' failed calls');
    box.dataset.state = isDegraded ? 'degraded' : status === 'DOWN' ? 'down' : 'up';
    box.textContent = parts.join(' · ');
  }

  // ---- the loop ---------------------------------------------------------------------------------

  function note(id, text) {
    const n = $(id);
    n.hidden = !text;
    n.textContent = text || '';
  }

  let toastTimer = 0;
  function toast(text) {
    const t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 5000);
  }

  function setStatus(kind, text) {
    const s = $('status');
    s.dataset.state = kind;
    s.textContent = text;
  }

  let running = null;
  function refresh() {
    if (!running) {
      running = poll().finally(() => { running = null; });
    }
    return running;
  }

  async function poll() {
    clearTimeout(state.timer);
    const started = performance.now();
    // each part on its own: a store that fails the endpoint still shows its health
    const outcomes = await Promise.allSettled([loadReport(), loadDecisions()]);
    outcomes.push(...await Promise.allSettled([loadStore(), loadDetail()]));
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) {
      setStatus('error', (failed.reason && failed.reason.message) || String(failed.reason));
    } else {
      setStatus('ok', 'Updated ' + new Date().toLocaleTimeString() + ' · every ' + (cfg.refreshMs / 1000) + ' s');
    }
    state.polls++;
    body.dataset.polls = String(state.polls);
    body.dataset.pollMs = String(Math.round(performance.now() - started));
    state.timer = setTimeout(refresh, cfg.refreshMs);
  }

  $('top').addEventListener('change', (e) => { state.top = Number(e.target.value); refresh(); });
  $('reset').addEventListener('click', resetTenant);
  $('plan-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const plan = $('plan-input').value.trim();
    if (plan) assignPlan(plan);
  });
  $('plan-clear').addEventListener('click', () => assignPlan(null));
  $('detail-close').addEventListener('click', () => {
    state.selected = null;
    state.detail = null;
    $('detail').hidden = true;
    document.querySelectorAll('tr.tenant.selected, tr.spender.selected').forEach((tr) => tr.classList.remove('selected'));
  });
  refresh();
})();
