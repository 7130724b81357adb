# ruff: noqa: E501  (HTML, CSS and JavaScript; long lines read better here)
"""The labelling page and the admin page: static HTML + JavaScript over the JSON API.

Kept as strings in a module so they ship with the package and need no template engine.
The pages only call the documented API (see :mod:`prefrl.web.app`).
"""

STYLE = """
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em; background: #1d2330; color: #fff; }
header h1 { font-size: 1.1em; margin: 0 auto 0 0; }
header .stat b { font-variant-numeric: tabular-nums; }
main { display: flex; gap: 1.2em; padding: 1em 1.2em; align-items: flex-start; }
#work { flex: 1; }
#instruction { font-size: 1.15em; margin: .2em 0 .8em; }
.clips { display: flex; gap: 1em; }
.clip { flex: 1; background: #fff; border-radius: 8px; padding: .5em; text-align: center; }
.clip video { width: 100%; max-height: 52vh; background: #000; image-rendering: pixelated; }
.clip h2 { font-size: 1em; margin: .2em 0 .4em; }
.buttons { display: flex; gap: .6em; justify-content: center; margin: 1em 0; flex-wrap: wrap; }
button { font-size: 1em; padding: .6em 1.1em; border-radius: 6px; border: 1px solid #99a; background: #fff; cursor: pointer; }
button.main { background: #2b59c3; color: #fff; border-color: #2b59c3; }
button:disabled { opacity: .5; cursor: default; }
kbd { font-size: .8em; padding: 0 .3em; border: 1px solid #aab; border-radius: 3px; background: #eef; color: #222; }
aside { width: 300px; background: #fff; border-radius: 8px; padding: .6em; }
aside video { width: 100%; background: #000; }
aside h2 { font-size: 1em; margin: .2em 0 .5em; }
#empty, #signin { background: #fff; border-radius: 8px; padding: 2em; text-align: center; }
#message { min-height: 1.4em; text-align: center; color: #a33; }
.hidden { display: none !important; }
table { border-collapse: collapse; background: #fff; margin: .5em 0 1.5em; }
td, th { border: 1px solid #ccd; padding: .3em .7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
"""

SIGNIN = """
<div id="signin" class="hidden">
  <h2>Sign in</h2>
  <p>Paste the token you were given (<code>prefrl label add-user</code> prints one).</p>
  <form id="signin-form">
    <input id="token" type="password" size="40" autocomplete="off" placeholder="token" aria-label="token">
    <button class="main" type="submit">Sign in</button>
  </form>
  <p id="signin-error"></p>
</div>
"""

COMMON_JS = """
async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) { opts.headers['Content-Type'] = 'application/json'; opts.body = JSON.stringify(body); }
  let r;
  try { r = await fetch(path, opts); } catch (e) { return { status: 0, data: null }; }  // server unreachable
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  return { status: r.status, data };
}
function showSignin(onDone) {
  document.getElementById('signin').classList.remove('hidden');
  document.getElementById('signin-form').onsubmit = async (ev) => {
    ev.preventDefault();
    const r = await api('POST', '/api/session', { token: document.getElementById('token').value.trim() });
    if (r.status === 200) { document.getElementById('signin').classList.add('hidden'); onDone(); }
    else { document.getElementById('signin-error').textContent = (r.data && r.data.detail) || 'sign-in failed'; }
  };
}
"""

