// Owns the console's static assets: one stylesheet and one small script, served by Sluice itself (no CDN, so the
// console works with no internet and the Content-Security-Policy can allow 'self' only).
import crypto from 'node:crypto';

const CSS = `
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dee8; --bg: #f6f7fa; --accent: #2456c7; --bad: #b3261e; --ok: #1b7f3b; --warn: #a66300; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: #1d2330; color: #fff; }
header .brand { font-weight: 700; letter-spacing: .02em; }
header form { margin: 0; }
header .who { margin-left: auto; color: #c9d1e2; }
header select, header button { font: inherit; }
nav { display: flex; flex-wrap: wrap; gap: 2px; padding: 0 20px; background: #fff; border-bottom: 1px solid var(--line); }
nav a { padding: 10px 12px; color: var(--muted); text-decoration: none; border-bottom: 2px solid transparent; }
nav a.on { color: var(--fg); border-bottom-color: var(--accent); }
main { padding: 18px 20px 40px; max-width: 1280px; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f6; font-weight: 600; }
td.num, th.num { text-align: right; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin: 0 0 12px; padding: 10px; background: #fff; border: 1px solid var(--line); }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
input, select, button, textarea { font: inherit; padding: 4px 6px; border: 1px solid #b7bfcc; border-radius: 4px; background: #fff; }
button { cursor: pointer; background: var(--accent); color: #fff; border-color: var(--accent); }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
form.inline { display: inline; margin: 0 4px 0 0; }
.notice { padding: 8px 10px; background: #fff7e0; border: 1px solid #f0d48a; margin: 0 0 12px; }
.flash { padding: 8px 10px; background: #e6f4ea; border: 1px solid #a8d5b5; margin: 0 0 12px; }
.error { padding: 8px 10px; background: #fdecea; border: 1px solid #f1aaa4; margin: 0 0 12px; }
.empty { color: var(--muted); }
.state-delivered { color: var(--ok); } .state-bounced, .state-dropped { color: var(--bad); } .state-queued, .state-held { color: var(--warn); }
.state-deferred { color: var(--warn); font-weight: 600; }
ul.details { margin: 0; padding: 0; list-style: none; font-size: 12px; } ul.details b { font-weight: 600; color: var(--muted); }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(140px, 1fr)); gap: 10px; margin: 0 0 8px; }
.tile { background: #fff; border: 1px solid var(--line); padding: 10px 12px; }
.tile .figure { display: block; font-size: 22px; font-weight: 600; } .tile .label { color: var(--muted); font-size: 12px; }
.tile.bad .figure { color: var(--bad); } .tile.warn .figure { color: var(--warn); } .tile.ok .figure { color: var(--ok); }
.tile a { color: inherit; text-decoration: none; } .tile a:hover { text-decoration: underline; }
.narrow table { width: auto; min-width: 420px; } .columns { display: flex; flex-wrap: wrap; gap: 0 28px; } .columns > section { flex: 1 1 460px; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
pre { background: #fff; border: 1px solid var(--line); padding: 10px; overflow: auto; white-space: pre-wrap; word-break: break-all; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; border: 1px solid var(--line); padding: 10px; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-all; }
.pager { margin: 10px 0; display: flex; gap: 12px; }
.chart { background: #fff; border: 1px solid var(--line); padding: 8px; }
.chart svg { width: 100%; height: auto; }
.legend { display: flex; gap: 14px; margin: 6px 0; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.sw-sent { background: #2456c7; } .sw-delivered { background: #1b7f3b; } .sw-bounced { background: #b3261e; } .sw-deferred { background: #d08a00; } .sw-opens { background: #7b3fb5; } .sw-clicks { background: #00838f; }
.login { max-width: 420px; margin: 80px auto; background: #fff; border: 1px solid var(--line); padding: 24px; }
.login input { width: 100%; margin: 6px 0 12px; }
code.copy { display: block; background: #fff; border: 1px solid var(--line); padding: 6px; word-break: break-all; }
`;

const JS = `
'use strict';
// Forms that change or drop something ask first.
document.querySelectorAll('form[data-confirm]').forEach(function (f) {
  f.addEventListener('submit', function (e) { if (!window.confirm(f.getAttribute('data-confirm'))) e.preventDefault(); });
});
// The account switcher applies at once.
document.querySelectorAll('select[data-autosubmit]').forEach(function (s) {
  s.addEventListener('change', function () { s.form.submit(); });
});
// "Copy" buttons put a DNS record on the clipboard.
document.querySelectorAll('button[data-copy]').forEach(function (b) {
  b.addEventListener('click', function () {
    var el = document.getElementById(b.getAttribute('data-copy'));
    if (el && navigator.clipboard) navigator.clipboard.writeText(el.textContent).then(function () { b.textContent = 'Copied'; });
  });
});
`;

function asset(body: string, type: string) {
  const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
  return { body, type, etag };
}

/** The assets by path under /console/assets/. */
export const ASSETS: Record<string, { body: string; type: string; etag: string }> = {
  'console.css': asset(CSS, 'text/css; charset=utf-8'),
  'console.js': asset(JS, 'text/javascript; charset=utf-8'),
};
