// Checks telling machine hits on tracking URLs from people: user agents, timing after delivery, click bursts.
import t from 'tap';
import { classifyTrackingHit, CLICK_BURST_MS, DELIVERY_WINDOW_MS } from '../../filters/machine-traffic.js';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const delivered = 1_000_000;
const later = delivered + 10 * 60_000;

t.test('a browser well after delivery is a person', async (t) => {
  t.same(classifyTrackingHit({ kind: 'open', userAgent: BROWSER, at: later, deliveredAt: delivered }), { machine: false });
  t.same(classifyTrackingHit({ kind: 'click', userAgent: BROWSER, at: later, deliveredAt: delivered, link: 0, lastClick: null }), { machine: false });
});

t.test('machines by user agent', async (t) => {
  const open = (userAgent: string) => classifyTrackingHit({ kind: 'open', userAgent, at: later, deliveredAt: delivered });
  const click = (userAgent: string) => classifyTrackingHit({ kind: 'click', userAgent, at: later, deliveredAt: delivered, link: 0 });
  t.same(open(''), { machine: true, reason: 'no-user-agent' });
  t.same(open('Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)'), { machine: true, reason: 'image-proxy' });
  t.same(open('YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html'), { machine: true, reason: 'image-proxy' });
  t.same(open('Mozilla/5.0'), { machine: true, reason: 'image-proxy' }, 'Apple Mail Privacy Protection');
  t.same(click('Mozilla/5.0'), { machine: false }, 'the bare agent is only a proxy for images');
  t.same(click('Mozilla/5.0 (compatible; Barracuda Sentinel (EE))'), { machine: true, reason: 'link-scanner' });
  t.same(click('Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)'), { machine: true, reason: 'link-scanner' });
  t.same(click('python-requests/2.31.0'), { machine: true, reason: 'link-scanner' });
  t.same(click('Mozilla/5.0 (compatible; bingbot/2.0)'), { machine: true, reason: 'link-scanner' });
});

t.test('machines by timing: before delivery, within the window after it, a burst over different links', async (t) => {
  const hit = (at: number, extra = {}) => classifyTrackingHit({ kind: 'click', userAgent: BROWSER, at, deliveredAt: delivered, link: 1, ...extra });
  t.same(classifyTrackingHit({ kind: 'click', userAgent: BROWSER, at: later, deliveredAt: null, link: 0 }), { machine: true, reason: 'before-delivery' });
  t.same(hit(delivered + DELIVERY_WINDOW_MS - 1), { machine: true, reason: 'at-delivery' });
  t.same(hit(delivered + DELIVERY_WINDOW_MS), { machine: false });
  t.same(hit(later, { lastClick: { at: later - CLICK_BURST_MS + 1, link: 0 } }), { machine: true, reason: 'click-burst' });
  t.same(hit(later, { lastClick: { at: later - CLICK_BURST_MS + 1, link: 1 } }), { machine: false }, 'the same link twice is a person');
  t.same(hit(later, { lastClick: { at: later - CLICK_BURST_MS, link: 0 } }), { machine: false });
});