LABEL_HTML = (
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefrl labelling</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>"""
    + STYLE
    + """</style></head>
<body>
<header><h1>prefrl labelling</h1>
  <span class="stat">signed in as <b id="user">–</b></span>
  <span class="stat">your labels: <b id="labelled">0</b></span>
  <span class="stat">queue: <b id="queue">0</b></span>
  <a id="admin-link" class="hidden" href="/admin" style="color:#9cf">admin</a>
</header>
<main>
<section id="work">
"""
    + SIGNIN
    + """
  <div id="empty" class="hidden"><h2>No queries waiting</h2><p>New ones appear here as soon as the trainer asks.</p></div>
  <div id="query" class="hidden" data-query-id="">
    <p id="instruction"></p>
    <div class="clips">
      <div class="clip"><h2>Left <kbd>A</kbd> <kbd>&larr;</kbd></h2><video id="left" muted playsinline preload="auto"></video></div>
      <div class="clip"><h2>Right <kbd>D</kbd> <kbd>&rarr;</kbd></h2><video id="right" muted playsinline preload="auto"></video></div>
    </div>
    <div class="buttons">
      <button id="btn-left" class="main" data-answer="left">Left is better <kbd>A</kbd></button>
      <button id="btn-equal" data-answer="equal">Equally good <kbd>E</kbd></button>
      <button id="btn-incomparable" data-answer="incomparable">Can't tell <kbd>C</kbd></button>
      <button id="btn-right" class="main" data-answer="right">Right is better <kbd>D</kbd></button>
      <button id="btn-replay">Replay <kbd>R</kbd></button>
      <button id="btn-skip" data-answer="skip">Skip <kbd>S</kbd></button>
    </div>
  </div>
  <p id="message"></p>
</section>
<aside><h2>Agent's latest episode</h2><video id="episode" muted loop autoplay playsinline></video>
  <p id="no-episode">No episode published yet.</p></aside>
</main>
<script>"""
    + COMMON_JS
    + """
let current = null, shownAt = 0, busy = false, episodeUrl = null;
const L = document.getElementById('left'), R = document.getElementById('right');
function setText(id, v) { document.getElementById(id).textContent = v; }
function replay() { for (const v of [L, R]) { v.currentTime = 0; v.play().catch(() => {}); } }
L.addEventListener('ended', replay);
L.addEventListener('timeupdate', () => { if (Math.abs(R.currentTime - L.currentTime) > 0.15) R.currentTime = L.currentTime; });
R.addEventListener('ended', () => { if (!L.ended && L.paused) replay(); });
function show(q) {
  current = q;
  const box = document.getElementById('query');
  if (!q || q.query_id === null) {
    box.classList.add('hidden'); box.dataset.queryId = '';
    document.getElementById('empty').classList.remove('hidden');
    return;
  }
  document.getElementById('empty').classList.add('hidden');
  setText('instruction', q.instruction || 'Which clip shows the better behaviour?');
  L.src = q.left; R.src = q.right; replay();
  box.dataset.queryId = q.query_id; box.classList.remove('hidden');
  shownAt = performance.now();
}
function counts(d) { if (d.labelled !== undefined) setText('labelled', d.labelled); if (d.queue !== undefined) setText('queue', d.queue); }
const OFFLINE = 'Cannot reach the server; retrying every few seconds.';
async function next() {
  const r = await api('GET', '/api/queries/next');
  if (r.status === 0) { setText('message', OFFLINE); return; }
  if (r.status === 401) { showSignin(start); return; }
  if (r.status !== 200) { setText('message', 'server error ' + r.status); return; }
  counts(r.data); show(r.data);
}
async function answer(a) {
  if (!current || current.query_id === null || busy) return;
  busy = true;
  const body = { query_id: current.query_id, answer: a, response_ms: Math.round(performance.now() - shownAt) };
  let r;
  try { r = await api('POST', '/api/labels', body); } finally { busy = false; }
  if (r.status === 0) {  // keep the clips on screen: the same answer can be given again
    setText('message', 'Cannot reach the server: this answer was not saved. Answer again once it is back.');
    return;
  }
  if (r.status === 201) { setText('message', ''); counts(r.data); }
  else if (r.status === 401) { showSignin(start); return; }
  else { setText('message', (r.data && r.data.detail) || ('error ' + r.status)); }
  await next();
}
async function status() {
  const r = await api('GET', '/api/status');
  if (r.status === 0) { if (!document.getElementById('message').textContent) setText('message', OFFLINE); return; }
  if (r.status !== 200) return;
  const m = document.getElementById('message').textContent;
  if (m === OFFLINE || m.startsWith('Cannot reach the server')) setText('message', 'Connected again.');
  counts(r.data);
  if (r.data.episode && r.data.episode !== episodeUrl) {
    episodeUrl = r.data.episode; const e = document.getElementById('episode');
    e.src = episodeUrl; e.play().catch(() => {}); document.getElementById('no-episode').classList.add('hidden');
  }
  if ((!current || current.query_id === null) && r.data.queue > 0) next();
}
for (const b of document.querySelectorAll('button[data-answer]')) b.addEventListener('click', () => answer(b.dataset.answer));
document.getElementById('btn-replay').addEventListener('click', replay);
const KEYS = { a: 'left', ArrowLeft: 'left', '1': 'left', d: 'right', ArrowRight: 'right', '2': 'right',
  e: 'equal', ArrowUp: 'equal', '=': 'equal', c: 'incomparable', ArrowDown: 'incomparable', s: 'skip' };
document.addEventListener('keydown', (ev) => {
  if (ev.target.tagName === 'INPUT' || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === 'r' || ev.key === ' ') { ev.preventDefault(); replay(); return; }
  const a = KEYS[ev.key]; if (a) { ev.preventDefault(); answer(a); }
});
async function start() {
  const me = await api('GET', '/api/me');
  if (me.status !== 200) { showSignin(start); return; }
  setText('user', me.data.name); counts(me.data);
  if (me.data.is_admin) document.getElementById('admin-link').classList.remove('hidden');
  await next(); status();
}
setInterval(status, 3000);
start();
</script></body></html>
"""
)

ADMIN_HTML = (
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefrl labelling: admin</title><style>"""
    + STYLE
    + """</style></head>
<body><header><h1>prefrl labelling: admin</h1><a href="/" style="color:#9cf">labelling page</a></header>
<main><section id="work">
"""
    + SIGNIN
    + """
<div id="stats" class="hidden">
  <p><b id="total">0</b> labels; agreement between labellers on <b id="multi">0</b> doubly-labelled queries:
     <b id="agreement">–</b>; open queries: <b id="open">0</b>.</p>
  <p>Export: <a href="/api/admin/export?format=csv">CSV</a> · <a href="/api/admin/export?format=json">JSON</a></p>
  <h2>Labels per labeller</h2>
  <table id="labellers"><thead><tr><th>labeller</th><th>labels</th><th>left</th><th>right</th><th>equal</th>
    <th>can't tell</th><th>skipped</th><th>median response (s)</th><th>agreement</th></tr></thead><tbody></tbody></table>
  <h2>Labels per hour (last 24 h, oldest first)</h2><p id="per-hour"></p>
</div><p id="message"></p>
</section></main>
<script>"""
    + COMMON_JS
    + """
function pct(x) { return x === null ? '–' : (100 * x).toFixed(1) + '%'; }
async function load() {
  const r = await api('GET', '/api/admin/stats');
  if (r.status === 401) { showSignin(load); return; }
  if (r.status === 403) { document.getElementById('message').textContent = 'admins only'; return; }
  const s = r.data; document.getElementById('stats').classList.remove('hidden');
  document.getElementById('total').textContent = s.labels;
  document.getElementById('multi').textContent = s.doubly_labelled_queries;
  document.getElementById('agreement').textContent = pct(s.agreement);
  document.getElementById('open').textContent = s.open_queries;
  const tb = document.querySelector('#labellers tbody'); tb.innerHTML = '';
  for (const u of s.labellers) {
    const tr = document.createElement('tr');
    const cells = [u.labeller, u.labels, u.answers.left, u.answers.right, u.answers.equal, u.answers.incomparable,
      u.answers.skip, u.median_response_ms === null ? '–' : (u.median_response_ms / 1000).toFixed(1), pct(u.agreement)];
    for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); }
    tb.appendChild(tr);
  }
  document.getElementById('per-hour').textContent = s.labels_per_hour.join(' · ');
}
load(); setInterval(load, 10000);
</script></body></html>
"""
)
