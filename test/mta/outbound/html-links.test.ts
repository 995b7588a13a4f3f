// Checks the HTML rewrite for tracking: which <a href> are rewritten, what is left byte for byte, where the pixel goes.
import t from 'tap';
import { rewriteHtml, trackableUrl } from '../../../mta/outbound/html-links.js';

const click = { url: (i: number) => `https://t.test/t/c/TOKEN${i}`, maxLinks: 1000 };

t.test('http(s) links are rewritten, one index per distinct target; everything else stays as written', async (t) => {
  const html =
    '<p>Hi <a href="https://shop.test/a?x=1&amp;y=2">A</a>, <A HREF=\'http://shop.test/b\' class=x>B</A>, ' +
    '<a href=https://shop.test/a?x=1&y=2>A again</a> <a href="mailto:x@y.test">mail</a> <a href="#top">top</a> ' +
    '<a href="/relative">rel</a> <a href="">empty</a> <a href="   ">blank</a> <a name="anchor">none</a> ' +
    '<a href="javascript:alert(1)">js</a> <a href="tel:+123">tel</a> <a href="ftp://f.test/x">ftp</a></p>';
  const out = rewriteHtml(html, { click });
  t.same(out.links, ['https://shop.test/a?x=1&y=2', 'http://shop.test/b'], 'targets decoded (&amp;) and deduplicated');
  t.equal(
    out.html,
    '<p>Hi <a href="https://t.test/t/c/TOKEN0">A</a>, <A HREF=\'https://t.test/t/c/TOKEN1\' class=x>B</A>, ' +
      '<a href="https://t.test/t/c/TOKEN0">A again</a> <a href="mailto:x@y.test">mail</a> <a href="#top">top</a> ' +
      '<a href="/relative">rel</a> <a href="">empty</a> <a href="   ">blank</a> <a name="anchor">none</a> ' +
      '<a href="javascript:alert(1)">js</a> <a href="tel:+123">tel</a> <a href="ftp://f.test/x">ftp</a></p>',
  );
  t.equal(out.pixel, false);
});

t.test('clicktracking="off" (any quoting, any case) keeps the link as it is', async (t) => {
  const html = '<a clicktracking="off" href="https://a.test/">1</a><a href="https://b.test/" ClickTracking=OFF>2</a>' +
    '<a href="https://c.test/" clicktracking=\'on\'>3</a>';
  const out = rewriteHtml(html, { click });
  t.same(out.links, ['https://c.test/']);
  t.match(out.html, /^<a clicktracking="off" href="https:\/\/a\.test\/">1<\/a><a href="https:\/\/b\.test\/" ClickTracking=OFF>2<\/a>/);
});

t.test('links inside comments, scripts, styles, textareas and titles are not links', async (t) => {
  const html = '<title><a href="https://t1.test/">x</a></title><!-- <a href="https://c.test/">x</a> -->' +
    '<script>var s = \'<a href="https://s.test/">\';</script><style>a[href="https://st.test/"]{}</style>' +
    '<textarea><a href="https://ta.test/"></a></textarea><a href="https://real.test/">real</a>';
  const out = rewriteHtml(html, { click });
  t.same(out.links, ['https://real.test/']);
  t.equal(out.html, html.replace('https://real.test/', 'https://t.test/t/c/TOKEN0'));
});

t.test('a repeated href: the first counts (HTML parsing); a tag cut off at the end of the document is left alone', async (t) => {
  const out = rewriteHtml('<a href="https://first.test/" href="https://second.test/">x</a><a href="https://cut.test/"', { click });
  t.same(out.links, ['https://first.test/']);
  t.match(out.html, /href="https:\/\/t\.test\/t\/c\/TOKEN0" href="https:\/\/second\.test\/"/);
  t.match(out.html, /<a href="https:\/\/cut\.test\/"$/);
});

t.test('the unsubscribe link is skipped; links beyond maxLinks stay as they are', async (t) => {
  const html = '<a href="https://u.test/unsubscribe/abc">unsub</a><a href="https://1.test/">1</a><a href="https://2.test/">2</a><a href="https://1.test/">1</a>';
  const out = rewriteHtml(html, { click: { ...click, maxLinks: 1, skip: (u) => u === 'https://u.test/unsubscribe/abc' } });
  t.same(out.links, ['https://1.test/']);
  t.equal(out.html, '<a href="https://u.test/unsubscribe/abc">unsub</a><a href="https://t.test/t/c/TOKEN0">1</a><a href="https://2.test/">2</a><a href="https://t.test/t/c/TOKEN0">1</a>');
});

t.test('the pixel goes before the last </body>, else </html>, else at the end; a </body> in a comment does not count', async (t) => {
  const img = (u: string) => `<img src="${u}" width="1" height="1" alt="" border="0" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">`;
  const px = 'https://t.test/t/o/P';
  t.equal(rewriteHtml('<html><body><p>x</p><!-- </body> --></BODY></html>', { pixel: px }).html, `<html><body><p>x</p><!-- </body> -->${img(px)}</BODY></html>`);
  t.equal(rewriteHtml('<html><p>x</p></html>', { pixel: px }).html, `<html><p>x</p>${img(px)}</html>`);
  t.equal(rewriteHtml('<p>x</p>', { pixel: px }).html, `<p>x</p>${img(px)}`);
  const both = rewriteHtml('<body><a href="https://a.test/">a</a></body>', { click, pixel: px });
  t.equal(both.html, `<body><a href="https://t.test/t/c/TOKEN0">a</a>${img(px)}</body>`);
  t.equal(both.pixel, true);
});

t.test('trackableUrl: absolute http(s) only, entities decoded, white space trimmed, normalised as a browser would', async (t) => {
  t.equal(trackableUrl(' https://Shop.Test/a b?q=1&#38;r=2 '), 'https://shop.test/a%20b?q=1&r=2');
  t.equal(trackableUrl('HTTP://x.test'), 'http://x.test/');
  t.equal(trackableUrl('https://'), undefined);
  t.equal(trackableUrl('//x.test/a'), undefined);
  t.equal(trackableUrl('{{url}}'), undefined);
  t.equal(trackableUrl('https://x.test/&copy;'), 'https://x.test/&copy;', 'a name that is not one of the five stays literal');
});
